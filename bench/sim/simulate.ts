import { createExecutionContext } from "cloudflare:test";
import { z } from "zod";
import { detailHref } from "../../console/links";
import { retentionRunCap, runRetention } from "../../src/store/retention";
import { PACE_DELETES_FROM, WALKED_TABLES } from "../../src/store/retention-pace";
import { app } from "../../worker/app";
import { consoleConfig } from "../../worker/config";
import type { Env } from "../../worker/env";
import { STREAM_FLUSH_MAX } from "../../worker/stream-flush";
import { CRONS, QUEUES } from "../../worker/topology";
import { type AwakeCost, awakePerAgentHour, measureAwake } from "./awake";
import { dropBacklog, dueRows, type Keep, seedBacklog } from "./backlog";
import { type CostPerMillion, costPerMillionEvents, monthlyBill, type PerEvent, projectionRefusal } from "./cost";
import { cronRunsPerDay } from "./cron";
import { type LoadResult, percentile, type QueueSettings, runLoad } from "./driver";
import { fleetAgent, runNamePrefix, typeShares } from "./fleet";
import { type Floor, INDEX_ENTRIES } from "./floor";
import { seedKnownAgents } from "./known-agents";
import { type D1Meter, meteredDb, type StatementCost } from "./metered";
import { captureSchema, isTailPath, type Mix, parseMix, tailFigures, withCapture } from "./mix";
import { LIMITS, PRICES } from "./prices";
import { rowWeights } from "./row-weights";
import { CLOSING_TABLES, HOT_TABLES, largestHotWindow, type OpenRows, openAtEnd, steadyBytes, type TableGrowth, tableBytes } from "./steady-size";
import { dbBytes, tableRows, totalRows } from "./store";

/**
 * One simulation, end to end, printing one line per figure (`SIM …`, or `BENCH sim …` inside `npm run bench`):
 * the load through the real consumer, then what it left in D1, the console pages at that size, retention on
 * that store, and a monthly bill. Every figure comes from the run; targets are issue 16's.
 */

/** What the node side (scripts/simulate.ts, the vitest configs) hands the test, as one JSON binding. */
export const simInputSchema = z.object({
  agents: z.number().int().min(1).max(100_000),
  seconds: z.number().positive().max(3_600),
  rate: z.number().positive().max(100_000).optional(),
  mix: z.unknown(),
  mixFile: z.string(),
  seed: z.number().int(),
  saturation: z.boolean(),
  /** The capture path to ship by, over the mix's own (`--capture`). */
  capture: captureSchema.optional(),
  /** Compare one D1 database with this many store partitions (bench/sim/partitions.ts); 1: no comparison. */
  partitions: z.number().int().min(1).max(8).default(1),
  /** wrangler.jsonc's `queues.consumers` and `triggers.crons`: the consumer's batching and the retention cron are read from there. */
  wrangler: z.object({
    consumers: z.array(z.object({ queue: z.string(), max_batch_size: z.number().optional(), max_batch_timeout: z.number().optional() }).loose()),
    crons: z.array(z.string()),
  }),
});
export type SimInput = z.infer<typeof simInputSchema>;

/** The backlog of due rows seeded per paced table before a run: this many times the events the run will send, at most BACKLOG_CAP. */
const BACKLOG_FACTOR = 4;
const BACKLOG_CAP = 200_000;

/** Silent wakes and alarm firings measured per run (bench/sim/awake.ts). */
const AWAKE_SAMPLES = 120;

/** Issue 16's targets, and issue 35's for the store (rows written all in, and the cost per million events with its next mark). */
export const TARGETS = {
  rowsWrittenPerEvent: 1,
  deletionVsIngest: 10,
  lagP99Ms: 10_000,
  pageRowsRead: 60,
  allInRowsPerEvent: 1,
  costPerMillion: 2,
  costPerMillionNext: 1,
} as const;

const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");
const usd = (n: number) => `$${fmt(n, n < 100 ? 2 : 0)}`;
const met = (ok: boolean) => (ok ? "met" : "MISSED");

/** The telemetry consumer's batching, as wrangler.jsonc declares it (Queues' defaults where it says nothing: 10 messages, 5 s). */
export function queueSettings(input: SimInput): QueueSettings {
  const c = input.wrangler.consumers.find((x) => x.queue === QUEUES.telemetry.name);
  if (!c) throw new Error(`wrangler.jsonc has no consumer for ${QUEUES.telemetry.name}`);
  return { queue: QUEUES.telemetry.name, maxBatchSize: c.max_batch_size ?? 10, maxBatchTimeoutMs: (c.max_batch_timeout ?? 5) * 1000 };
}

export type SimReport = {
  load: LoadResult;
  per: PerEvent;
  /** Paced retention's due rows deleted during the run against the rows the fleet added (slowest table with backlog left). */
  deletionVsIngest: number;
  /** Due rows paced retention deleted during the run (of the seeded backlog), and backlog rows seeded. */
  pacedDeleted: number;
  backlogSeeded: number;
  costPerMillion: number;
  cost: CostPerMillion;
  lagP99: number;
  /** The lag's two parts (driver.ts lagToSend, lagToStore), p50 and p99 each, in ms. */
  lagSplit: LagSplit;
  mix: Mix;
  /** Whether the run was too short to project from (cost.ts projectionRefusal). */
  short: boolean;
  awake: AwakeCost;
  /** What the mix's awake shares add, per event of its lives: D1 rows written and USD per million. */
  awakeAdds: { silentWakes: { rows: number; usd: number }; alarmFirings: { rows: number; usd: number } };
};

