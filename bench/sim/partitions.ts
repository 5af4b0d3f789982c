import type { Store } from "../../src/store/partitions";
import type { Env } from "../../worker/env";
import { handleTelemetryBatch } from "../../worker/ingest/consumer";
import { type LoadResult, percentile, runLoad } from "./driver";
import { type D1Meter, meteredDb } from "./metered";
import type { Mix } from "./mix";
import { queueSettings, type SimInput } from "./simulate";

/**
 * "Past one writer" (issue 16 item 4): the same load through the real telemetry consumer into a store of one D1
 * database, then of `n` (src/store/partitions.ts), offered above what one database keeps up with, so the consumer
 * is the bottleneck. Prints each run's sustained events/s and consumer busy time, the ratio, and the time each
 * partition's D1 batches took (from the Worker's side: the await on db.batch).
 */

const AGENTS = 1_000;
const SECONDS = 15;
const MAX_DRAIN_MS = 20_000;

type Timing = { ms: number; batches: number };

/** A D1Database whose batch() time is added to `t` (the consumer writes each partition in one batch). */
function timedDb(real: D1Database, t: Timing): D1Database {
  return new Proxy(real, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "batch" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
      return async (stmts: D1PreparedStatement[]) => {
        const s = performance.now();
        try {
          return await v.call(target, stmts);
        } finally {
          t.ms += performance.now() - s;
          t.batches++;
        }
      };
    },
  });
}

/** The store's partition databases from the simulator's bindings: DB, DB_P1 … */
function partitionDbs(env: Env, n: number): D1Database[] {
  const all = env as unknown as Record<string, D1Database | undefined>;
  return Array.from({ length: n }, (_, i) => {
    const db = all[i ? `DB_P${i}` : "DB"];
    if (!db) throw new Error(`no D1 binding ${i ? `DB_P${i}` : "DB"}: vitest.sim.config.ts binds DB_P1 … for --partitions`);
    return db;
  });
}

type Run = { n: number; load: LoadResult; timing: Timing[]; meters: D1Meter[] };

async function runWith(env: Env, input: SimInput, mix: Mix, n: number, eventsPerSecond: number, tag: string): Promise<Run> {
  const timing: Timing[] = Array.from({ length: n }, () => ({ ms: 0, batches: 0 }));
  const meters: D1Meter[] = Array.from({ length: n }, () => ({ rowsWritten: 0, rowsRead: 0, statements: 0, roundTrips: 0 }));
  const parts = partitionDbs(env, n).map((db, i) => timedDb(meteredDb(db, meters[i]!), timing[i]!));
  const store: Store = { home: parts[0]!, parts };
  // The same home database serves both runs: it records the partition count (src/store/partitions.ts), and a
  // measurement, unlike a console, may change it (the runs' agents are apart by name prefix, so none is split).
  await partitionDbs(env, 1)[0]!.prepare("DELETE FROM store_settings").run();
  const load = await runLoad({
    mix,
    agents: AGENTS,
    ratePerAgentPerMinute: (eventsPerSecond * 60) / AGENTS,
    seconds: SECONDS,
    seed: input.seed + 100 + n,
    namePrefix: `part${n}-${tag}`,
    queue: queueSettings(input),
    env,
    maxDrainMs: MAX_DRAIN_MS,
    consume: (batch, e) => handleTelemetryBatch(batch, e, store),
  });
  return { n, load, timing, meters };
}

const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");

/** Runs the comparison at `eventsPerSecond` offered and prints it; returns sustained events/s for 1 and n. */
export async function comparePartitions(env: Env, input: SimInput, mix: Mix, eventsPerSecond: number, say: (l: string) => void) {
  const n = input.partitions;
  const runs: Run[] = [];
  for (const parts of [1, n]) {
    const r = await runWith(env, input, mix, parts, eventsPerSecond, String(runs.length));
    runs.push(r);
    const l = r.load;
    const sustained = l.stored / (l.wallMs / 1000);
    say(
      `partitions ${parts}: offered ${fmt(eventsPerSecond)} events/s (${AGENTS} agents x ${SECONDS} s): ${fmt(l.stored)} of ${fmt(l.events)} stored, ` +
        `sustained ${fmt(sustained)} events/s (wall ${fmt(l.wallMs / 1000, 1)} s), stored while sending ${fmt(l.storedDuringProduction / SECONDS)} events/s; ` +
        `consumer busy ${fmt(l.busyMs / 1000, 1)} s = ${fmt(l.stored / (l.busyMs / 1000))} events/s while busy; lag p99 ${fmt(percentile(l.lags, 0.99) / 1000, 2)} s; ` +
        `D1 batch time per partition: ${r.timing.map((t, i) => `p${i} ${fmt(t.ms / 1000, 1)} s in ${fmt(t.batches)} batches (${fmt(t.ms / Math.max(1, t.batches), 1)} ms each, ${fmt(r.meters[i]!.rowsWritten)} rows written)`).join(", ")}`,
    );
  }
  const [one, many] = runs.map((r) => r.load) as [LoadResult, LoadResult];
  const sus = (l: LoadResult) => l.stored / (l.wallMs / 1000);
  const busy = (l: LoadResult) => l.stored / (l.busyMs / 1000);
  const d1Sum = (r: Run) => r.timing.reduce((a, t) => a + t.ms, 0);
  say(
    `partitions ratio ${n}:1: sustained ${fmt(sus(many) / sus(one), 2)}x, events/s while busy ${fmt(busy(many) / busy(one), 2)}x; ` +
      `D1 batch time summed over partitions ${fmt(d1Sum(runs[0]!) / 1000, 1)} s -> ${fmt(d1Sum(runs[1]!) / 1000, 1)} s ` +
      `(wall time awaiting the slowest partition is what the consumer waits; a ratio near 1x with summed D1 time near the busy time means the local databases share one thread)`,
  );
  return { one: sus(one), many: sus(many) };
}
