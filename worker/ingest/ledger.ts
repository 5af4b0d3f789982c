import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { packBodies } from "@agent-oncall/telemetry";
import { ledgerBucket } from "../../src/store/ledger-slot";
import { eventLedger } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

/**
 * The idempotency ledger (schema.eventLedger): which events are stored already, so a redelivered or resent event
 * is written to R2, counted by the rollups and added to the projections' sums once.
 *
 * One row per 15 s event-time slot holds the keys of every event stored in it (",k1,k2,…,"). Ingest reads the rows
 * of the slots a batch touches (readLedger: one row read per slot, whatever it holds) and keeps the events no row
 * holds (fresh), writes them to R2, then writes D1 in one transaction whose FIRST statement is the guard
 * (guardStatements): if a write since the read (a concurrent consumer) appended any fresh key to its row, it fails,
 * and the whole transaction writes nothing. The consumer then reads again and retries (isLedgerConflict). The LAST
 * statements append the fresh keys to their slots' rows (insertStatements): one row written per slot the batch
 * touches, inserted or appended to. Rows only grow between reads (retention deletes a slot once it is past the hot
 * window), so what was appended since the read is the row past the length read.
 */

const L = names(eventLedger);

export { LEDGER_SLOT_MS, ledgerBucket } from "../../src/store/ledger-slot";

/**
 * An event's short key: 64 bits of a hash of (agent class, agent name, event id), 14 base36 characters. Two lanes
 * of 32-bit multiply-xorshift mixing (cyrb53's, kept to 64 bits). A false match needs two different events of one
 * slot to share a key: with n events in one slot, about n^2 / 2^65 (30,000 events in one 15 s slot of one partition:
 * ~2e-11). Its effect is one event taken for stored (not written), never a double count.
 */
export function ledgerKey(agentClass: string, agentName: string, id: string): string {
  const s = `${agentClass}\u0000${agentName}\u0000${id}`;
  let h1 = 0xdeadbeef,
    h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(36).padStart(7, "0") + (h1 >>> 0).toString(36).padStart(7, "0");
}

/** An event as the ledger files it: its bucket and key. */
export type Keyed = { e: TelemetryEvent; bucket: number; key: string };