/** The whole simulation; `print` gets each line (SIM … or BENCH sim …). */
export async function simulate(
  env: Env,
  input: SimInput,
  opts: {
    print: (line: string) => void;
    pages: boolean;
    targets: boolean;
    progress?: boolean;
    /** A recorded run's figure as "; before: …" (bench/recorded.ts), or "" (none given); and recording this run's. */
    figures?: { before: (key: string, unit: string, digits?: number) => string; record: (key: string, value: number) => void };
  },
): Promise<SimReport> {
  const say = opts.print;
  const mix: Mix = withCapture(parseMix(input.mix, input.mixFile), input.capture);
  const rate = input.rate ?? mix.eventsPerAgentPerMinute;
  const queue = queueSettings(input);
  const shares = typeShares(mix);
  say(
    `mix ${mix.name} (${input.mixFile}): ${fmt(rate)} events/agent/min; shares ${Object.entries(shares)
      .slice(0, 8)
      .map(([t, s]) => `${t} ${(s * 100).toFixed(1)}%`)
      .join(", ")}, other ${(
      (1 -
        Object.values(shares)
          .slice(0, 8)
          .reduce((a, b) => a + b, 0)) *
        100
    ).toFixed(1)}%`,
  );

  // The fleet's agents, known to the registry as a running fleet has them, before anything is measured.
  const namePrefix = runNamePrefix(input.seed, mix.capture);
  const fleetAgents = Array.from({ length: input.agents }, (_, i) => fleetAgent(mix, i, namePrefix));
  const known = await seedKnownAgents(env, fleetAgents, queue.queue);
  say(
    `agents: ${fmt(known)} known before the run (seeded through the real consumer, unmetered, each last heard from at a random point of its 5-minute step, as a steady fleet has them): ` +
      `the run pays no first sighting, and moves about (run seconds / 300) of the agents' rows, as a steady fleet does`,
  );
  const rowsBefore = await tableRows(env.DB);
  const openBefore = await openAtEnd(env.DB);
  const sizeBefore = await dbBytes(env.DB);
  const bytesBefore = await tableBytes(env.DB);
  // A backlog of due rows, so paced retention has something to delete while the fleet runs (bench/sim/backlog.ts).
  const cfg = consoleConfig(env).retention;
  const keep: Keep = { hotWindowHours: cfg.hotWindowHours, retentionDays: cfg.days };
  const expected = Math.round((input.agents * rate * input.seconds) / 60);
  const backlogPerTable = Math.min(BACKLOG_FACTOR * expected, BACKLOG_CAP);
  const seeded = await seedBacklog(env.DB, fleetAgents, backlogPerTable, keep);
  const dueBefore = await dueRows(env.DB, keep);
  // The file grew by the backlog's pages; pacing frees them during the run and the fleet's rows may reuse them.
  const sizeSeeded = await dbBytes(env.DB);
  const started = new Date().toISOString();
  const load = await runLoad({
    mix,
    agents: input.agents,
    ratePerAgentPerMinute: rate,
    seconds: input.seconds,
    seed: input.seed,
    namePrefix,
    capture: mix.capture,
    queue,
    env,
    ...(opts.progress ? { progress: say } : {}),
  });
  const dueAfter = await dueRows(env.DB, keep);
  // What is left of the backlog goes, so the store's rows and bytes below are the fleet's own.
  const backlogLeft = await dropBacklog(env.DB);
  const rowsAfter = await tableRows(env.DB);
  const sizeAfter = await dbBytes(env.DB);
  const bytesAfter = await tableBytes(env.DB);
  const openAfter = await openAtEnd(env.DB);
  const ev = load.stored || 1;
  // What the fleet stores per agent-minute: the mix's rate less the checkpoints that coalesce per flush. Sizes and
  // bills scale per-stored-event figures by it (by the offered rate they would count events that never ship).
  const storedRate = (ev * 60) / (input.agents * input.seconds);
  const lagP50 = percentile(load.lags, 0.5);
  const lagP99 = percentile(load.lags, 0.99);
  const offered = (input.agents * rate) / 60;
  // A run too short to project from prints its per-event figures with a warning, and no monthly bill.
  const refusal = projectionRefusal(input.seconds, load.batches);
  const short = refusal !== null;
  if (refusal) say(`WARNING: this run is ${refusal}: the per-event figures below are this run's alone, and no monthly bill is printed`);
  const path =
    mix.capture === "tail"
      ? `capture tail: one message per trace item with events (${fmt(load.items)} items), unnumbered, tail-style ids; ${fmt(mix.tail.invocationsPerEvent, 2)} tail invocations per event (the mix's, measured: docs/capture.md)`
      : mix.capture === "streaming" && mix.streaming
        ? `capture streaming: each event at the stream handler ${fmt(mix.streaming.deliveryMs)} ms after its publish, one message per flush (the console's: ${fmt(consoleConfig(env).capture.streamFlushMs)} ms after the first held (STREAM_FLUSH_SECONDS), at ${fmt(STREAM_FLUSH_MAX)} events, or at the invocation's end: ${fmt(load.items)} flushes), tail-style ids; ${fmt(mix.streaming.invocationsPerEvent, 2)} streams per event (the mix's, measured: docs/capture.md)`
        : `capture outbox: numbered, one message per agent per ${fmt(mix.outbox.flushDelayMs / 1000, 1)} s flush, checkpoints coalesced; ${fmt(mix.outbox.agentRowsPerEvent, 2)} Durable Object rows per event on the agent (the mix's: docs/scale.md)`;
  say(
    `load: ${fmt(input.agents)} agents x ${fmt(input.seconds)} s at ${fmt(rate)} events/agent/min (offered ${fmt(offered)} events/s), started ${started}; ${path}: ` +
      `${fmt(load.events)} events in ${fmt(load.messages)} messages (${fmt(load.events / Math.max(1, load.messages), 2)} events/message, ${fmt(load.messageBytes / Math.max(1, load.messages))} bytes/message), ` +
      `${fmt(load.batches)} batches of <= ${queue.maxBatchSize} (timeout ${queue.maxBatchTimeoutMs / 1000} s), ${fmt(load.retried)} retried, ${fmt(load.abandoned)} not stored; ` +
      `${fmt(load.messages / input.seconds)} messages/s sent (one queue takes ${fmt(LIMITS.queueMessagesPerSecond)}/s: ${load.messages / input.seconds > LIMITS.queueMessagesPerSecond ? "OVER" : "within"})`,
  );
  const rates = (xs: number[]) => xs.map((x) => fmt(x)).join(" / ");
  say(
    `steady state: lives began ${fmt(load.warmupMs / 1000, 1)} s before the run (the longest life), so it starts with lives under way; events/s per fifth of the run, ` +
      `offered (by when they happened) ${rates(load.offeredPerFifth)} against the mix's ${fmt(offered)}; stored (by when stored) ${rates(load.storedPerFifth)}, then ${fmt(load.storedAfter)} events drained after the end`,
  );
  say(
    `throughput: sustained ${fmt(load.stored / (load.wallMs / 1000))} events/s (stored / wall time to the last batch, ${fmt(load.wallMs / 1000, 1)} s); ` +
      `consumer busy ${fmt(load.busyMs / 1000, 1)} s = ${fmt(load.stored / (load.busyMs / 1000))} events/s while busy; ` +
      `stored during production ${fmt((load.storedDuringProduction / Math.max(1, load.sentDuringProduction)) * 100, 1)}% of what was sent by its end; generator ${fmt(load.genMs / 1000, 1)} s of the same CPU`,
  );
  say(
    `queue lag (scheduled -> stored): p50 ${fmt(lagP50 / 1000, 2)} s, p99 ${fmt(lagP99 / 1000, 2)} s, max ${fmt(percentile(load.lags, 1) / 1000, 2)} s; p99 of the first fifth ${fmt(load.lagP99Early / 1000, 2)} s vs the last fifth ${fmt(load.lagP99Late / 1000, 2)} s` +
      (opts.targets ? ` (target p99 <= ${TARGETS.lagP99Ms / 1000} s: ${met(lagP99 <= TARGETS.lagP99Ms)})` : ""),
  );
  const lagSplit = splitLag(load);
  say(lagSplitLine(lagSplit, mix));
  const rowsAdded = totalRows(rowsAfter) - totalRows(rowsBefore);
  // Paced retention's statements run inside the consumer: told apart, since during this run they delete the backlog.
  const pacing = pacingCost(load, [...new Set([...Object.keys(dueBefore), ...PACE_DELETES_FROM])]);
  const ingestWritten = (load.d1.rowsWritten - pacing.written) / ev;
  // listed_at (last activity to the minute) is rewritten when the minute changes: a short run pays it once or not at all.
  const startMs = Date.parse(started);
  const minutesCrossed = Math.floor((startMs + input.seconds * 1000) / 60_000) - Math.floor(startMs / 60_000);
  say(
    `d1 rows: ${fmt(ingestWritten, 2)} written/event by ingest, ${fmt((load.d1.rowsRead - pacing.read) / ev, 2)} read/event; paced retention's ${fmt(pacing.written / ev, 2)} written, ${fmt(pacing.read / ev, 2)} read/event on top, deleting the backlog ` +
      `(meta, summed over ${fmt(load.d1.statements)} statements in ${fmt(load.d1.roundTrips)} round trips)` +
      (opts.targets ? ` (target written <= ${TARGETS.rowsWrittenPerEvent}: ${met(ingestWritten <= TARGETS.rowsWrittenPerEvent)}, ingest's)` : "") +
      `; this run crossed ${minutesCrossed} minute boundar${minutesCrossed === 1 ? "y" : "ies"}, where each open run's and live session's listed_at (last activity to the minute) is rewritten once (an agent's moves once per 5-minute step of its last activity): ` +
      `a run shorter than a minute pays that in full or not at all, a steady fleet once a minute` +
      `; store rows added ${fmt(rowsAdded)} = ${fmt(rowsAdded / ev, 2)}/event: ${Object.entries(rowsAfter)
        .filter(([t, n]) => n !== rowsBefore[t])
        .map(([t, n]) => `${t} +${fmt(n - (rowsBefore[t] ?? 0))}`)
        .join(", ")}`,
  );
  if (load.d1.byKind) say(costByKind(load.d1.byKind, ev));
  // The fleet's bytes, once the backlog is gone: an upper bound, since pages its deletes left part-empty still count.
  const bytesPerEvent = (sizeAfter.bytes - sizeBefore.bytes) / ev;
  const backlogBytes = Math.max(0, sizeSeeded.bytes - sizeBefore.bytes);
  const keptDays = cfg.days;
  const grown = growth(rowsBefore, rowsAfter, bytesBefore, bytesAfter, bytesAfter ? null : await rowWeights(env.DB), bytesPerEvent, ev, openBefore, openAfter);
  const run = { events: ev, seconds: input.seconds, agents: input.agents };
  const backupExpiryHours = openAfter.backupExpiryHours;
  const steadyGb = (agents: number) =>
    Object.values(
      steadyBytes(grown.tables, run, { agents, rate: storedRate, hotHours: keep.hotWindowHours, retentionDays: keep.retentionDays, backupExpiryHours }),
    ).reduce((a, b) => a + b, 0) / 1e9;
  say(steadySizeLine(grown, run, storedRate, keep, bytesPerEvent, backlogBytes, sizeBefore, sizeAfter, backupExpiryHours));
  if (load.buckets.length)
    say(
      `r2 (${load.buckets.join(", ")}): ${fmt(load.r2.classA / ev, 4)} class A/event, ${fmt(load.r2.classB / ev, 4)} class B/event, ${fmt(load.r2.bytesPut / ev, 1)} bytes put/event`,
    );
  else say("r2: no R2 bucket bound to the console: no history tier to measure (0 ops, 0 bytes)");

  if (opts.pages) await pages(env, load, say);

  const added = Object.fromEntries(Object.keys(rowsAfter).map((t) => [t, rowsAfter[t]! - (rowsBefore[t] ?? 0)]));
  const paced = pacedRetention(cfg.pace, load, added, seeded, dueBefore, dueAfter, backlogLeft, lagP99, say, opts.targets, opts.figures);
  const ret = await retention(env, load, added, storedRate, input, say, opts.targets);
  // Every row the fleet adds is deleted once, by the paced slices (what a deleted row cost them) or else the cron.
  const rowsAddedPerEvent = Object.values(added).reduce((a, b) => a + Math.max(0, b), 0) / ev;
  const deleteWritten = paced.deleted ? paced.written / paced.deleted : ret.writtenPerDeleted;
  const deleteRead = paced.deleted ? paced.read / paced.deleted : ret.readPerDeleted;
  const queueOps = load.messages ? (sumUnits(load) * PRICES.queues.opsPerDelivery) / load.events : 0;
  // Keeping agents awake, through the real tail handler and consumer.
  const awake = await measureAwake(env, fleetAgents, AWAKE_SAMPLES, queue);
  const tail = isTailPath(mix.capture);
  const tf = tailFigures(mix);
  const per: PerEvent = {
    // The run's own writes without the backlog's deletes, plus one deletion per row it added.
    d1RowsWritten: (load.d1.rowsWritten - paced.written) / ev + deleteWritten * rowsAddedPerEvent,
    d1RowsRead: (load.d1.rowsRead - paced.read) / ev + deleteRead * rowsAddedPerEvent,
    d1Bytes: bytesPerEvent,
    queueOps,
    r2ClassA: load.r2.classA / ev,
    r2ClassB: load.r2.classB / ev,
    r2Bytes: load.r2.bytesPut / ev,
    tailInvocations: tf.invocationsPerEvent,
    tailCpuMs: tf.invocationsPerEvent * tf.cpuMsPerInvocation,
    agentRowsWritten: tail ? 0 : mix.outbox.agentRowsPerEvent,
  };
  const cost = costPerMillionEvents(per, keep.hotWindowHours);
  const cpm = cost.total;
  say(
    `cost per million events: ${usd(cpm)} = D1 rows ${usd(cost.d1)} (${fmt(per.d1RowsWritten, 2)} written incl. retention's deletes, ${fmt(per.d1RowsRead, 1)} read) + D1 storage ${usd(cost.d1Storage)} (${fmt(per.d1Bytes)} bytes for the ${keep.hotWindowHours} h hot window, not a month) + ` +
      `Queues ${usd(cost.queues)} (${fmt(queueOps, 3)} ops) + R2 ${usd(cost.r2)} (${fmt(per.r2ClassA, 4)} A + ${fmt(per.r2ClassB, 4)} B, ${fmt(per.r2Bytes)} bytes for a month) + ` +
      `tail invocations ${usd(cost.tail)} (${fmt(per.tailInvocations, 2)} Workers requests and ${fmt(per.tailCpuMs, 2)} CPU ms per event: the mix's figures, the CPU stated, not measured) + ` +
      `the agent side ${usd(cost.agentSide)} (${tail ? "tail: 0 Durable Object rows, 0 bytes" : `outbox: ${fmt(per.agentRowsWritten, 2)} Durable Object rows written at DO SQLite's price`}); ` +
      `left out: the Queue consumer's and the console's own Workers requests and CPU (per batch and per page, not per event), and the plan's $${PRICES.workers.baseFeePerMonth}/month base fee (in the monthly lines); at list prices read ${PRICES.readOn} (bench/sim/prices.ts)`,
  );
  say(storeTargetsLine(per, cpm, load.floor, opts.targets));
  const awakeAdds = awakeLines(mix, awake, storedRate, say);
  if (refusal) say(`monthly cost: not projected: this run is ${refusal}`);
  else
    for (const agents of [1_000, 10_000]) {
      const b = monthlyBill(per, agents, storedRate, keptDays, steadyGb(agents));
      const awakeUsd = ((awakeAdds.silentWakes.usd + awakeAdds.alarmFirings.usd) * b.events) / 1e6;
      say(
        `monthly cost, ${fmt(agents)} agents at ${fmt(rate)} events/agent/min offered, ${fmt(storedRate, 1)} stored (${fmt(b.events / 1e9, 2)} B events/month): ${usd(b.total)} = ` +
          `D1 rows written ${usd(b.d1Written)} + rows read ${usd(b.d1Read)} + storage ${usd(b.d1Storage)} (${fmt(b.d1StorageGb)} GB at steady state${b.d1StorageGb > 10 ? `: over D1's 10 GB cap, ${Math.ceil(b.d1StorageGb / 10)} databases` : ""}) + ` +
          `Queues ${usd(b.queues)} + R2 ${usd(b.r2)} + tail invocations ${usd(b.tail)} + the agent side ${usd(b.agentSide)} + Workers Paid base fee ${usd(b.baseFee)}; ` +
          `keeping agents awake (the mix's shares, below the lives) adds about ${usd(awakeUsd)} more at marginal prices`,
      );
    }
  return {
    load,
    per,
    deletionVsIngest: paced.vsIngest,
    pacedDeleted: paced.deleted,
    backlogSeeded: Object.values(seeded).reduce((a, b) => a + b, 0),
    costPerMillion: cpm,
    cost,
    lagP99,
    lagSplit,
    mix,
    short,
    awake,
    awakeAdds,
  };
}

