import type { QueueLike } from "./outbox.js";

/**
 * Queue messages carry a JSON array of events, not one event each: Queues
 * bill and process per message (per 64 KB), and one message per event would
 * cost the agent a broker round-trip per event. Ingest accepts both shapes.
 */

/** Largest message body we build (Queues allow 128 KB; billing counts 64 KB units). */
export const PACK_BYTES = 60_000;
/** Largest total per sendBatch (Queues allow 256 KB and 100 messages). */
const SEND_BYTES = 240_000;

/**
 * Groups serialised JSON values into JSON-array texts of at most `maxBytes`
 * each (a larger single value gets its own). Used for Queue messages here and
 * for D1 statement parameters in ingest.
 */
export function packBodies(bodies: string[], maxBytes = PACK_BYTES): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let size = 2;
  for (const b of bodies) {
    if (cur.length && size + b.length + 1 > maxBytes) {
      out.push(`[${cur.join(",")}]`);
      cur = [];
      size = 2;
    }
    cur.push(b);
    size += b.length + 1;
  }
  if (cur.length) out.push(`[${cur.join(",")}]`);
  return out;
}

/** Sends serialised events as packed messages, in as few sendBatch calls as the limits allow. */
export async function sendPacked(queue: QueueLike, bodies: string[]): Promise<void> {
  let batch: string[] = [];
  let size = 0;
  for (const m of packBodies(bodies)) {
    if (batch.length && (size + m.length > SEND_BYTES || batch.length === 100)) {
      await queue.sendBatch(batch.map((body) => ({ body, contentType: "text" as const })));
      batch = [];
      size = 0;
    }
    batch.push(m);
    size += m.length;
  }
  if (batch.length) await queue.sendBatch(batch.map((body) => ({ body, contentType: "text" as const })));
}
