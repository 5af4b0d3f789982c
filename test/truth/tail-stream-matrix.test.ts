import { tailMatrix } from "./tail-rows";

/**
 * The main truth matrix on the streaming tail (`streaming_tail_consumers`, worker/tail-stream.ts): every invocation
 * streamed through the real handler with one flush per message (test/stream-tail.ts).
 */
tailMatrix("streaming");