/** The lag's two parts, p50 and p99 each (ms): publish -> sent to the Queue, and sent -> stored row. */
export type LagSplit = { toSendP50: number; toSendP99: number; toStoreP50: number; toStoreP99: number };

export const splitLag = (load: LoadResult): LagSplit => ({
  toSendP50: percentile(load.lagToSend, 0.5),
  toSendP99: percentile(load.lagToSend, 0.99),
  toStoreP50: percentile(load.lagToStore, 0.5),
  toStoreP99: percentile(load.lagToStore, 0.99),
});

/**
 * The lag split at the message's send, so the figure says what the console controls: the first part is the capture
 * path's (the platform's: a classic tail delivers an item when its invocation ends, here by the mix's model of how
 * long an invocation runs), the second the console's (Queue batching and ingest). Percentiles of parts do not add up
 * to the total's.
 */
function lagSplitLine(s: LagSplit, mix: Mix): string {
  const s2 = (ms: number) => `${fmt(ms / 1000, 2)} s`;
  const first =
    mix.capture === "tail"
      ? "publish -> tail delivery (the platform's capture path, by the mix's model: a classic tail item leaves when its invocation ends)"
      : mix.capture === "streaming"
        ? "publish -> stream flush sent (the streaming tail: delivered while the invocation runs, held until the handler's flush)"
        : `publish -> outbox flush sent (the agent side: its ${fmt(mix.outbox.flushDelayMs / 1000, 1)} s flush)`;
  return (
    `lag split: ${first} p50 ${s2(s.toSendP50)}, p99 ${s2(s.toSendP99)}; ` +
    `${mix.capture === "tail" ? "tail delivery" : mix.capture === "streaming" ? "flush sent" : "sent"} -> stored row (the console's part: Queue batching, redelivery and ingest) p50 ${s2(s.toStoreP50)}, p99 ${s2(s.toStoreP99)}; ` +
    `per event the two parts add up to the lag above, their percentiles need not`
  );
}

