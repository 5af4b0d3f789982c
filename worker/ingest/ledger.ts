import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { packBodies } from "@agent-oncall/telemetry";
import { slotOf } from "../../src/store/history/layout";
import { eventLedger } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

/**
 * The idempotency ledger (schema.eventLedger): which events are stored already, so a redelivered or resent event
 * is written to R2, counted by the rollups and added to the projections' sums once.
 *
 * Ingest reads the ledger rows of the slots a batch touches (readLedger: one statement, rows read only), keeps the
 * events no row holds (fresh), writes them to R2, then writes D1 in one transaction whose FIRST statement is the
 * guard (guardStatements): if a ledger row written since the read (a concurrent consumer) holds any fresh key, it
 * fails, and the whole transaction writes nothing. The consumer then reads again and retries (isLedgerConflict).
 * The LAST statements file the fresh keys (insertStatements): one row per slot the batch touches.
 */

const L = names(eventLedger);

/** The ledger's bucket of an event: the start of its R2 slot (SLOT_MS), so retention can go by the key's prefix. */
export const ledgerBucket = (time: number): number => slotOf(time);

/**
 * An event's short key: 64 bits of a hash of (agent class, agent name, event id), 14 base36 characters. Two lanes
 * of 32-bit multiply-xorshift mixing (cyrb53's, kept to 64 bits). A false match needs two different events of one
 * bucket set to share a key: with n events in the slots a batch reads, about n^2 / 2^65 (a million events in one
 * 10-minute slot of one partition: ~3e-8). Its effect is one event taken for stored (not written), never a double count.
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

const pairsParams = (keyed: readonly Keyed[]) =>
  packBodies(
    keyed.map((k) => JSON.stringify([k.bucket, k.key])),
    MAX_PARAM_BYTES,
  );

/**
 * The keys among ?1 (a JSON array of [bucket, key]) that a ledger row of their bucket holds. Reads the rows of those
 * buckets (a range of the primary key each); every IN list is built once (no correlation).
 */
const HELD_SQL = `SELECT DISTINCT k.value AS key FROM ${L.$table} l, json_each(l.${L.keys}) k
WHERE l.${L.bucket} IN (SELECT value ->> 0 FROM json_each(?1)) AND (l.${L.bucket}, k.value) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))`;

/**
 * The guard: inserts a row of NULLs (which the NOT NULL key refuses: "NOT NULL constraint failed: event_ledger.bucket",
 * and the transaction is rolled back) exactly when a ledger row holds one of ?1's keys; else inserts nothing. A
 * constraint error rather than a malformed-JSON trick: SQLite may evaluate a constant expression once, up front,
 * whatever the CASE around it says, and a constraint is checked only on a row that is actually inserted.
 */
const GUARD_SQL = `INSERT INTO ${L.$table} (${L.bucket}, ${L.batch}, ${L.keys}) SELECT NULL, NULL, NULL WHERE EXISTS (${HELD_SQL})`;

/** Files the fresh keys: ?1 is a JSON array of [bucket, batch, keys JSON]. */
const INSERT_SQL = `INSERT INTO ${L.$table} (${L.bucket}, ${L.batch}, ${L.keys}) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)`;

/** What the ledger says of a batch: its fresh events (no row holds them), and what reading it cost. */
export type LedgerRead = { fresh: Keyed[]; held: number; rowsRead: number };

/** Reads which of the batch's distinct events the ledger holds already. */
export async function readLedger(db: D1Database, keyed: readonly Keyed[]): Promise<LedgerRead> {
  if (!keyed.length) return { fresh: [], held: 0, rowsRead: 0 };
  const stmts = pairsParams(keyed).map((json) => db.prepare(HELD_SQL).bind(json));
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
  return fresh.length ? pairsParams(fresh).map((json) => db.prepare(GUARD_SQL).bind(json)) : [];
}

/** The ledger rows of one write: one per bucket its fresh events fall in, under a new batch id. */
export function insertStatements(db: D1Database, fresh: readonly Keyed[], batch: string = newBatchId()): D1PreparedStatement[] {
  const byBucket = new Map<number, string[]>();
  for (const k of fresh) {
    const list = byBucket.get(k.bucket) ?? [];
    list.push(k.key);
    byBucket.set(k.bucket, list);
  }
  const rows = [...byBucket].map(([bucket, keys]) => JSON.stringify([bucket, batch, JSON.stringify(keys)]));
  return rows.length ? packBodies(rows, MAX_PARAM_BYTES).map((json) => db.prepare(INSERT_SQL).bind(json)) : [];
}

/** A fresh id for one ingest write: 80 random bits (the key is (bucket, batch): unique per bucket is enough). */
export function newBatchId(): string {
  const b = crypto.getRandomValues(new Uint8Array(10));
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/** True when a batch failed on the guard: another write stored one of its events since the ledger was read. */
export function isLedgerConflict(e: unknown): boolean {
  const m = e instanceof Error ? e.message : String(e);
  return m.includes(`NOT NULL constraint failed: ${L.$table}.${L.bucket}`);
}
