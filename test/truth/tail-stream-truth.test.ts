import { tailTruthRows } from "./tail-truth-rows";

/**
 * The plain-agent tail rows (hook drops or resumes, keepAlive only) on the streaming tail: each step's invocation
 * streamed through the real handler with one flush per message (test/stream-tail.ts).
 */
tailTruthRows("streaming");