/**
 * The two costs of keeping agents awake that a mix's lives leave out, as separate lines: silent wakes (keepAlive
 * heartbeats) and alarm loop firings, each measured per unit (bench/sim/awake.ts) and scaled by the mix's shares, per
 * event of the mix's lives (what the per-event figures above divide by) and per million of them.
 */
function awakeLines(mix: Mix, awake: AwakeCost, storedRate: number, say: (l: string) => void) {
  const perHour = awakePerAgentHour(mix);
  const eventsPerAgentHour = storedRate * 60;
  const unitUsd = (u: AwakeCost["silentWake"]) =>
    u.d1RowsWritten * PRICES.d1.rowsWrittenPerMillion +
    u.d1RowsRead * PRICES.d1.rowsReadPerMillion +
    u.queueMessages * PRICES.queues.opsPerDelivery * PRICES.queues.opsPerMillion +
    PRICES.workers.requestsPerMillion +
    mix.tail.cpuMsPerInvocation * PRICES.workers.cpuMsPerMillion;
  const one = (what: string, u: AwakeCost["silentWake"], perAgentHour: number, share: number, every: number, rowsNote: string) => {
    const rows = (perAgentHour * u.d1RowsWritten) / eventsPerAgentHour;
    const usdPerMillion = (perAgentHour * unitUsd(u)) / eventsPerAgentHour;
    say(
      `awake, ${what} (not in the mix's lives): ${fmt(u.d1RowsWritten, 2)} D1 rows written and ${fmt(u.queueMessages, 2)} Queue messages per unit, 1 tail invocation (${fmt(mix.tail.cpuMsPerInvocation, 1)} CPU ms, stated) ` +
        `(measured: ${fmt(u.count)} through the real tail handler and consumer; ${rowsNote}); every ${fmt(every)} s for ${fmt(share * 100, 1)}% of agents (the mix's awake.source) = ${fmt(perAgentHour, 2)} per agent-hour: ` +
        `+${fmt(rows, 3)} D1 rows per event of the lives, +${usd(usdPerMillion)} per million events`,
    );
    return { rows, usd: usdPerMillion };
  };
  return {
    silentWakes: one(
      "silent wakes (keepAlive heartbeats: an alarm that published nothing)",
      awake.silentWake,
      perHour.wakes,
      mix.awake.keepAliveShare,
      mix.awake.keepAliveHeartbeatSeconds,
      "one silent_wakes row and its index entries each",
    ),
    alarmFirings: one(
      "alarm loop firings (schedule:execute)",
      awake.alarmFiring,
      perHour.firings,
      mix.awake.alarmLoopShare,
      mix.awake.alarmLoopSeconds,
      "an event, stored like any, that also moves its agent's row",
    ),
  };
}

