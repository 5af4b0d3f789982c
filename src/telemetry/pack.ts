import type { QueueLike } from "./outbox.js";

/**
 * Queue messages carry a JSON array of events, not one event each: Queues
 * bill and process per message (per 64 KB), and one message per event would
 * cost the agent a broker round-trip per event. Ingest accepts both shapes.
 *
 * Every limit here counts UTF-8 bytes, as the platform does: counted in
 * characters, a message of non-Latin text can be three times its budget, and
 * one message over the Queue's limit fails its whole sendBatch on every retry.
 */

/** Largest message body we build (Queues allow 128 KB; billing counts 64 KB units). */
export const PACK_BYTES = 60_000;
/** Largest total per sendBatch (Queues allow 256 KB). */
const SEND_BYTES = 240_000;
/** Messages per sendBatch (the Queues limit). */
const SEND_MESSAGES = 100;

/** Any character that is more than one UTF-8 byte. */
const NON_ASCII = /[\u0080-\uffff]/;

/** UTF-8 byte length of a string, without encoding it (lone surrogates count 3, as TextEncoder writes U+FFFD). */
export function utf8Length(s: string): number {
  // Most event text is ASCII: one native scan, instead of a loop over every character.
  if (!NON_ASCII.test(s)) return s.length;
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 2 UTF-16 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

/**
 * Groups serialised JSON values into JSON-array texts of at most `maxBytes`
 * UTF-8 bytes each (a larger single value gets its own). Used for Queue
 * messages here and for D1 statement parameters in ingest.
 */
export function packBodies(bodies: string[], maxBytes = PACK_BYTES): string[] {
  return packSized(bodies, maxBytes).map((m) => m.text);
}

/** packBodies, with each message's UTF-8 size (counted once, while packing). */
function packSized(bodies: string[], maxBytes: number): { text: string; bytes: number }[] {
  const out: { text: string; bytes: number }[] = [];
  let cur: string[] = [];
  let size = 2;
  // `size` counts the brackets and a comma after every body: one comma more than the text has.
  const close = () => out.push({ text: `[${cur.join(",")}]`, bytes: size - 1 });
  for (const b of bodies) {
    const n = utf8Length(b);
    if (cur.length && size + n + 1 > maxBytes) {
      close();
      cur = [];
      size = 2;
    }
    cur.push(b);
    size += n + 1;
  }
  if (cur.length) close();
  return out;
}

/**
 * Sends serialised events as packed messages, in as few sendBatch calls as the
 * limits allow. Callers keep each event under MAX_EVENT_BYTES, so every
 * message fits the Queue's per-message limit.
 */
export async function sendPacked(queue: QueueLike, bodies: string[]): Promise<void> {
  let batch: string[] = [];
  let size = 0;
  for (const { text: m, bytes: n } of packSized(bodies, PACK_BYTES)) {
    if (batch.length && (size + n > SEND_BYTES || batch.length === SEND_MESSAGES)) {
      await queue.sendBatch(batch.map((body) => ({ body, contentType: "text" as const })));
      batch = [];
      size = 0;
    }
    batch.push(m);
    size += n;
  }
  if (batch.length) await queue.sendBatch(batch.map((body) => ({ body, contentType: "text" as const })));
}
