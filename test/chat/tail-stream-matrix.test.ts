import { chatTailMatrix } from "./tail-rows";

/**
 * The chat rows of the truth matrix on the streaming tail (`streaming_tail_consumers`, worker/tail-stream.ts): each
 * step's invocation streamed through the real handler with one flush per message (test/stream-tail.ts).
 */
chatTailMatrix("streaming");