/**
 * Issue 35's store targets in one line: D1 rows written per event with retention's deletes and index entries, beside
 * the floor a store writing only state changes would reach on this mix (floor.ts), and the cost per million events.
 */
function storeTargetsLine(per: PerEvent, cpm: number, floor: Floor, targets: boolean): string {
  const by = Object.entries(floor.byChange)
    .filter(([, v]) => v >= 0.005)
    .map(([k, v]) => `${k} ${fmt(v, 2)}`)
    .join(", ");
  return (
    `store: D1 rows written per event, retention's deletes and index entries included, ${fmt(per.d1RowsWritten, 2)}` +
    (targets ? ` (target <= ${fmt(TARGETS.allInRowsPerEvent, 1)}: ${met(per.d1RowsWritten <= TARGETS.allInRowsPerEvent)})` : "") +
    `; the floor for this mix ${fmt(floor.perEvent, 2)} (one write per state change a person needs, ${INDEX_ENTRIES} index entry each: ${by || "none"}); ` +
    `cost per million events ${usd(cpm)}` +
    (targets
      ? ` (target <= ${usd(TARGETS.costPerMillion)}: ${met(cpm <= TARGETS.costPerMillion)}; next mark ${usd(TARGETS.costPerMillionNext)}: ${met(cpm <= TARGETS.costPerMillionNext)})`
      : "") +
    ` (all in: D1, Queues, R2, tail invocations, the agent side; keeping agents awake on its own lines)`
  );
}

/**
 * Where the consumer's D1 rows went: per table, then per statement kind (metered.ts statementKind), each as rows
 * written and read per stored event, biggest writers first; kinds under 0.01 written per event are summed as "rest".
 */
