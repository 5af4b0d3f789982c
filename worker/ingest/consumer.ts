import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { trace } from "@opentelemetry/api";
import { assertRecordedPartitions, partitionOf, type Store } from "../../src/store/partitions";
import { UNDELIVERED_PREFIX } from "../../src/store/read-models/dead-letters";
import { eventLedger } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";
import { consoleConfig, type SettingVars } from "../config";
import type { AlertEnv } from "../jobs";
import { storeFromEnv } from "../store";
import { admit } from "./admit";
import { alertOnIngested } from "./alerts";
import { DEFAULT_BOUNDS, type IngestBounds, ingestBounds } from "./bounds";
import { bodyText, bodyType, type DeadLetter, deadLetterStatements } from "./dead-letters";
import { type HistoryWriteResult, writeHistory } from "./history";
import { guardStatements, insertStatements, isLedgerConflict, keyedEvents, readLedger } from "./ledger";
import { type MessageItem, messageItems } from "./messages";
import { paceAfterBatch } from "./pace";
import { tableStatements } from "./projections";
import { toRows } from "./rows";
import { verificationKey } from "./signature";

/** What one ingest call did, and what it cost D1 (summed from each statement's `meta`: every index entry counts as a row written). */
export type IngestResult = {
  /** Valid events of the batch (each stored now or before: a redelivered event is stored already). */
  stored: number;
  /** Of those, the events this call stored (the ledger held the others: ledger.ts). */
  added: number;
  deadLettered: number;
  rowsWritten: number;
  rowsRead: number;
  /** rowsWritten told per table (dead letters under `dead_letters`), for the bench and the simulator. */
  rowsWrittenByTable: Record<string, number>;
};

export type IngestOptions = {
  /** Receipt time (default now): stored as received_at, and the time window is relative to it. */
  now?: number;
  bounds?: IngestBounds;
  /** Signed mode: events without a valid signature go to dead letters. */
  signingKey?: CryptoKey | null;
  /** A run that completes healthily leaves D1 (projections.ts BatchOptions): set where the R2 history is bound. */
  completedLeave?: boolean;
  /** Told the events this call stored (not those stored before) once they are (alerting looks at them; see handleTelemetryBatch). */
  onStored?: (events: TelemetryEvent[]) => void;
  /**
   * Writes the events this call is about to store to the R2 history, BEFORE the D1 transaction that files them in
   * the ledger (so an event the ledger holds is in R2, and a redelivered one is not written again). Throwing fails
   * the call with nothing written to D1.
   */
  history?: (events: TelemetryEvent[]) => Promise<unknown>;
  /**
   * Whether to write the hot timeline's segments (default true). False when R2 holds the timelines (HISTORY bound):
   * R2 is written before D1, so every reader finds an event there first, and D1 keeps no event bodies.
   */
  segments?: boolean;
};

/** How often a write re-reads the ledger after a concurrent write stored one of its events, before it throws. */
export const LEDGER_TRIES = 3;

/**
 * Validates a batch of message bodies and writes events, projections and dead
 * letters in one D1 batch (one transaction). Safe to call again with the same
 * messages: the ledger drops events stored before, dead letters dedupe on message id.
 */
export async function ingestBatch(db: D1Database, messages: readonly { id: string; body: unknown }[], opts: IngestOptions = {}): Promise<IngestResult> {
  const { valid, dead, now } = await admitMessages(messages, opts);
  const { onStored, ...rest } = opts;
  const w = await writeAdmitted(db, valid, dead, now, rest);
  onStored?.(w.fresh);
  return w.result;
}

/**
 * ingestBatch across a partitioned store (src/store/partitions.ts): the batch is judged once, its valid events
 * grouped by their agent's partition, and each group written to its database in its own D1 batch, all at once.
 * Dead letters go to the home database (partition 0). With one partition this is ingestBatch on it. A failing
 * partition fails the call; the retry is safe (every write is idempotent), so the others' rows stay as they are.
 */
