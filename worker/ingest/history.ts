import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { bloomOf } from "../../src/store/history/bloom";
import { bloomItems, type HistoryEvent, type HistoryMeta, objectKey, shardOf, slotOf } from "../../src/store/history/layout";
import { timelineId } from "./rows";

/**
 * The R2 side of ingest: every accepted event of a batch, as gzip NDJSON, one object per (10-minute slot, shard)
 * the batch touches (src/store/history/layout.ts owns the keys). Keys hash the objects' events, so a redelivered
 * batch overwrites its own objects instead of adding copies; the readers also dedupe by event, for a redelivery
 * that comes back split differently.
 */

/** What one write cost R2: objects put (Class A operations) and bytes, compressed and not. */
export type HistoryWriteResult = { events: number; objects: number; bytes: number; rawBytes: number; keys: string[] };

/** The record an event is stored as: the envelope flattened the way the console reads it. */
export function historyEvent(e: TelemetryEvent, receivedAt: number): HistoryEvent {
  const c = e.corr;
  return {
    id: e.id,
    time: e.time,
    type: e.type,
    v: e.v,
    seq: e.seq ?? null,
    agentClass: e.source.agentClass,
    agentName: e.source.agentName,
    fiberId: c.fiberId ?? null,
    incidentId: c.incidentId ?? null,
    requestId: c.requestId ?? null,
    opId: c.opId ?? null,
    sessionName: c.sessionName ?? null,
    taskId: c.taskId ?? null,
    timelineId: timelineId(e),
    traceId: c.traceId ?? null,
    spanId: c.spanId ?? null,
    payload: e.payload,
    receivedAt,
  };
}

/** gzip through the runtime's CompressionStream. */
export async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function contentHash(records: HistoryEvent[]): Promise<string> {
  const text = records.map((r) => JSON.stringify([r.agentClass, r.agentName, r.id])).join("\n");
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest.slice(0, 10)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const order = (a: HistoryEvent, b: HistoryEvent) =>
  a.agentClass < b.agentClass
    ? -1
    : a.agentClass > b.agentClass
      ? 1
      : a.agentName < b.agentName
        ? -1
        : a.agentName > b.agentName
          ? 1
          : a.time - b.time || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Writes a batch's accepted events to R2: at most one put per (slot, shard) among them, all at once. Throws when
 * any put fails, so the consumer retries the batch (its redelivery rewrites the same keys).
 */
export async function writeHistory(
  bucket: R2Bucket,
  events: readonly TelemetryEvent[],
  opts: { shards: number; receivedAt: number },
): Promise<HistoryWriteResult> {
  const groups = new Map<string, { shard: number; byEvent: Map<string, HistoryEvent> }>();
  for (const e of events) {
    const r = historyEvent(e, opts.receivedAt);
    const shard = shardOf(r, opts.shards);
    const group = `${slotOf(r.time)}/${shard}`;
    const g = groups.get(group) ?? { shard, byEvent: new Map() };
    groups.set(group, g);
    // The same event twice in one batch (a resend packed beside the original) is stored once, as D1 stores it.
    const k = JSON.stringify([r.agentClass, r.agentName, r.id]);
    if (!g.byEvent.has(k)) g.byEvent.set(k, r);
  }
  const out: HistoryWriteResult = { events: 0, objects: 0, bytes: 0, rawBytes: 0, keys: [] };
  await Promise.all(
    [...groups.values()].map(async (g) => {
      const records = [...g.byEvent.values()].sort(order);
      const text = `${records.map((r) => JSON.stringify(r)).join("\n")}\n`;
      const body = await gzip(text);
      const times = records.map((r) => r.time);
      const minTime = Math.min(...times);
      const key = objectKey(minTime, opts.shards, g.shard, await contentHash(records));
      const meta: HistoryMeta = {
        v: "1",
        events: String(records.length),
        minTime: String(minTime),
        maxTime: String(Math.max(...times)),
        agents: String(new Set(records.map((r) => `${r.agentClass}\u0000${r.agentName}`)).size),
        bloom: bloomOf(records.flatMap(bloomItems)),
      };
      await bucket.put(key, body, { customMetadata: meta, httpMetadata: { contentType: "application/x-ndjson" } });
      out.events += records.length;
      out.objects += 1;
      out.bytes += body.byteLength;
      out.rawBytes += new TextEncoder().encode(text).byteLength;
      out.keys.push(key);
    }),
  );
  out.keys.sort();
  return out;
}