export function costByKind(byKind: Map<string, StatementCost>, events: number): string {
  const tableOf = (kind: string) => kind.split(" ")[1] ?? kind;
  const tables = new Map<string, StatementCost>();
  for (const [k, c] of byKind) {
    const t = tables.get(tableOf(k)) ?? { rowsWritten: 0, rowsRead: 0, statements: 0, changes: 0 };
    t.changes += c.changes;
    t.rowsWritten += c.rowsWritten;
    t.rowsRead += c.rowsRead;
    t.statements += c.statements;
    tables.set(tableOf(k), t);
  }
  const sorted = (m: Map<string, StatementCost>) => [...m].sort((a, b) => b[1].rowsWritten - a[1].rowsWritten || b[1].rowsRead - a[1].rowsRead);
  const one = ([k, c]: [string, StatementCost]) =>
    `${k} ${fmt(c.rowsWritten / events, 2)}w/${fmt(c.rowsRead / events, 1)}r (${fmt(c.statements)} stmts, ${fmt(c.changes)} rows changed)`;
  const kinds = sorted(byKind);
  const big = kinds.filter(([, c]) => c.rowsWritten / events >= 0.01);
  const rest = kinds.filter(([, c]) => c.rowsWritten / events < 0.01);
  const restCost = rest.reduce(
    (a, [, c]) => ({
      rowsWritten: a.rowsWritten + c.rowsWritten,
      rowsRead: a.rowsRead + c.rowsRead,
      statements: a.statements + c.statements,
      changes: a.changes + c.changes,
    }),
    { rowsWritten: 0, rowsRead: 0, statements: 0, changes: 0 },
  );
  return (
    `d1 rows per event by table, written w / read r: ${sorted(tables).map(one).join(", ")}; ` +
    `by statement: ${[...big.map(one), ...(rest.length ? [one([`rest (${rest.length} kinds)`, restCost])] : [])].join(", ")}`
  );
}

function sumUnits(load: LoadResult): number {
  // Messages are far below 64 KB here (packs cap at 60 KB): one billed unit per message.
  return load.messages * Math.max(1, Math.ceil(load.messageBytes / load.messages / PRICES.queues.opBytes));
}

/** Rows read by the console's pages on this store, through the real app on a metered D1. */
async function pages(env: Env, load: LoadResult, say: (l: string) => void): Promise<void> {
  const p = load.picks;
  const paths = ["/", "/incidents", "/runs", "/sessions", "/ops", "/audit", "/backups"];
  // Opened as the console links them: with their agent (an ended run is read from R2 under its agent).
  if (p.incident) paths.push(detailHref("incidents", p.incident.id, p.incident));
  if (p.fiber) paths.push(detailHref("runs", p.fiber.id, p.fiber));
  if (p.session) paths.push(detailHref("sessions", p.session.id, p.session));
  const out: string[] = [];
  for (const first of paths) {
    const meter: D1Meter = { rowsWritten: 0, rowsRead: 0, statements: 0, roundTrips: 0 };
    const menv = { ...env, DB: meteredDb(env.DB, meter) };
    let path = first;
    let res: Response;
    // A renamed page redirects (e.g. /fibers -> /runs): follow it, as a browser would.
    for (let hops = 0; ; hops++) {
      res = await app.fetch(new Request(`http://console.localhost${path}`), menv, createExecutionContext());
      await res.text();
      const loc = res.headers.get("location");
      if (res.status < 300 || res.status >= 400 || !loc || hops > 3) break;
      path = new URL(loc, "http://console.localhost").pathname + new URL(loc, "http://console.localhost").search;
    }
    const over = path !== "/" && meter.rowsRead > TARGETS.pageRowsRead;
    out.push(`${path.length > 48 ? `${path.slice(0, 45)}...` : path} ${res.status} ${fmt(meter.rowsRead)}${over ? "!" : ""}`);
  }
  say(`console pages at this size, rows read (! = over the ${TARGETS.pageRowsRead}-row target; the overview aggregates, no target): ${out.join("; ")}`);
}

/**
 * Retention on the simulated store, as the cron runs it: runRetention with its own per-run caps, dated a
 * retention period after the last event so every row is due, run until done or for 20 s. A table it still
 * deletes from in a later run was capped in the first: its capacity per day is the first run's rows x the
 * cron's runs per day, against the rows the fleet adds to it per day. The slowest table sets the ratio. When no
 * table was capped (a store smaller than one run's caps), the ratio is only a lower bound.
 */
