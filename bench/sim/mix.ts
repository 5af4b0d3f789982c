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

export const mixSchema = z
  .object({
    name: z.string().min(1),
    /** Where the figures come from, in words. */
    source: z.string().min(1),
    /** Events per agent per minute, averaged over the fleet. */
    eventsPerAgentPerMinute: z.number().positive().max(100_000),
    /** The agent side's flush delay (events within it share one Queue message). */
    flushDelayMs: z.number().int().nonnegative().max(60_000),
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

/** Parses a mix file's JSON; throws one sentence naming what is wrong. */
export function parseMix(json: unknown, file = "mix file"): Mix {
  const r = mixSchema.safeParse(json);
  if (r.success) return r.data;
  throw new Error(`${file}: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`);
}
