import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { packBodies } from "@agent-oncall/telemetry";
import { ledgerBucket } from "../../src/store/ledger-slot";
import { eventLedger } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

/**
 * The idempotency ledger (schema.eventLedger): which events are stored already, so a redelivered or resent event
 * is written to R2, counted by the rollups and added to the projections' sums once.
 *
 * One row per 15 s event-time slot holds the keys of every event stored in it (",k1,k2,…,"). Ingest reads, for each
 * key of a batch, whether its slot's row holds it (readLedger: one string search per key, so the rows read are the
 * batch's keys and slots, whatever else the slot holds), keeps the events no row holds (fresh), writes them to R2,
 * then writes D1 in one transaction whose FIRST statement is the guard (guardStatements): if a row holds any fresh
 * key (a concurrent consumer stored it since the read), it fails, and the whole transaction writes nothing. The
 * consumer then reads again and retries (isLedgerConflict). The LAST statements append the fresh keys to their slots'
 * rows (insertStatements): one row written per slot the batch touches, inserted or appended to.
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
    Array.from({ length: Math.ceil(keys.length / KEYS_PER_ITEM) }, (_, i): [number, string[]] => [bucket, keys.slice(i * KEYS_PER_ITEM, (i + 1) * KEYS_PER_ITEM)]),
  );
}

/** ?1 for HELD_SQL: JSON arrays of [bucket, [key, …]], packed under the parameter cap. */
const bucketParams = (keyed: readonly Keyed[]) =>
  packBodies(
    byBucket(keyed).map(([bucket, keys]) => JSON.stringify([bucket, keys])),
    MAX_PARAM_BYTES,
  );

/**
 * The keys among ?1 (a JSON array of [bucket, [key, …]]) that their bucket's row holds. CROSS JOIN keeps the order:
 * each bucket's row is found once by its rowid, then each of its keys is searched for in it (instr, a string search:
 * it reads no rows). Rows read: the buckets, their rows and the keys of ?1, never the other keys the rows hold.
 */
const HELD_SQL = `SELECT k.value AS key FROM json_each(?1) b CROSS JOIN ${L.$table} l ON l.${L.bucket} = b.value ->> 0
CROSS JOIN json_each(b.value -> 1) k WHERE instr(l.${L.keys}, ',' || k.value || ',') > 0`;

/**
 * The guard: inserts a row with a NULL key list (which the NOT NULL column refuses: "NOT NULL constraint failed:
 * event_ledger.keys", and the transaction is rolled back) exactly when a ledger row holds one of ?1's keys; else
 * inserts nothing. A constraint error rather than a malformed-JSON trick: SQLite may evaluate a constant expression
 * once, up front, whatever the CASE around it says, and a constraint is checked only on a row that is actually
 * inserted. Its bucket is one no slot has (-1), so the failure is the NULL, never a key clash.
 */
const GUARD_SQL = `INSERT INTO ${L.$table} (${L.bucket}, ${L.keys}) SELECT -1, NULL WHERE EXISTS (${HELD_SQL})`;

/**
 * Files the fresh keys: ?1 is a JSON array of [bucket, ",k1,k2,"]. A new slot gets its row; a slot with one gets the
 * keys appended (one row written either way). "WHERE true" lets SQLite parse ON CONFLICT after a SELECT.
 */
const INSERT_SQL = `INSERT INTO ${L.$table} (${L.bucket}, ${L.keys}) SELECT value ->> 0, value ->> 1 FROM json_each(?1) WHERE true
ON CONFLICT (${L.bucket}) DO UPDATE SET ${L.keys} = ${L.keys} || substr(excluded.${L.keys}, 2)`;

/** What the ledger says of a batch: its fresh events (no row holds them), and what reading it cost. */
export type LedgerRead = { fresh: Keyed[]; held: number; rowsRead: number };

/** Reads which of the batch's distinct events the ledger holds already. */
export async function readLedger(db: D1Database, keyed: readonly Keyed[]): Promise<LedgerRead> {
  if (!keyed.length) return { fresh: [], held: 0, rowsRead: 0 };
  const stmts = bucketParams(keyed).map((json) => db.prepare(HELD_SQL).bind(json));
  const results = await db.batch<{ key: string }>(stmts);
  const held = new Set<string>();
  let rowsRead = 0;
  for (const r of results) {
    rowsRead += Number(r.meta?.rows_read ?? 0);
    for (const row of r.results) held.add(row.key);
  }
  const fresh = keyed.filter((k) => !held.has(k.key));
  return { fresh, held: keyed.length - fresh.length, rowsRead };
}

/** The guard statements, to run FIRST in the batch's transaction (see GUARD_SQL). */
export function guardStatements(db: D1Database, fresh: readonly Keyed[]): D1PreparedStatement[] {
  return fresh.length ? bucketParams(fresh).map((json) => db.prepare(GUARD_SQL).bind(json)) : [];
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