/** The batch's distinct events (same agent, same id: one event), keyed. */
export function keyedEvents(events: readonly TelemetryEvent[]): Keyed[] {
  const seen = new Set<string>();
  const out: Keyed[] = [];
  for (const e of events) {
    const key = ledgerKey(e.source.agentClass, e.source.agentName, e.id);
    const bucket = ledgerBucket(e.time);
    const k = `${bucket}/${key}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ e, bucket, key });
  }
  return out;
}

/** Largest JSON parameter per statement (D1 caps a value at 2 MB). */
const MAX_PARAM_BYTES = 900_000;

/** Keys per item of a statement's parameter (300 KB of keys): a bucket with more is split across items. */
const KEYS_PER_ITEM = 20_000;

/** The keys by bucket, in first-seen order, at most KEYS_PER_ITEM per entry (a bucket may come again). */
function byBucket(keyed: readonly Keyed[]): [number, string[]][] {
  const out = new Map<number, string[]>();
  for (const k of keyed) {
    const list = out.get(k.bucket) ?? [];
    list.push(k.key);
    out.set(k.bucket, list);
  }
  return [...out].flatMap(([bucket, keys]) =>
    Array.from({ length: Math.ceil(keys.length / KEYS_PER_ITEM) }, (_, i): [number, string[]] => [
      bucket,
      keys.slice(i * KEYS_PER_ITEM, (i + 1) * KEYS_PER_ITEM),
    ]),
  );
}

/** Reads the rows of ?1's buckets (a JSON array of bucket starts): one row read per slot a batch touches. */
const READ_SQL = `SELECT ${L.bucket} AS bucket, ${L.keys} AS keys FROM ${L.$table} WHERE ${L.bucket} IN (SELECT value FROM json_each(?1))`;

/**
 * The guard: inserts a row with a NULL key list (which the NOT NULL column refuses: "NOT NULL constraint failed:
 * event_ledger.keys", and the transaction is rolled back) exactly when a write since the read appended one of ?1's
 * keys to its row; else inserts nothing. ?1 is a JSON array of [bucket, length read, [key, …]]. The CTE takes each
 * row that grew since the read, from the read part's closing comma on, once: a row that did not grow costs its one
 * row read and no search; only what another write appended is searched for the batch's keys. A constraint error
 * rather than a malformed-JSON trick: SQLite may evaluate a constant expression once, up front, whatever the CASE
 * around it says, and a constraint is checked only on a row that is actually inserted. Its bucket is one no slot has
 * (-1), so the failure is the NULL, never a key clash.
 */
const GUARD_SQL = `WITH t AS MATERIALIZED (SELECT substr(l.${L.keys}, max(b.value ->> 1, 1)) AS tail, b.value -> 2 AS mine
FROM json_each(?1) b CROSS JOIN ${L.$table} l ON l.${L.bucket} = b.value ->> 0 WHERE length(l.${L.keys}) > b.value ->> 1)
INSERT INTO ${L.$table} (${L.bucket}, ${L.keys}) SELECT -1, NULL
WHERE EXISTS (SELECT 1 FROM t CROSS JOIN json_each(t.mine) k WHERE instr(t.tail, ',' || k.value || ',') > 0)`;

/**
 * Files the fresh keys: ?1 is a JSON array of [bucket, ",k1,k2,"]. A new slot gets its row; a slot with one gets the
 * keys appended (one row written either way). "WHERE true" lets SQLite parse ON CONFLICT after a SELECT.
 */
const INSERT_SQL = `INSERT INTO ${L.$table} (${L.bucket}, ${L.keys}) SELECT value ->> 0, value ->> 1 FROM json_each(?1) WHERE true
ON CONFLICT (${L.bucket}) DO UPDATE SET ${L.keys} = ${L.keys} || substr(excluded.${L.keys}, 2)`;

/**
 * What the ledger says of a batch: its fresh events (no row holds them), how long each slot's row was when read (0:
 * no row; the guard looks only at what was appended after), and what reading it cost.
 */
export type LedgerRead = { fresh: Keyed[]; held: number; rowsRead: number; lengths: Map<number, number> };

/** Buckets per read statement (each a bound value of a JSON array: far under the parameter cap). */
const BUCKETS_PER_READ = 1_000;

/**
 * Reads which of the batch's distinct events the ledger holds already: the rows of the slots the batch touches (one
 * row read each, whatever they hold), searched here. Their keys come over the wire: a slot's row is about 15 bytes
 * per event stored in its 15 s (110 KB at 500 events/s).
 */
export async function readLedger(db: D1Database, keyed: readonly Keyed[]): Promise<LedgerRead> {
  const lengths = new Map<number, number>();
  if (!keyed.length) return { fresh: [], held: 0, rowsRead: 0, lengths };
  const buckets = [...new Set(keyed.map((k) => k.bucket))];
  const stmts = Array.from({ length: Math.ceil(buckets.length / BUCKETS_PER_READ) }, (_, i) =>
    db.prepare(READ_SQL).bind(JSON.stringify(buckets.slice(i * BUCKETS_PER_READ, (i + 1) * BUCKETS_PER_READ))),
  );
  const results = await db.batch<{ bucket: number; keys: string }>(stmts);
  const held = new Map<number, Set<string>>();
  let rowsRead = 0;
  for (const r of results) {
    rowsRead += Number(r.meta?.rows_read ?? 0);
    for (const row of r.results) {
      lengths.set(row.bucket, row.keys.length);
      held.set(row.bucket, new Set(row.keys.split(",")));
    }
  }
  for (const b of buckets) if (!lengths.has(b)) lengths.set(b, 0);
  const fresh = keyed.filter((k) => !held.get(k.bucket)?.has(k.key));
  return { fresh, held: keyed.length - fresh.length, rowsRead, lengths };
}

/** The guard statements, to run FIRST in the batch's transaction (see GUARD_SQL): `read` is the read they follow. */
export function guardStatements(db: D1Database, read: Pick<LedgerRead, "fresh" | "lengths">): D1PreparedStatement[] {
  const items = byBucket(read.fresh).map(([bucket, keys]) => JSON.stringify([bucket, read.lengths.get(bucket) ?? 0, keys]));
  return items.length ? packBodies(items, MAX_PARAM_BYTES).map((json) => db.prepare(GUARD_SQL).bind(json)) : [];
}

/** The ledger writes of one batch: its fresh keys appended to the row of each slot they fall in (or its new row). */
export function insertStatements(db: D1Database, fresh: readonly Keyed[]): D1PreparedStatement[] {
  const rows = byBucket(fresh).map(([bucket, keys]) => JSON.stringify([bucket, `,${keys.join(",")},`]));
  return rows.length ? packBodies(rows, MAX_PARAM_BYTES).map((json) => db.prepare(INSERT_SQL).bind(json)) : [];
}

/** True when a batch failed on the guard: another write stored one of its events since the ledger was read. */
export function isLedgerConflict(e: unknown): boolean {
  const m = e instanceof Error ? e.message : String(e);
  return m.includes(`NOT NULL constraint failed: ${L.$table}.${L.keys}`);
}
