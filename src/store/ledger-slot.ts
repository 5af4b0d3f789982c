/**
 * The idempotency ledger's slot (schema.eventLedger, worker/ingest/ledger.ts), by event time, so an event delivered
 * again hours later is looked up where it was filed. Narrow so that a row stays small (a row holds its slot's keys,
 * 15 bytes each: 2,000 events/s, about one local D1's ceiling, make 450 KB, under D1's 2 MB per row; ingest reads
 * the rows of a batch's slots whole), and wide enough that a batch touches few slots (its events span its
 * invocations, seconds): a write costs one row written per slot it touches.
 */
export const LEDGER_SLOT_MS = 15_000;

/** The ledger's bucket of an event time: the start of its slot. Retention goes by it (a bucket once its whole slot is old). */
export const ledgerBucket = (time: number): number => Math.floor(time / LEDGER_SLOT_MS) * LEDGER_SLOT_MS;
