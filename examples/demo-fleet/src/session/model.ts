/** What a session's model sees for one request. */
export type ModelRequest = {
  turnSeq: number;
  /** 1 for the first request of a turn, 2 after a tool result, … */
  step: number;
  /** The session's events up to and including this turn's user message, rebuilt from SQL. */
  history: { kind: string; content: string }[];
  /** Text streamed before an eviction, when this request resumes one. */
  partial: string | null;
  toolResult?: unknown;
};

/** `usage` is what the call cost, in the AI SDK's shape, when the model reports it. */
export type ModelResponse = { text: string; toolCall?: { name: string; args: Record<string, unknown> }; usage?: { inputTokens: number; outputTokens: number } };

/**
 * The model interface a SessionAgent talks to. Implementations stream text
 * through `onChunk`, awaiting it (it persists the chunk: backpressure), and
 * must stop when `signal` aborts.
 */
export interface SessionModel {
  respond(req: ModelRequest, signal: AbortSignal, onChunk: (text: string) => void | Promise<void>): Promise<ModelResponse>;
}

/** A tool a session can call. `idempotent` means the upstream accepts an idempotency key. */
export type SessionTool = {
  idempotent: boolean;
  run(args: Record<string, unknown>, idempotencyKey: string): Promise<unknown>;
};
