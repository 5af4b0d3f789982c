import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { consoleConfig } from "../../worker/config";
import type { Env } from "../../worker/env";
import worker from "../../worker/index";
import { STREAM_FLUSH_MAX } from "../../worker/stream-flush";
import { Fleet, type Picks, ratePerFifth, type SimMessage } from "./fleet";
import type { Floor } from "./floor";
import { type D1Meter, meteredEnv, newD1Meter, type R2Meter } from "./metered";
import type { CapturePath, Mix } from "./mix";

/**
 * Drives the real Queue consumer (the Worker's `queue` handler, with a real MessageBatch) in real time: the fleet's
 * agents send their flushes at their scheduled times; a consumer takes batches as Cloudflare Queues delivers them
 * (up to max_batch_size messages, or fewer once the oldest has waited max_batch_timeout) one batch at a time, as
 * one D1 writer serialises them anyway. Lag is measured per event, from its scheduled time to the end of the
 * handler call that stored it, and split at the message's (first) send: what the capture path costs, and the console.
 *
 * The fleet is generated lazily, slice by slice, only as far as the consumer has reached: a consumer that falls
 * behind does not make the simulator hold the whole backlog in memory, and the stream is the same either way
 * (generation does not depend on the wall clock).
 */

/** The telemetry consumer's settings, as wrangler.jsonc declares them. */
export type QueueSettings = { queue: string; maxBatchSize: number; maxBatchTimeoutMs: number };

export type LoadOptions = {
  mix: Mix;
  agents: number;
  ratePerAgentPerMinute: number;
  seconds: number;
  seed: number;
  /** Agent names start with it (runs in one store keep their agents apart). */
  namePrefix: string;
  /** The capture path the fleet ships by (default: the mix's). */
  capture?: CapturePath;
  queue: QueueSettings;
  env: Env;
  /** Stop draining the backlog after this long past the end of production (the rest is counted as abandoned). */
  maxDrainMs?: number;
  /** The consumer a batch is handed to (default: the Worker's own `queue` handler), with the metered env. */
  consume?: (batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext) => Promise<void>;
  /** Told how far the run is, every `progressMs` (long runs say they are alive). */
  progress?: (line: string) => void;
  progressMs?: number;
};

export type LoadResult = {
  events: number;
  messages: number;
  messageBytes: number;
  stored: number;
  abandoned: number;
  batches: number;
  retried: number;
  /** Events stored before production ended, and events whose message was sent by then (a trace item left after the end is not). */
  storedDuringProduction: number;
  sentDuringProduction: number;
  /** Wall time from start to the last batch stored. */
  wallMs: number;
  /** Time spent inside the queue handler. */
  busyMs: number;
  /** Time spent generating the fleet's events. */
  genMs: number;
  /** Lag per stored event, in ms, sorted. */
  lags: Float64Array;
  /**
   * The same lag in its two parts, each sorted: publish -> sent to the Queue (the capture path: a tail item is
   * delivered when its invocation ends, by the mix's model; an outbox flush), and sent -> stored row (the
   * console's part: Queue batching, redelivery and ingest). Per event the two add up to its lag.
   */
  lagToSend: Float64Array;
  lagToStore: Float64Array;
  /** Lag p99 of events scheduled in the first and the last fifth of production: growth means saturation. */
  lagP99Early: number;
  lagP99Late: number;
  d1: D1Meter;
  r2: R2Meter;
  buckets: string[];
  picks: Picks;
  /** The floor of D1 rows written per event for what was sent (floor.ts). */
  floor: Floor;
  capture: CapturePath;
  /** Tail path: trace items (agent invocations) that carried events; 0 on the outbox path. */
  items: number;
  /** How long before the run the fleet's lives began (its warm-up: the run starts with lives under way). */
  warmupMs: number;
  /** Events/s the fleet offered in each fifth of the run (by when they happened), and stored in each (by when stored). */
  offeredPerFifth: number[];
  storedPerFifth: number[];
  /** Events stored after production ended (the drain). */
  storedAfter: number;
};

const SLICE_MS = 500;

export const percentile = (sorted: Float64Array, p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]! : Number.NaN;

