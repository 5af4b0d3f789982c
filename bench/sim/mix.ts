import { z } from "zod";

/**
 * A fleet's event mix, as a mix file (bench/mixes/*.json) states it: how fast each agent emits, and how often
 * it lives each shape of durable work the console follows. Validated with zod, so a wrong file is a sentence.
 */

/** The shapes of work an agent lives; each becomes one burst of contract events (fleet.ts). */
export const LIFE_SHAPES = [
  "runFiber",
  "managedFiber",
  "task",
  "chatTurn",
  "sessionTurn",
  "fiberRecovery",
  "chatRecovery",
  "chatExhaustion",
  "ambiguousOp",
  "backup",
] as const;
export type LifeShape = (typeof LIFE_SHAPES)[number];

const range = z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]).refine(([a, b]) => a <= b, "a range is [min, max] with min <= max");

/** The capture paths (docs/capture.md): the classic tail, the streaming tail, and the opt-in outbox. */
export const CAPTURE_PATHS = ["tail", "streaming", "outbox"] as const;
export type CapturePath = (typeof CAPTURE_PATHS)[number];
export const captureSchema = z.enum(CAPTURE_PATHS, { error: () => 'capture must be "tail", "streaming" or "outbox"' });
/** Whether a path is a Tail Worker's (the console's tail handler is invoked, the agent writes nothing). */
export const isTailPath = (c: CapturePath): boolean => c !== "outbox";

/**
 * What the tail path costs that the lives do not show. A trace item is one invocation of the agent: the lives say
 * which of their events share one (fleet.ts), and each item with events is one Queue message. Invocations with no
 * event (the Worker's own fetch, the agent lookup, `inspectFiber` polls) still invoke the console's tail handler.
 */
const tailPathSchema = z
  .object({
    /** Tail handler invocations per event kept, items with no message included: measured, with its source. */
    invocationsPerEvent: z.number().min(0).max(100),
    /**
     * CPU milliseconds per tail handler invocation: a stated figure, not measured (workerd's clock stands still while
     * a handler computes, so the simulator cannot time it).
     */
    cpuMsPerInvocation: z.number().min(0).max(1_000),
    /** Where the figures come from, in words. */
    source: z.string().min(1),
  })
  .strict();

/**
 * What the streaming tail path (`streaming_tail_consumers`, worker/tail-stream.ts) implies: each message reaches the
 * console's stream handler `deliveryMs` after it was published, while the invocation runs. The handler's flush is the
 * console's setting, not the mix's: the simulator reads it from the console's configuration (STREAM_FLUSH_SECONDS,
 * worker/config.ts) and STREAM_FLUSH_MAX (worker/tail-stream.ts). One stream is one tail handler invocation, like
 * one classic trace item.
 */
const streamingPathSchema = z
  .object({
    deliveryMs: z.number().int().nonnegative().max(60_000),
    /** Tail handler invocations (streams) per event kept, streams with no message included: measured, with its source. */
    invocationsPerEvent: z.number().min(0).max(100),
    /** CPU milliseconds per stream: stated, not measured (as the classic tail's). */
    cpuMsPerInvocation: z.number().min(0).max(1_000),
    source: z.string().min(1),
  })
  .strict();

/** What the outbox path (the opt-in telemetry mixin) costs: its flush, and the agent's own Durable Object rows. */
const outboxPathSchema = z
  .object({
    /** The agent side's flush delay (events within it share one Queue message). */
    flushDelayMs: z.number().int().nonnegative().max(60_000),
    /** Durable Object SQLite rows the outbox writes on the agent per event (measured, docs/scale.md). */
    agentRowsPerEvent: z.number().min(0).max(100),
    source: z.string().min(1),
  })
  .strict();

/**
 * Alarms that keep agents awake, which the lives above do not send. An agent held by `keepAlive()` is woken by its
 * alarm every `keepAliveHeartbeatSeconds` (the SDK's 30 s): the SDK publishes nothing for it, and the tail handler
 * writes one `silent_wakes` row per such invocation. An alarm loop (`scheduleEvery`) publishes one
 * `schedule:execute` per firing, which moves its agent's row (`alarm_last_at`).
 */
