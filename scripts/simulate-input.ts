// The fleet simulator's settings, read on the node side: the command line, the mix file, and the facts of the
// console's wrangler.jsonc the simulator needs (the telemetry consumer's batching, the cron schedules). The
// workerd side (bench/sim/simulate.ts) validates them again with zod.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type CapturePath, parseCaptureFlag } from "../bench/sim/mix.ts";
import { fromRoot, type WranglerConfig } from "./wrangler-config.ts";

export const DEFAULT_MIX = "bench/mixes/demo.json";

export type SimArgs = {
  agents: number;
  seconds: number;
  rate?: number;
  mix: unknown;
  mixFile: string;
  seed: number;
  saturation: boolean;
  /** The capture path to ship by, over the mix's own; absent: the mix's. */
  capture?: CapturePath;
  /** Also compare a store of one D1 database with one of this many (src/store/partitions.ts); 1: no comparison. */
  partitions: number;
};

/** The part of a wrangler config the simulator reads. */
export function simWranglerFacts(config: WranglerConfig): { consumers: unknown[]; crons: string[] } {
  const queues = (config.queues ?? {}) as { consumers?: unknown[] };
  const triggers = (config.triggers ?? {}) as { crons?: string[] };
  return { consumers: queues.consumers ?? [], crons: triggers.crons ?? [] };
}

/** Reads a mix file (a path from the repo root), or says in one sentence why it cannot. */
export function readMix(file: string): unknown {
  try {
    return JSON.parse(readFileSync(fromRoot(file), "utf8"));
  } catch (e) {
    throw new Error(`cannot read the mix file ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

const positive = (name: string, raw: string | undefined, fallback?: number): number | undefined => {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got "${raw}")`);
  return n;
};

const wholeIn = (name: string, raw: string | undefined, min: number, max: number): number => {
  if (raw === undefined) return min;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  return n;
};

/** `--agents N --minutes M [--seconds S] [--mix file] [--capture tail|streaming|outbox] [--rate events/agent/min] [--seed n] [--saturation] [--partitions N]`. */
export function parseSimArgs(argv: string[]): SimArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      agents: { type: "string" },
      minutes: { type: "string" },
      seconds: { type: "string" },
      mix: { type: "string" },
      rate: { type: "string" },
      seed: { type: "string" },
      saturation: { type: "boolean" },
      partitions: { type: "string" },
      capture: { type: "string" },
    },
    strict: true,
  });
  const agents = positive("agents", values.agents, 1_000)!;
  if (!Number.isInteger(agents)) throw new Error(`--agents must be a whole number (got ${agents})`);
  const seconds = values.seconds !== undefined ? positive("seconds", values.seconds)! : positive("minutes", values.minutes, 1)! * 60;
  const mixFile = values.mix ?? DEFAULT_MIX;
  const capture = parseCaptureFlag(values.capture);
  return {
    agents,
    seconds,
    rate: positive("rate", values.rate),
    mix: readMix(mixFile),
    mixFile,
    seed: Math.trunc(positive("seed", values.seed, 1)!),
    saturation: values.saturation ?? false,
    partitions: wholeIn("partitions", values.partitions, 1, 8),
    ...(capture ? { capture } : {}),
  };
}