export async function ingestIntoStore(store: Store, messages: readonly { id: string; body: unknown }[], opts: IngestOptions = {}): Promise<IngestResult> {
  const n = store.parts.length;
  const { valid, dead, now } = await admitMessages(messages, opts);
  const { onStored, ...each } = opts;
  if (n === 1) {
    const w = await writeAdmitted(store.parts[0]!, valid, dead, now, each);
    onStored?.(w.fresh);
    return w.result;
  }
  const groups: TelemetryEvent[][] = Array.from({ length: n }, () => []);
  for (const e of valid) groups[partitionOf(e.source.agentClass, e.source.agentName, n)]!.push(e);
  const written = await Promise.all(
    groups.map((g, i) => (g.length || (i === 0 && dead.length) ? writeAdmitted(store.parts[i]!, g, i === 0 ? dead : [], now, each) : null)),
  );
  onStored?.(written.flatMap((w) => w?.fresh ?? []));
  const sum: IngestResult = { stored: 0, added: 0, deadLettered: 0, rowsWritten: 0, rowsRead: 0, rowsWrittenByTable: {} };
  for (const w of written) {
    if (!w) continue;
    const r = w.result;
    sum.stored += r.stored;
    sum.added += r.added;
    sum.deadLettered += r.deadLettered;
    sum.rowsWritten += r.rowsWritten;
    sum.rowsRead += r.rowsRead;
    for (const [t, w] of Object.entries(r.rowsWrittenByTable)) sum.rowsWrittenByTable[t] = (sum.rowsWrittenByTable[t] ?? 0) + w;
  }
  return sum;
}

/** Judges every event of every message: the valid ones and the dead letters, in message order. */
async function admitMessages(messages: readonly { id: string; body: unknown }[], opts: IngestOptions) {
  const now = opts.now ?? Date.now();
  const admitOpts = { receivedAt: now, bounds: opts.bounds ?? DEFAULT_BOUNDS, signingKey: opts.signingKey ?? null };
  const valid: TelemetryEvent[] = [];
  const dead: DeadLetter[] = [];
  const items: MessageItem[] = [];
  for (const m of messages) {
    const r = messageItems(m, admitOpts.bounds.maxEventBytes);
    if (r.dead) dead.push(r.dead);
    items.push(...r.items);
  }
  // Each event gets its own verdict; they may wait on signature checks, so run together, in message order.
  const verdicts = await Promise.all(items.map((it) => admit(it.item, admitOpts, it.fitsInMessage)));
  verdicts.forEach((v, i) => {
    const it = items[i]!;
    if (v.ok) valid.push(v.event);
    else dead.push({ messageId: it.messageId, reason: v.reason, eventType: v.eventType, body: it.deadBody() });
  });
  return { valid, dead, now };
}

/**
 * Writes admitted events to one D1 database: reads the ledger for the events it holds already, writes the rest (the
 * fresh events) to R2 (opts.history), then their rows, projections and ledger rows, and the dead letters, in one
 * batch (one transaction) that the ledger's guard aborts when a concurrent write stored one of them meanwhile; then
 * it reads again, up to LEDGER_TRIES times.
 */