/** Runs `seconds` of the fleet through the real consumer and returns what it measured. */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const d1 = newD1Meter();
  const r2: R2Meter = { classA: 0, classB: 0, bytesPut: 0 };
  const { env, buckets } = meteredEnv(o.env, d1, r2);
  const t0 = Date.now();
  const end = t0 + o.seconds * 1000;
  const fleet = new Fleet(o.mix, {
    agents: o.agents,
    ratePerAgentPerMinute: o.ratePerAgentPerMinute,
    t0,
    seed: o.seed,
    namePrefix: o.namePrefix,
    ...(o.capture ? { capture: o.capture } : {}),
    streamFlush: { flushMs: consoleConfig(o.env).capture.streamFlushMs, flushMax: STREAM_FLUSH_MAX },
  });
  let queue: SimMessage[] = [];
  let head = 0;
  let generatedUntil = t0;
  let genMs = 0;
  let busyMs = 0;
  let batches = 0;
  let retried = 0;
  let stored = 0;
  let storedDuringProduction = 0;
  let sentDuringProduction = 0;
  let lastStoredAt = t0;
  let ids = 0;
  const lags: number[] = [];
  const toSend: number[] = [];
  const toStore: number[] = [];
  const early: number[] = [];
  const late: number[] = [];
  const fifth = (end - t0) / 5;
  const storedIn = [0, 0, 0, 0, 0];
  let storedAfter = 0;
  const retries: SimMessage[] = [];
  let nextProgress = t0 + (o.progressMs ?? 30_000);

  const ready = (now: number) => {
    let n = 0;
    for (let i = head; i < queue.length && n < o.queue.maxBatchSize && queue[i]!.sendAt <= now; i++) n++;
    return n;
  };
  for (;;) {
    const now = Date.now();
    // Generate only as far as the consumer needs: a full batch ready, or everything sent by now.
    while (generatedUntil < Math.min(now, end) && ready(now) < o.queue.maxBatchSize) {
      const until = Math.min(generatedUntil + SLICE_MS, end);
      const g = performance.now();
      if (head > 50_000) {
        queue = queue.slice(head);
        head = 0;
      }
      const sent = fleet.advance(until);
      for (const m of sent) if (m.sendAt <= end) sentDuringProduction += m.eventTimes.length;
      queue.push(...sent);
      // The last slice: what happened before the end still leaves, when its message would have.
      if (until >= end) queue.push(...fleet.finish(end).sort((a, b) => a.sendAt - b.sendAt));
      genMs += performance.now() - g;
      generatedUntil = until;
    }
    if (retries.length) {
      // Redelivered messages go back in send order (their retry time).
      queue = [...queue.slice(head), ...retries.splice(0)].sort((a, b) => a.sendAt - b.sendAt);
      head = 0;
    }
    const n = ready(now);
    const done = generatedUntil >= end && head >= queue.length;
    if (done) break;
    if (o.maxDrainMs !== undefined && now > end + o.maxDrainMs) break;
    const oldest = queue[head];
    if (!n || (n < o.queue.maxBatchSize && oldest && now - oldest.sendAt < o.queue.maxBatchTimeoutMs && now < end)) {
      const wake = oldest ? Math.min(oldest.sendAt + o.queue.maxBatchTimeoutMs, generatedUntil + SLICE_MS) : generatedUntil + SLICE_MS;
      await scheduler.wait(Math.max(1, Math.min(50, wake - now)));
      continue;
    }
    const msgs = queue.slice(head, head + n);
    head += n;
    const batch = createMessageBatch(
      o.queue.queue,
      msgs.map((m) => ({ id: `sim-${ids++}`, timestamp: new Date(m.sendAt), body: m.body, attempts: 1 })),
    );
    const ctx = createExecutionContext();
    const s = Date.now();
    await (o.consume ?? worker.queue!)(batch as MessageBatch<unknown>, env, ctx);
    const result = await getQueueResult(batch, ctx);
    const at = Date.now();
    busyMs += at - s;
    batches++;
    // What the Queue would redeliver: an explicit retry, or the whole batch on a retryAll or a thrown handler.
    const again = new Set(result.retryMessages.map((m) => m.msgId));
    const all = result.outcome !== "ok" || result.retryBatch.retry;
    msgs.forEach((m, i) => {
      const id = `sim-${ids - n + i}`;
      if (again.has(id) || (all && !result.ackAll && !result.explicitAcks.includes(id))) {
        retried++;
        retries.push({ ...m, sendAt: at + 1_000, deliveredAt: m.deliveredAt ?? m.sendAt });
        return;
      }
      const sent = m.deliveredAt ?? m.sendAt;
      for (const t of m.eventTimes) {
        const lag = at - t;
        lags.push(lag);
        toSend.push(sent - t);
        toStore.push(at - sent);
        if (t < t0 + fifth) early.push(lag);
        else if (t >= end - fifth) late.push(lag);
      }
      stored += m.eventTimes.length;
      const k = Math.floor((at - t0) / fifth);
      if (k < 5) storedIn[k]! += m.eventTimes.length;
      else storedAfter += m.eventTimes.length;
      if (at <= end) storedDuringProduction += m.eventTimes.length;
    });
    lastStoredAt = at;
    if (o.progress && at >= nextProgress) {
      nextProgress = at + (o.progressMs ?? 30_000);
      const oldest = queue[head];
      o.progress(
        `progress at ${((at - t0) / 1000).toFixed(0)} s: ${stored} events stored of ${fleet.events} generated so far, ` +
          `${at < end ? "sending" : "draining"}, oldest waiting message sent ${oldest ? ((at - oldest.sendAt) / 1000).toFixed(1) : "0"} s ago`,
      );
    }
  }
  const sorted = Float64Array.from(lags).sort();
  const p99 = (xs: number[]) => percentile(Float64Array.from(xs).sort(), 0.99);
  return {
    events: fleet.events,
    floor: fleet.floor.result(),
    messages: fleet.messages,
    messageBytes: fleet.bytes,
    stored,
    abandoned: fleet.events - stored,
    batches,
    retried,
    storedDuringProduction,
    sentDuringProduction,
    wallMs: lastStoredAt - t0,
    busyMs,
    genMs,
    lags: sorted,
    lagToSend: Float64Array.from(toSend).sort(),
    lagToStore: Float64Array.from(toStore).sort(),
    lagP99Early: p99(early),
    lagP99Late: p99(late),
    d1,
    r2,
    buckets,
    picks: fleet.picks,
    capture: fleet.capture,
    items: fleet.items,
    warmupMs: fleet.warmupMs,
    offeredPerFifth: ratePerFifth(fleet.emittedBySecond, o.seconds),
    storedPerFifth: storedIn.map((n) => n / (fifth / 1000)),
    storedAfter,
  };
}
