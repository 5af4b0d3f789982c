import { z } from "zod";

/**
 * The R2 history's settings from the console's environment (wrangler.jsonc vars; worker/env.ts documents each).
 * An invalid value never stops ingest: the writer and readers keep the default shard count, retention of the
 * history deletes nothing, and the reason is logged once per isolate in words that name the setting.
 */

export type HistoryEnv = { HISTORY_SHARDS?: string; HISTORY_PREVIOUS_SHARDS?: string; HISTORY_RETENTION_DAYS?: string };

export type HistoryConfig = {
  /** Shards one hour is split into (the writer's count). */
  shards: number;
  /** Shard counts older hours were written under, which agent reads also look at. */
  previousShards: number[];
  /** Days of history kept; null when the setting is invalid (then retention deletes nothing). */
  retentionDays: number | null;
  /** What is wrong with the settings, if anything. */
  problems: string[];
};

export const DEFAULT_HISTORY_SHARDS = 4;
export const DEFAULT_HISTORY_RETENTION_DAYS = 400;
export const MAX_HISTORY_SHARDS = 256;

const unset = (v: unknown) => (v === undefined || v === null || (typeof v === "string" && !v.trim()) ? undefined : v);
const whole = (name: string, min: number, max: number) => {
  const msg = `${name} must be a whole number from ${min} to ${max}`;
  return z
    .string({ error: msg })
    .trim()
    .regex(/^\d+$/, { error: msg })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { error: msg });
};

const shards = z.preprocess(unset, whole("HISTORY_SHARDS", 1, MAX_HISTORY_SHARDS).default(DEFAULT_HISTORY_SHARDS));
const retention = z.preprocess(unset, whole("HISTORY_RETENTION_DAYS", 1, 36_500).default(DEFAULT_HISTORY_RETENTION_DAYS));
const previous = z.preprocess(
  unset,
  z
    .string()
    .transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(whole("each of HISTORY_PREVIOUS_SHARDS", 1, MAX_HISTORY_SHARDS)).max(4, { error: "HISTORY_PREVIOUS_SHARDS may name at most 4 earlier shard counts" }))
    .default([]),
);

const logged = new Set<string>();

/** The history settings. Never throws; each problem is logged once per isolate. */
export function historyConfig(env: HistoryEnv): HistoryConfig {
  const problems: string[] = [];
  const take = <T>(r: z.ZodSafeParseResult<T>, fallback: T): T => {
    if (r.success) return r.data;
    problems.push(...r.error.issues.map((i) => i.message));
    return fallback;
  };
  const count = take(shards.safeParse(env.HISTORY_SHARDS), DEFAULT_HISTORY_SHARDS);
  const earlier = take(previous.safeParse(env.HISTORY_PREVIOUS_SHARDS), []);
  const days = take<number | null>(retention.safeParse(env.HISTORY_RETENTION_DAYS), null);
  for (const p of problems) {
    if (logged.has(p)) continue;
    logged.add(p);
    console.error(`[history] ${p}; ${p.startsWith("HISTORY_RETENTION_DAYS") ? "history retention deletes nothing until it is fixed" : "using the default"}`);
  }
  return { shards: count, previousShards: [...new Set(earlier)].filter((n) => n !== count), retentionDays: days, problems };
}
