import { type InvocationMemory, invocationMemory, type TailItem } from "@agent-oncall/telemetry/tail";
import { consoleConfig } from "./config";
import type { Env } from "./env";
import { DEFAULT_STREAM_FLUSH_MS, STREAM_FLUSH_MAX } from "./stream-flush";
import { handleTail, type TailResult } from "./tail";

/** One entry of a streamed invocation, as a classic trace item carries it. */
type Entry = { timestamp: number; channel: string; message: unknown };

/** What one streamed invocation did, for the log line, the bench and the tests. */
export type StreamTally = { flushes: number; entries: number; sent: number; losses: number; sendFailed: number; dropped: number };

/** The part of the onset a trace item is made of: nothing of the request (URL, headers) is kept. */
function itemOf(onset: TailStream.TailEvent<TailStream.Onset>): Omit<TailItem, "diagnosticsChannelEvents" | "truncated"> {
  const o = onset.event;
  return {
    scriptName: o.scriptName ?? null,
    durableObjectId: o.durableObjectId,
    // The invocation's start, as a classic item's eventTimestamp: part of each event's id (tailEventId).
    eventTimestamp: onset.timestamp.getTime(),
    entrypoint: o.entrypoint,
    // Only an alarm's scheduled time is read (silent wakes); any other trigger is left out unread.
    event: o.info.type === "alarm" ? { scheduledTime: o.info.scheduledTime } : undefined,
  };
}

/**
 * The console as a streaming Tail Worker (`"streaming_tail_consumers": [{ "service": "<this console>" }]` in the
 * agents' Worker): the runtime calls this at each invocation's start and streams its events while it runs, so an
 * event reaches the Queue at most the flush (STREAM_FLUSH_SECONDS, worker/config.ts) after the agent published it, not when its invocation ends (a long
 * runFiber's start no longer waits for its end, and what was published before a SIGKILL is not lost with it).
 *
 * Each flush is a trace item of the same invocation, read by the classic path's own code (worker/tail.ts,
 * src/telemetry/tail.ts) with the invocation's memory carried across flushes: the same messages become the same
 * events with the same ids, so an agent tailed both ways is stored once. Flushed the configured time after the first message it holds (streamFlushMs), at
 * STREAM_FLUSH_MAX entries, and at the invocation's outcome; events the runtime dropped (its per-invocation
 * limit) make the last flush a truncated item, a dead letter with its reason.
 */
export function streamTail(
  onset: TailStream.TailEvent<TailStream.Onset>,
  env: Env,
  ctx: ExecutionContext,
  report: (t: StreamTally) => void = (t) => logTally(t, streamSettings(env).debug),
): TailStream.TailEventHandlerObject {
  const item = itemOf(onset);
  const { flushMs } = streamSettings(env);
  const memory: InvocationMemory = invocationMemory();
  const tally: StreamTally = { flushes: 0, entries: 0, sent: 0, losses: 0, sendFailed: 0, dropped: 0 };
  let pending: Entry[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Flushes run one after another: the memory is read in publish order.
  let chain: Promise<void> = Promise.resolve();

  const flush = (final: boolean): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const entries = pending;
    pending = [];
    if (!entries.length && !final) return chain;
    chain = chain.then(async () => {
      // The last flush is sent even when empty: it alone can say "nothing was published" (a silent alarm) or "cut short".
      const flushed: TailItem = { ...item, diagnosticsChannelEvents: entries, truncated: final && tally.dropped > 0, stream: { memory, final } };
      try {
        add(tally, await handleTail([flushed], env));
      } catch (e) {
        // Written nowhere (the store refused too): said in the log, the only place left.
        console.error(`[tail-stream] a flush of ${entries.length} entries failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      tally.flushes++;
      tally.entries += entries.length;
      if (final) report(tally);
    });
    return chain;
  };

  return {
    diagnosticChannel(e) {
      pending.push({ timestamp: e.timestamp.getTime(), channel: e.event.channel, message: e.event.message });
      if (pending.length >= STREAM_FLUSH_MAX) return flush(false);
      if (timer === undefined)
        timer = setTimeout(() => {
          const p = flush(false);
          try {
            ctx.waitUntil(p);
          } catch {
            // The stream's outcome awaits the same chain.
          }
        }, flushMs);
    },
    streamDiagEvent(e) {
      if (e.event.diagnostic.diagnosticsType === "droppedEvents") tally.dropped += e.event.diagnostic.count;
    },
    outcome() {
      return flush(true);
    },
  };
}

/**
 * The stream's settings (STREAM_FLUSH_SECONDS, TAIL_STREAM_DEBUG); the defaults when the configuration is refused:
 * that is refused where events are handled (each flush's handleTail says so), not here.
 */
function streamSettings(env: Env): { flushMs: number; debug: boolean } {
  try {
    const c = consoleConfig(env);
    return { flushMs: c.capture.streamFlushMs, debug: c.debug.tailStreams };
  } catch {
    return { flushMs: DEFAULT_STREAM_FLUSH_MS, debug: false };
  }
}

function add(t: StreamTally, r: TailResult): void {
  t.sent += r.sent;
  t.losses += r.losses;
  t.sendFailed += r.sendFailed;
}

/**
 * A warning when something was lost or kept aside; else, only with TAIL_STREAM_DEBUG on and for a stream that
 * carried messages, a debug line: the flushes per event it shows are what the simulator's streaming model is
 * measured from (test/e2e/tail-stream). Off by default: one line per agent invocation is noise in production.
 */
function logTally(t: StreamTally, debug: boolean): void {
  if (t.losses || t.sendFailed || t.dropped)
    console.warn(
      `[tail-stream] ${t.sent} events sent in ${t.flushes} flushes; ${t.losses} losses, ${t.dropped} events the runtime dropped and ${t.sendFailed} unsent events kept as dead letters`,
    );
  else if (debug && t.entries) console.debug(`[tail-stream] ${t.entries} entries, ${t.sent} events sent in ${t.flushes} flushes`);
}
