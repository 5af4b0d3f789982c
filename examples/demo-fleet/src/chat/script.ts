import { z } from "zod";

/**
 * The script a scripted model follows: one step per model call, in order.
 * Validated on the way in, because scripts also come from the demo driver.
 */

const usage = z.object({ inputTokens: z.number().int().min(0).optional(), outputTokens: z.number().int().min(0).optional() }).strict();
const chunks = z.array(z.string().max(10_000)).max(500);
const delayMs = z.number().int().min(0).max(60_000);

export const scriptStepSchema = z.discriminatedUnion("kind", [
  /** Streams `chunks` and finishes normally. */
  z.object({ kind: z.literal("text"), chunks, delayMs: delayMs.optional(), usage: usage.optional() }).strict(),
  /** Streams `chunks`, then never finishes until the call is aborted (or the isolate dies). */
  z.object({ kind: z.literal("stall"), chunks: chunks.optional(), delayMs: delayMs.optional() }).strict(),
  /** Streams `chunks` (if any), then fails like a provider error with `statusCode`. */
  z
    .object({
      kind: z.literal("fail"),
      message: z.string().min(1).max(2000),
      statusCode: z.number().int().min(100).max(599).optional(),
      chunks: chunks.optional(),
      delayMs: delayMs.optional(),
      /** Whether the AI SDK may retry the call itself (provider retry). Default false. */
      retryable: z.boolean().optional(),
    })
    .strict(),
  /** Rejects the call the way providers reject a prompt over the context window (HTTP 400, "prompt is too long"). */
  z.object({ kind: z.literal("context_overflow"), limit: z.number().int().min(1).optional() }).strict(),
  /** Asks for one tool call; `usage.inputTokens` lets a step report a large prompt. */
  z
    .object({
      kind: z.literal("tool_call"),
      toolName: z.string().min(1).max(200),
      input: z.record(z.string(), z.unknown()),
      usage: usage.optional(),
    })
    .strict(),
]);

export type ScriptStep = z.infer<typeof scriptStepSchema>;

/** Independent queues: the chat turns, and the summariser compaction calls. */
export const SCRIPT_LANES = ["chat", "summary"] as const;
export type ScriptLane = (typeof SCRIPT_LANES)[number];

export const scriptInputSchema = z
  .object({
    lane: z.enum(SCRIPT_LANES).default("chat"),
    steps: z.array(scriptStepSchema).max(200),
    /** Keep the steps still queued and add these after them (default: replace them). */
    append: z.boolean().default(false),
    /** Step used whenever the queue is empty; null clears it. Without one, an empty queue fails the call. */
    fallback: scriptStepSchema.nullable().optional(),
  })
  .strict();

export type ScriptInput = z.input<typeof scriptInputSchema>;

/** Validates a script from a test or the demo driver; throws a readable error on bad input. */
export function parseScriptInput(input: unknown): z.output<typeof scriptInputSchema> {
  const parsed = scriptInputSchema.safeParse(input);
  if (!parsed.success) throw new Error(`invalid script: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