async function writeAdmitted(
  db: D1Database,
  valid: TelemetryEvent[],
  dead: DeadLetter[],
  now: number,
  opts: Omit<IngestOptions, "onStored">,
): Promise<{ result: IngestResult; fresh: TelemetryEvent[] }> {
  const keyed = keyedEvents(valid);
  let ledgerRead = 0;
  for (let attempt = 1; ; attempt++) {
    const ledger = await readLedger(db, keyed);
    ledgerRead += ledger.rowsRead;
    const fresh = ledger.fresh.map((k) => k.e);
    if (fresh.length && opts.history) await opts.history(fresh);
    const rows = toRows(fresh, now);
    const stmts = [
      ...guardStatements(db, ledger).map((stmt) => ({ table: LEDGER, stmt })),
      ...tableStatements(db, opts.segments === false ? [] : rows.events, rows.projections, rows.rollups, {
        completedLeave: opts.completedLeave ?? false,
      }),
      ...insertStatements(db, ledger.fresh).map((stmt) => ({ table: LEDGER, stmt })),
      ...deadLetterStatements(db, dead, now).map((stmt) => ({ table: "dead_letters", stmt })),
    ];
    let results: D1Result[];
    try {
      results = stmts.length ? await db.batch(stmts.map((s) => s.stmt)) : [];
    } catch (e) {
      if (isLedgerConflict(e) && attempt < LEDGER_TRIES) continue;
      throw e;
    }
    annotateActiveSpan(fresh);
    const cost = (k: "rows_written" | "rows_read") => results.reduce((n, r) => n + Number(r.meta?.[k] ?? 0), 0);
    const rowsWrittenByTable: Record<string, number> = {};
    results.forEach((r, i) => {
      const t = stmts[i]!.table;
      rowsWrittenByTable[t] = (rowsWrittenByTable[t] ?? 0) + Number(r.meta?.rows_written ?? 0);
    });
    const result = {
      stored: valid.length,
      added: fresh.length,
      deadLettered: dead.length,
      rowsWritten: cost("rows_written"),
      rowsRead: cost("rows_read") + ledgerRead,
      rowsWrittenByTable,
    };
    return { result, fresh };
  }
}

const LEDGER = names(eventLedger).$table;

/** Puts incident-changing events on the consumer's span too, so the Worker's own trace shows them. */
function annotateActiveSpan(events: TelemetryEvent[]): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.setAttribute("agents.ingest.events", events.length);
  for (const e of events) {
    if (!e.corr.incidentId && !e.corr.opId) continue;
    const p = e.payload as { reason?: string };
    span.addEvent(e.type, {
      "agents.event.id": e.id,
      ...(e.corr.incidentId ? { "agents.incident.id": e.corr.incidentId } : {}),
      ...(e.corr.opId ? { "agents.op.id": e.corr.opId } : {}),
      ...(p.reason ? { "agents.event.reason": p.reason } : {}),
    });
  }
}

/** What the consumer reads from the console's env. */
export type IngestEnv = { DB: D1Database; HISTORY?: R2Bucket } & AlertEnv & SettingVars;

/** Ingest settings (worker/config.ts): the bounds, and the signing key when signed mode is on. */
export async function ingestOptionsFromEnv(env: IngestEnv): Promise<IngestOptions> {
  const { ingest } = consoleConfig(env);
  return { bounds: ingestBounds(ingest), signingKey: await verificationKey(ingest.signingSecret ?? undefined) };
}

let warnedNoHistory = false;

/**
 * Writes accepted events to the R2 history (worker/ingest/history.ts) and puts its cost on the consumer's span.
 * Without a HISTORY binding it writes nothing and says so once per isolate. Throws when R2 does.
 */
export async function recordHistory(env: IngestEnv, events: TelemetryEvent[], receivedAt: number): Promise<HistoryWriteResult | null> {
  if (!env.HISTORY) {
    if (!warnedNoHistory) console.warn("[ingest] no HISTORY R2 binding: events are kept in D1 only (see docs/history.md)");
    warnedNoHistory = true;
    return null;
  }
  if (!events.length) return { events: 0, objects: 0, bytes: 0, rawBytes: 0, keys: [] };
  const r = await writeHistory(env.HISTORY, events, { shards: consoleConfig(env).history.shards, receivedAt });
  const span = trace.getActiveSpan();
  if (span?.isRecording()) {
    span.setAttribute("agents.history.objects", r.objects);
    span.setAttribute("agents.history.bytes", r.bytes);
  }
  return r;
}

/** An R2 history write failed: the whole batch is retried (R2, not one message, is at fault). */
class HistoryWriteError extends Error {}