const awakeSchema = z
  .object({
    /** Share of the fleet's agents held awake by keepAlive(). */
    keepAliveShare: z.number().min(0).max(1),
    keepAliveHeartbeatSeconds: z.number().positive().max(86_400),
    /** Share of the fleet's agents running an alarm loop, and its period. */
    alarmLoopShare: z.number().min(0).max(1),
    alarmLoopSeconds: z.number().positive().max(86_400),
    source: z.string().min(1),
  })
  .strict();

export const mixSchema = z
  .object({
    name: z.string().min(1),
    /** Where the figures come from, in words. */
    source: z.string().min(1),
    /** Events per agent per minute, averaged over the fleet. */
    eventsPerAgentPerMinute: z.number().positive().max(100_000),
    /**
     * How the fleet's events reach the console: "tail" (the default capture: the runtime hands each invocation's SDK
     * messages to the console's tail handler, which sends one Queue message per trace item that has events) or
     * "outbox" (the opt-in telemetry mixin: numbered events, one message per agent per flush). `--capture` overrides it.
     */
    capture: captureSchema,
    tail: tailPathSchema,
    /** The streaming tail's figures; a mix without them cannot be simulated with `--capture streaming`. */
    streaming: streamingPathSchema.optional(),
    outbox: outboxPathSchema,
    /** Costs the lives above leave out, for a share of agents (bench/sim/awake.ts): alarms that keep agents awake. */
    awake: awakeSchema,
    /** Agent classes the fleet spreads over (an agent keeps its class). */
    agentClasses: z.array(z.string().min(1).max(200)).min(1),
    /** Relative weights of the life shapes; a missing shape never happens. */
    lives: z
      .partialRecord(z.enum(LIFE_SHAPES), z.number().nonnegative())
      .refine((w) => Object.values(w).some((x) => (x ?? 0) > 0), "at least one life shape needs a weight above 0"),
    /** Stashes per fiber (runFiber, managedFiber, fiberRecovery, sessionTurn). */
    stashes: range,
    /** Paid ops (op.started + op.completed, each with a model.usage) per session turn. */
    opsPerTurn: range,
    /** Model calls (model.usage) per chat turn. */
    modelCallsPerChatTurn: range,
    /** Share of runFiber lives that fail. */
    fiberFailRate: z.number().min(0).max(1),
    /** Characters of a stash's snapshot preview (the agent side caps previews). */
    snapshotChars: range,
  })
  .strict();
export type Mix = z.infer<typeof mixSchema>;

/** The mix with its capture path replaced (`--capture`), or as it is. */
export function withCapture(mix: Mix, capture?: CapturePath): Mix {
  if ((capture ?? mix.capture) === "streaming" && !mix.streaming)
    throw new Error(`mix "${mix.name}" states no "streaming" figures (delivery, invocations per event): it cannot be simulated on the streaming tail`);
  return capture ? { ...mix, capture } : mix;
}

/** The tail handler's invocations and CPU per event on a mix's capture path (0 on the outbox). */
export function tailFigures(mix: Mix): { invocationsPerEvent: number; cpuMsPerInvocation: number } {
  if (mix.capture === "streaming" && mix.streaming) return mix.streaming;
  return mix.capture === "tail" ? mix.tail : { invocationsPerEvent: 0, cpuMsPerInvocation: 0 };
}

/** The command line's `--capture` value (scripts/simulate-input.ts), or why it is refused, in one sentence. */
export function parseCaptureFlag(raw: string | undefined): CapturePath | undefined {
  if (raw === undefined) return undefined;
  const r = captureSchema.safeParse(raw);
  if (!r.success)
    throw new Error(
      `--capture must be "tail" (the classic tail, the default capture, what \`npm start\` uses), "streaming" (the streaming tail) or "outbox" (the opt-in telemetry mixin) (got "${raw}")`,
    );
  return r.data;
}

/** Parses a mix file's JSON; throws one sentence naming what is wrong. */
export function parseMix(json: unknown, file = "mix file"): Mix {
  const r = mixSchema.safeParse(json);
  if (r.success) return r.data;
  throw new Error(`${file}: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`);
}
