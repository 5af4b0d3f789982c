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

/** Deletes every row of every console table (the simulator's figures for the main run are printed by then). */
async function emptyDb(db: D1Database): Promise<void> {
  const { results } = await db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('d1_migrations', 'sqlite_sequence') AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
    )
    .all<{ name: string }>();
  if (results.length) await db.batch(results.map(({ name }) => db.prepare(`DELETE FROM "${name}"`)));
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
  // Each run starts from empty databases, so no run pays for a store the ones before it grew (ingest's cost
  // grows with the store), and the recorded partition count (src/store/partitions.ts) is the run's own.
  for (const db of partitionDbs(env, Math.max(n, input.partitions))) await emptyDb(db);
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

/**
 * Do two local D1 databases run at once? The same CPU-bound query (SQLite counting through a recursive CTE,
 * no I/O) timed alone, then on DB and DB_P1 at once, then twice on DB at once. Parallel databases take about the
 * time of one; databases sharing one thread take about twice.
 */
export async function probeD1Concurrency(env: Env, say: (l: string) => void): Promise<{ alone: number; two: number; same: number }> {
  const [a, b] = partitionDbs(env, 2) as [D1Database, D1Database];
  const q = (db: D1Database) =>
    db.prepare("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c").first();
  const time = async (f: () => Promise<unknown>) => {
    const s = performance.now();
    await f();
    return performance.now() - s;
  };
  await q(a);
  await q(b);
  const best = async (f: () => Promise<unknown>) => Math.min(await time(f), await time(f), await time(f));
  const alone = await best(() => q(a));
  const two = await best(() => Promise.all([q(a), q(b)]));
  const same = await best(() => Promise.all([q(a), q(a)]));
  say(
    `d1 concurrency probe (one CPU-bound query, best of 3): alone ${fmt(alone)} ms; on DB and DB_P1 at once ${fmt(two)} ms (${fmt(two / alone, 2)}x); ` +
      `twice on DB at once ${fmt(same)} ms (${fmt(same / alone, 2)}x): ${two / alone >= 1.8 ? "the two local databases do NOT run in parallel here" : two / alone >= 1.3 ? "the two local databases overlap only partly here" : "the two local databases run in parallel"}; a shared 2-core machine gives two writers at most what its other processes leave`,
  );
  return { alone, two, same };
}

/** Runs the comparison at `eventsPerSecond` offered and prints it; returns sustained events/s for 1 and n. */
export async function comparePartitions(env: Env, input: SimInput, mix: Mix, eventsPerSecond: number, say: (l: string) => void) {
  const n = input.partitions;
  const runs: Run[] = [];
  // Alternated (1, n, 1, n) so a drift in the machine's load (shared, noisy) weighs on both alike; each pair is summed.
  for (const parts of [1, n, 1, n]) {
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
  const of = (k: number) => runs.filter((r) => r.n === k);
  const total = (rs: Run[], f: (r: Run) => number) => rs.reduce((a, r) => a + f(r), 0);
  const sus = (rs: Run[]) => total(rs, (r) => r.load.stored) / (total(rs, (r) => r.load.wallMs) / 1000);
  const busy = (rs: Run[]) => total(rs, (r) => r.load.stored) / (total(rs, (r) => r.load.busyMs) / 1000);
  const d1PerEvent = (rs: Run[]) => total(rs, (r) => r.timing.reduce((a, t) => a + t.ms, 0)) / total(rs, (r) => r.load.stored);
  const [one, many] = [of(1), of(n)];
  say(
    `partitions ratio ${n}:1 (two runs each, summed): sustained ${fmt(sus(one))} -> ${fmt(sus(many))} events/s = ${fmt(sus(many) / sus(one), 2)}x; ` +
      `while busy ${fmt(busy(one))} -> ${fmt(busy(many))} events/s = ${fmt(busy(many) / busy(one), 2)}x; ` +
      `D1 batch time summed over partitions ${fmt(d1PerEvent(one), 3)} -> ${fmt(d1PerEvent(many), 3)} ms per event stored`,
  );
  await probeD1Concurrency(env, say);
  return { one: sus(one), many: sus(many) };
}