async function retention(env: Env, load: LoadResult, added: Record<string, number>, rate: number, input: SimInput, say: (l: string) => void, targets: boolean) {
  const days = consoleConfig(env).retention.days;
  const cron = input.wrangler.crons.find((c) => c === CRONS.retention);
  const runsPerDay = cron ? cronRunsPerDay(cron) : 0;
  const meter: D1Meter = { rowsWritten: 0, rowsRead: 0, statements: 0, roundTrips: 0 };
  const db = meteredDb(env.DB, meter);
  const now = Date.now() + days * 86_400_000 + 60_000;
  const t0 = Date.now();
  const perRun: Record<string, number>[] = [];
  let complete = false;
  while (!complete && Date.now() - t0 < 20_000) {
    const r = await runRetention(db, { maxAgeDays: days, now });
    perRun.push(r.deleted);
    complete = r.complete;
  }
  const ms = Date.now() - t0;
  const deleted = perRun.reduce((n, d) => n + Object.values(d).reduce((a, b) => a + b, 0), 0);
  const first = perRun[0] ?? {};
  const stored = Math.max(1, load.stored);
  const capped = Object.keys(first).filter((t) => perRun.slice(1).some((d) => (d[t] ?? 0) > 0));
  // A capped table shows its run's capacity by deleting it; an uncapped one was smaller than it: its capacity is the
  // run's stated cap (retentionRunCap), not what there happened to be.
  const perRunCap = (t: string) => (capped.includes(t) ? (first[t] ?? 0) : retentionRunCap(t));
  const addedPerDay = (t: string, agents: number) => ((added[t] ?? 0) / stored) * agents * rate * 1440;
  const ratio = (t: string, agents = input.agents) => (perRunCap(t) * runsPerDay) / addedPerDay(t, agents);
  const considered = Object.keys(first)
    .filter((t) => (added[t] ?? 0) > 0)
    .map((t) => [t, ratio(t)] as const)
    .sort((a, b) => a[1] - b[1]);
  const [slowest, vsIngest] = considered[0] ?? ["none", Number.POSITIVE_INFINITY];
  const at10k = slowest === "none" ? Number.POSITIVE_INFINITY : ratio(slowest, 10_000);
  const bound = "";
  const rowsAdded = Object.values(added).reduce((a, b) => a + Math.max(0, b), 0);
  const rowsPerEvent = rowsAdded / stored;
  const rowsWrittenPerDeleted = meter.rowsWritten / Math.max(1, deleted);
  const rowsReadPerDeleted = meter.rowsRead / Math.max(1, deleted);
  say(
    `retention cron backstop: ${perRun.length} run(s) of runRetention in ${fmt(ms / 1000, 1)} s deleted ${fmt(deleted)} rows (${fmt(deleted / (ms / 1000))} rows/s while running; ${complete ? "all due rows gone" : "more left"}); ` +
      `first run ${fmt(Object.values(first).reduce((a, b) => a + b, 0))} rows, capped tables: ${capped.join(", ") || "none (the store is smaller than one run's caps)"}; ` +
      `cron "${cron ?? "none"}" = ${runsPerDay} runs/day; slowest table ${slowest} (${fmt(perRunCap(slowest))} rows per run): deletes ${bound}${Number.isFinite(vsIngest) ? vsIngest.toPrecision(2) : "unbounded "}x what ${fmt(input.agents)} agents add to it per day` +
      (targets ? ` (target >= ${TARGETS.deletionVsIngest}x: ${met(vsIngest >= TARGETS.deletionVsIngest)})` : "") +
      `, ${Number.isFinite(at10k) ? at10k.toPrecision(2) : "unbounded "}x at 10,000 agents` +
      `; D1 per deleted row: ${fmt(rowsWrittenPerDeleted, 2)} written, ${fmt(rowsReadPerDeleted, 2)} read`,
  );
  return { vsIngest, writtenPerDeleted: rowsWrittenPerDeleted, readPerDeleted: rowsReadPerDeleted, rowsPerEvent };
}

/**
 * What the run added per table (rows, and bytes per row: dbstat, else the store's growth split between the tables by
 * their estimated row weights, row-weights.ts).
 */
function growth(
  rowsBefore: Record<string, number>,
  rowsAfter: Record<string, number>,
  bytesBefore: Record<string, number> | null,
  bytesAfter: Record<string, number> | null,
  weights: Record<string, number> | null,
  bytesPerEvent: number,
  events: number,
  openBefore: OpenRows,
  openAfter: OpenRows,
): { tables: TableGrowth[]; how: string } {
  const added = Object.keys(rowsAfter)
    .map((t) => [t, rowsAfter[t]! - (rowsBefore[t] ?? 0)] as const)
    .filter(([, n]) => n > 0);
  // Without dbstat, the store's growth is split by each table's rows times their estimated weight (an even weight where none).
  const weightOf = (t: string) => weights?.[t] ?? 1;
  const weighted = added.reduce((a, [t, n]) => a + n * weightOf(t), 0);
  const tables = added.map(([table, rows]) => {
    const measured = bytesAfter && bytesBefore ? ((bytesAfter[table] ?? 0) - (bytesBefore[table] ?? 0)) / rows : Number.NaN;
    const bytesPerRow = Number.isFinite(measured) && measured > 0 ? measured : ((bytesPerEvent * events) / weighted) * weightOf(table);
    // The closing tables' rows still open at the end of the run (open incidents, unresolved ops): steady-size.ts.
    if (!CLOSING_TABLES.has(table)) return { table, rows, bytesPerRow };
    return { table, rows, bytesPerRow, open: Math.max(0, (openAfter.open[table] ?? 0) - (openBefore.open[table] ?? 0)) };
  });
  return {
    tables,
    how: bytesAfter ? "dbstat pages per table and its indexes" : "the store's bytes split by each table's estimated row and index bytes (no dbstat)",
  };
}

const openRows = (t: TableGrowth[], table: string) => fmt(t.find((g) => g.table === table)?.open ?? 0);
const allRows = (t: TableGrowth[], table: string) => fmt(t.find((g) => g.table === table)?.rows ?? 0);

/**
 * D1's size at steady state (bench/sim/steady-size.ts): per table by its own keep time, for 1k and 10k agents, and
 * the largest hot window that fits one database's 10 GB.
 */