/**
 * Queue consumer for the telemetry queue. Each batch's new events (those the ledger does not hold) go to the R2
 * history first, then to D1 with their ledger rows (writeAdmitted); a redelivered event is in neither again. An R2
 * failure retries the whole batch with nothing in D1 (its redelivery writes the same R2 keys). A D1 failure first
 * isolates the messages, so one bad message cannot hold back the rest; after max retries the Queue moves messages
 * to the dead-letter queue, whose consumer records them.
 */
export async function handleTelemetryBatch(batch: MessageBatch<unknown>, env: IngestEnv, store: Store = storeFromEnv(env)): Promise<void> {
  const stored: TelemetryEvent[] = [];
  const now = Date.now();
  const history = async (events: TelemetryEvent[]) => {
    try {
      await recordHistory(env, events, now);
    } catch (e) {
      throw new HistoryWriteError(e instanceof Error ? e.message : String(e));
    }
  };
  // With R2 bound and TIMELINE_SEGMENTS off, D1 keeps no event bodies: every reader finds them in R2 (written first).
  const segments = !env.HISTORY || consoleConfig(env).history.segments;
  // With the R2 history bound, every accepted event is written there, so a healthy completed run need not stay in D1.
  const opts = {
    ...(await ingestOptionsFromEnv(env)),
    now,
    history,
    segments,
    completedLeave: !!env.HISTORY,
    onStored: (events: TelemetryEvent[]) => void stored.push(...events),
  };
  // A store recorded under another partition count is refused (throws: the batch is retried until fixed).
  await assertRecordedPartitions(store);
  let deadLettered = 0;
  // Retention keeps pace with ingest: a slice of due rows per table, sized by what this delivery added.
  const pace = () => {
    const { retention } = consoleConfig(env);
    return paceAfterBatch(store, stored, deadLettered, { pace: retention.pace, maxAgeDays: retention.days, hotWindowHours: retention.hotWindowHours, now });
  };
  try {
    deadLettered = (await ingestIntoStore(store, batch.messages, opts)).deadLettered;
    batch.ackAll();
    // D1 has the events, so the console shows them now: alert now too (only events stored by this delivery).
    await alertOnIngested(env, stored);
    await pace();
    return;
  } catch (e) {
    if (e instanceof HistoryWriteError) {
      console.error(`[ingest] history write for a batch of ${batch.messages.length} failed, retrying it: ${e.message}`);
      batch.retryAll({ delaySeconds: 2 });
      // A partition whose R2 write succeeded may have stored its events in D1: they are the alerts' and pace's too.
      await alertOnIngested(env, stored);
      await pace();
      return;
    }
    console.error(`[ingest] batch of ${batch.messages.length} failed, isolating: ${e instanceof Error ? e.message : String(e)}`);
  }
  // One bad message must not hold back the rest: retry only the ones that fail alone.
  for (const m of batch.messages) {
    try {
      const r = await ingestIntoStore(store, [m], opts);
      deadLettered += r.deadLettered;
      m.ack();
    } catch {
      m.retry({ delaySeconds: 2 });
    }
  }
  await alertOnIngested(env, stored);
  // The messages that went in alone still added rows: without this, a fleet whose batches keep failing in D1 as a
  // whole would grow the store unpaced until the hourly cron.
  await pace();
}

/** Consumer for the dead-letter queue: messages that failed delivery repeatedly are kept with the reason. */
export async function handleDeadLetterBatch(batch: MessageBatch<unknown>, env: { DB: D1Database }): Promise<void> {
  const now = Date.now();
  const letters: DeadLetter[] = batch.messages.map((m) => ({
    messageId: m.id,
    reason: `${UNDELIVERED_PREFIX}${m.attempts} attempts on queue ${batch.queue}`,
    eventType: bodyType(m.body),
    body: bodyText(m.body),
  }));
  try {
    await env.DB.batch(deadLetterStatements(env.DB, letters, now));
    batch.ackAll();
  } catch (e) {
    console.error(`[ingest] dead-letter batch failed, retrying: ${e instanceof Error ? e.message : String(e)}`);
    batch.retryAll({ delaySeconds: 10 });
  }
}
