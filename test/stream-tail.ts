import type { TailItem } from "@agent-oncall/telemetry/tail";
import type { Env } from "../worker/env";
import { type StreamTally, streamTail } from "../worker/tail-stream";

/** Which tail handler a matrix runs the console's side on: `tail_consumers` or `streaming_tail_consumers`. */
export type TailPath = "classic" | "streaming";

/** One diagnostics message of a trace item. */
export type Entry = NonNullable<TailItem["diagnosticsChannelEvents"]>[number];

/** What one invocation played through the streaming handler did: its flushes, and how many of them never arrived. */
export type Played = { flushes: number; lostFlushes: number; tally: StreamTally | null };

/**
 * Plays the invocation a classic trace item describes through the console's streaming handler (worker/tail-stream.ts),
 * as the runtime streams it: an onset built like the runtime's (the Durable Object, its class as the entrypoint, an
 * alarm's scheduled time; locally no script name), each message as a `diagnosticChannel` event, then the outcome.
 *
 * The split is the hardest one, and deterministic: every message leaves in a flush of its own (the last with the
 * outcome), so a run's start and end never share a flush and everything the handler remembers of the invocation
 * (its agent, positions, recovery hooks) must cross flushes. The handler's flush timer is driven here, not waited
 * for: it is caught as the handler arms it and fired at once, each flush awaited before the next message.
 *
 * `lost(entry)`: a flush carrying a message for which it answers true never reaches the console (its Queue send is
 * swallowed, as a send lost with its process): only that flush's messages are lost; the handler still read them, and
 * the invocation goes on.
 */
export async function streamItem(item: TailItem, env: Env, lost: (e: Entry) => boolean = () => false): Promise<Played> {
  const entries = item.diagnosticsChannelEvents ?? [];
  const queue = env.TELEMETRY_QUEUE;
  let dropping = false;
  let lostFlushes = 0;
  const streamEnv = Object.assign(Object.create(env), {
    TELEMETRY_QUEUE: {
      sendBatch: (messages: Iterable<MessageSendRequest<unknown>>) => (dropping ? Promise.resolve() : queue.sendBatch(messages)),
      send: (body: unknown) => (dropping ? Promise.resolve() : queue.send(body)),
    },
  }) as Env;
  const waits: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void waits.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  let tally: StreamTally | null = null;
  let sequence = 0;
  const start = new Date(item.eventTimestamp ?? Date.now());
  const ev = <E extends TailStream.EventType>(event: E, at = new Date()): TailStream.TailEvent<E> => ({
    invocationId: `matrix-${crypto.randomUUID()}`,
    spanContext: { traceId: "matrix" },
    timestamp: at,
    sequence: sequence++,
    event,
  });
  const alarmAt = alarmTime(item);
  const onset = ev<TailStream.Onset>(
    {
      type: "onset",
      spanId: "matrix",
      executionModel: "durableObject",
      ...(item.durableObjectId ? { durableObjectId: item.durableObjectId } : {}),
      ...(item.entrypoint ? { entrypoint: item.entrypoint } : {}),
      info: alarmAt !== null ? { type: "alarm", scheduledTime: new Date(alarmAt) } : { type: "jsrpc" },
    },
    start,
  );
  const h = streamTail(onset, streamEnv, ctx, (t) => {
    tally = t;
  });
  const settle = async () => {
    while (waits.length) await waits.shift();
  };
  for (const [i, e] of entries.entries()) {
    const last = i === entries.length - 1;
    let fire: (() => void) | undefined;
    const realSetTimeout = globalThis.setTimeout;
    // The handler arms its flush timer synchronously inside this call; nothing else runs until it returns.
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      fire = fn;
      return realSetTimeout(() => {}, ms);
    }) as typeof setTimeout;
    let r: unknown;
    try {
      r = h.diagnosticChannel!(
        ev<TailStream.DiagnosticChannelEvent>({ type: "diagnosticChannel", channel: e.channel, message: e.message }, new Date(e.timestamp)),
      );
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    await r;
    if (last) break; // the last message leaves with the outcome
    dropping = lost(e);
    if (dropping) lostFlushes++;
    fire?.();
    await settle();
    dropping = false;
  }
  const final = entries.at(-1);
  dropping = final !== undefined && lost(final);
  if (dropping) lostFlushes++;
  await h.outcome!(ev<TailStream.Outcome>({ type: "outcome", outcome: "ok", cpuTime: 1, wallTime: 1 }));
  await settle();
  dropping = false;
  const done = tally as StreamTally | null;
  // The split this player promises, or the matrix would pass on an easier one than it claims.
  if (done?.flushes !== Math.max(entries.length, 1))
    throw new Error(`streamItem: ${entries.length} messages left in ${done?.flushes ?? "no"} flushes, not one flush each`);
  return { flushes: done?.flushes ?? 0, lostFlushes, tally: done };
}

/** An alarm item's scheduled time (as the classic item carries it in `event.scheduledTime`), else null. */
function alarmTime(item: TailItem): number | null {
  const t = (item.event as { scheduledTime?: unknown } | undefined)?.scheduledTime;
  return typeof t === "number" ? t : t instanceof Date ? t.getTime() : null;
}