function steadySizeLine(
  grown: { tables: TableGrowth[]; how: string },
  run: { events: number; seconds: number; agents: number },
  rate: number,
  keep: Keep,
  bytesPerEvent: number,
  backlogBytes: number,
  sizeBefore: { bytes: number; how: string },
  sizeAfter: { bytes: number; how: string },
  backupExpiryHours: number | null,
): string {
  const at = (agents: number) =>
    steadyBytes(grown.tables, run, { agents, rate, hotHours: keep.hotWindowHours, retentionDays: keep.retentionDays, backupExpiryHours });
  const gb = (b: number) => fmt(b / 1e9, b < 1e9 ? 2 : 1);
  const per = (agents: number) => {
    const t = at(agents);
    const total = Object.values(t).reduce((a, b) => a + b, 0);
    const top = Object.entries(t)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([name, b]) => `${name} ${gb(b)}${HOT_TABLES.has(name) ? ` (${keep.hotWindowHours} h)` : ""}`)
      .join(", ");
    const hot = largestHotWindow(grown.tables, run, { agents, rate, retentionDays: keep.retentionDays, backupExpiryHours });
    // Unresolved ops wait for a person (the sim resolves none): the window that fits were they resolved within it.
    const ifResolved = largestHotWindow(grown.tables, run, { agents, rate, retentionDays: keep.retentionDays, backupExpiryHours, opsResolvedHot: true });
    return `${fmt(agents)} agents ${gb(total)} GB (${top}); largest hot window in 10 GB per database ${fmt(hot, hot < 10 ? 1 : 0)} h (${fmt(ifResolved, ifResolved < 10 ? 1 : 0)} h were ambiguous ops resolved within it)`;
  };
  return (
    `d1 size: at most ${fmt(bytesPerEvent)} bytes/event stored (measured after the ${fmt(backlogBytes / 1e6, 1)} MB backlog was deleted: pages its deletes left part-empty still count) ` +
    `(${sizeAfter.how}: ${fmt(sizeBefore.bytes / 1e6, 1)} MB -> ${fmt(sizeAfter.bytes / 1e6, 1)} MB, not vacuumed; per table by ${grown.how}); ` +
    `steady state at ${fmt(rate, 1)} events/agent/min stored, each table by its own keep time (segments, finished runs, closed incidents with their usage rows and resolved ops ${keep.hotWindowHours} h = HOT_WINDOW_HOURS; ` +
    `open incidents as the level open at the run's end (${openRows(grown.tables, "incidents")} of ${allRows(grown.tables, "incidents")}), scaled by agents; unresolved ops (${openRows(grown.tables, "op_ambiguities")} of ${allRows(grown.tables, "op_ambiguities")}: the sim resolves none) ${keep.retentionDays} d; ` +
    `backups ${backupExpiryHours === null ? `${keep.retentionDays} d` : `${fmt(backupExpiryHours, 0)} h to expiry + ${keep.hotWindowHours} h`}; rollups ${keep.retentionDays} d = RETENTION_DAYS; agents and the sim's sessions one per agent): ${[1_000, 10_000].map(per).join("; ")}`
  );
}

/**
 * Paced retention during the run (src/store/retention-pace.ts): per paced table, the rows the fleet added, the due
 * backlog rows deleted meanwhile, and their ratio. Its capacity is per batch (RETENTION_PACE x what the batch added),
 * so it scales with ingest; the ratio is what it did against what came in. Where the backlog ran out the ratio is a
 * lower bound. Also what pacing's statements cost (they are inside the run's D1 figures) and the lag with it on.
 */
function pacedRetention(
  pace: number,
  load: LoadResult,
  added: Record<string, number>,
  seeded: Record<string, number>,
  dueBefore: Record<string, number>,
  dueAfter: Record<string, number>,
  backlogLeft: number,
  lagP99: number,
  say: (l: string) => void,
  targets: boolean,
  figures: { before: (key: string, unit: string, digits?: number) => string; record: (key: string, value: number) => void } | undefined,
) {
  // Every table a slice deletes from (incident_usage goes with its incidents), not only the seeded ones.
  const { written, read } = pacingCost(load, [...new Set([...Object.keys(dueBefore), ...PACE_DELETES_FROM])]);
  const rows = Object.keys(dueBefore).map((t) => {
    const deleted = (dueBefore[t] ?? 0) - (dueAfter[t] ?? 0);
    const a = Math.max(0, added[t] ?? 0);
    return { t, a, deleted, ratio: a ? deleted / a : Number.POSITIVE_INFINITY, cleared: (dueAfter[t] ?? 0) === 0 };
  });
  const deleted = rows.reduce((n, r) => n + r.deleted, 0);
  const judged = rows.filter((r) => r.a > 0 && !r.cleared).sort((x, y) => x.ratio - y.ratio);
  const slowest = judged[0];
  const vsIngest = slowest ? slowest.ratio : Number.POSITIVE_INFINITY;
  const ev = Math.max(1, load.stored);
  say(
    `retention (paced, RETENTION_PACE ${pace}): capacity per batch = ${pace} x the rows the batch added, per table; with a backlog of due rows seeded before the run ` +
      `(${Object.entries(seeded)
        .map(([t, n]) => `${t} ${fmt(n)}`)
        .join(", ")}), during it: ${rows
        .map(
          (r) =>
            `${r.t} +${fmt(r.a)} added / -${fmt(r.deleted)} due deleted = ${Number.isFinite(r.ratio) ? `${r.ratio.toPrecision(3)}x` : "n/a"}${r.cleared ? " (backlog cleared: at least)" : ""}`,
        )
        .join(", ")}; ` +
      `slowest table with backlog left: ${slowest ? `${slowest.t} ${slowest.ratio.toPrecision(3)}x` : "none"}` +
      (targets ? ` (target >= ${TARGETS.deletionVsIngest}x: ${met(vsIngest >= TARGETS.deletionVsIngest)})` : "") +
      `; ${fmt(backlogLeft)} backlog rows left, dropped before the figures below; pacing's statements ${fmt(written / ev, 3)} rows written, ${fmt(read / ev, 2)} read per event stored (of the run's d1 figures above; ` +
      `${fmt(written / Math.max(1, deleted), 2)} written, ${fmt(read / Math.max(1, deleted), 2)} read per row deleted); lag p99 with pacing ${fmt(lagP99 / 1000, 2)} s${figures?.before("sim.lagP99Seconds", "s", 2) ?? ""}`,
  );
  figures?.record("sim.lagP99Seconds", lagP99 / 1000);
  return { vsIngest, written, read, deleted };
}

/** What paced retention's statements cost in the run: deletes from the paced tables and the walks' scans (metered by kind). */
function pacingCost(load: LoadResult, tables: string[]): { written: number; read: number } {
  let written = 0;
  let read = 0;
  for (const [kind, c] of load.d1.byKind ?? []) {
    const [verb, table] = kind.split(" ");
    if (!table || !tables.includes(table)) continue;
    if (verb === "delete" || (verb === "select" && WALKED_TABLES.has(table))) {
      written += c.rowsWritten;
      read += c.rowsRead;
    }
  }
  return { written, read };
}
