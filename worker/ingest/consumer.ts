import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { trace } from "@opentelemetry/api";
import { assertRecordedPartitions, partitionOf, type Store } from "../../src/store/partitions";
import { consoleConfig, type SettingVars } from "../config";
import type { AlertEnv } from "../jobs";
import { storeFromEnv } from "../store";
import { admit } from "./admit";
import { alertOnIngested } from "./alerts";
import { DEFAULT_BOUNDS, type IngestBounds, ingestBounds } from "./bounds";
import { bodyText, bodyType, type DeadLetter, deadLetterStatements } from "./dead-letters";
import { type HistoryWriteResult, writeHistory } from "./history";
import { type MessageItem, messageItems } from "./messages";
import { paceAfterBatch } from "./pace";
import { tableStatements } from "./projections";
import { toRows } from "./rows";
import { verificationKey } from "./signature";

/** What one ingest call did, and what it cost D1 (summed from each statement's `meta`: every index entry counts as a row written). */
export type IngestResult = {
  stored: number;
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
  /** Told the valid events once they are stored (alerting looks at them; see handleTelemetryBatch). */
  onStored?: (events: TelemetryEvent[]) => void;
};

/**
 * Validates a batch of message bodies and writes events, projections and dead
 * letters in one D1 batch (one transaction). Safe to call again with the same
 * messages: events dedupe on id, dead letters on message id, projections merge.
 */
export async function ingestBatch(db: D1Database, messages: readonly { id: string; body: unknown }[], opts: IngestOptions = {}): Promise<IngestResult> {
  const { valid, dead, now } = await admitMessages(messages, opts);
  return writeAdmitted(db, valid, dead, now, opts);
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
  if (n === 1) return writeAdmitted(store.parts[0]!, valid, dead, now, opts);
  const groups: TelemetryEvent[][] = Array.from({ length: n }, () => []);
  for (const e of valid) groups[partitionOf(e.source.agentClass, e.source.agentName, n)]!.push(e);
  const { onStored, ...each } = opts;
  const results = await Promise.all(
    groups.map((g, i) => (g.length || (i === 0 && dead.length) ? writeAdmitted(store.parts[i]!, g, i === 0 ? dead : [], now, each) : null)),
  );
  onStored?.(valid);
  const sum: IngestResult = { stored: 0, deadLettered: 0, rowsWritten: 0, rowsRead: 0, rowsWrittenByTable: {} };
  for (const r of results) {
    if (!r) continue;
    sum.stored += r.stored;
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

/** Writes admitted events (their rows and projections) and dead letters to one D1 database in one batch. */
async function writeAdmitted(db: D1Database, valid: TelemetryEvent[], dead: DeadLetter[], now: number, opts: IngestOptions): Promise<IngestResult> {
  const rows = toRows(valid, now);
  const stmts = [
    ...tableStatements(db, rows.events, rows.projections, rows.rollups, { completedLeave: opts.completedLeave ?? false }),
    ...deadLetterStatements(db, dead, now).map((stmt) => ({ table: "dead_letters", stmt })),
  ];
  const results = stmts.length ? await db.batch(stmts.map((s) => s.stmt)) : [];
  opts.onStored?.(valid);
  annotateActiveSpan(valid);
  const cost = (k: "rows_written" | "rows_read") => results.reduce((n, r) => n + Number(r.meta?.[k] ?? 0), 0);
  const rowsWrittenByTable: Record<string, number> = {};
  results.forEach((r, i) => {
    const t = stmts[i]!.table;
    rowsWrittenByTable[t] = (rowsWrittenByTable[t] ?? 0) + Number(r.meta?.rows_written ?? 0);
  });
  return { stored: valid.length, deadLettered: dead.length, rowsWritten: cost("rows_written"), rowsRead: cost("rows_read"), rowsWrittenByTable };
}

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

/**
 * Queue consumer for the telemetry queue. Each batch goes to D1, then its accepted events to the R2 history;
 * either failing retries the whole batch (safe: both writes are idempotent, and R2 keys are the same on a
 * redelivery). A D1 failure first isolates the messages, so one bad message cannot hold back the rest; after
 * max retries the Queue moves messages to the dead-letter queue, whose consumer records them.
 */
export async function handleTelemetryBatch(batch: MessageBatch<unknown>, env: IngestEnv, store: Store = storeFromEnv(env)): Promise<void> {
  const stored: TelemetryEvent[] = [];
  const now = Date.now();
  // With the R2 history bound, every accepted event is written there, so a healthy completed run need not stay in D1.
  const opts = {
    ...(await ingestOptionsFromEnv(env)),
    now,
    completedLeave: !!env.HISTORY,
    onStored: (events: TelemetryEvent[]) => void stored.push(...events),
  };
  // A store recorded under another partition count is refused (throws: the batch is retried until fixed).
  await assertRecordedPartitions(store);
  let inD1 = false;
  let deadLettered = 0;
  // Retention keeps pace with ingest: a slice of due rows per table, sized by what this delivery added.
  const pace = () => {
    const { retention } = consoleConfig(env);
    return paceAfterBatch(store, stored, deadLettered, { pace: retention.pace, maxAgeDays: retention.days, hotWindowHours: retention.hotWindowHours, now });
  };
  try {
    deadLettered = (await ingestIntoStore(store, batch.messages, opts)).deadLettered;
    inD1 = true;
  } catch (e) {
    console.error(`[ingest] batch of ${batch.messages.length} failed, isolating: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (inD1) {
    try {
      await recordHistory(env, stored, now);
      batch.ackAll();
    } catch (e) {
      console.error(`[ingest] history write for a batch of ${batch.messages.length} failed, retrying it: ${e instanceof Error ? e.message : String(e)}`);
      batch.retryAll({ delaySeconds: 2 });
    }
    // D1 has the events, so the console shows them now: alert now too (a redelivery's alerts dedupe on their keys).
    await alertOnIngested(env, stored);
    await pace();
    return;
  }
  // One bad message must not hold back the rest: retry only the ones that fail alone.
  for (const m of batch.messages) {
    const mine: TelemetryEvent[] = [];
    try {
      const r = await ingestIntoStore(store, [m], {
        ...opts,
        onStored: (events) => {
          mine.push(...events);
          stored.push(...events);
        },
      });
      deadLettered += r.deadLettered;
      await recordHistory(env, mine, now);
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
    reason: `delivery failed after ${m.attempts} attempts on queue ${batch.queue}`,
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
