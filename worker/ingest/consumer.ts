import { trace } from "@opentelemetry/api";
import { parseEvent, type TelemetryEvent } from "../../src/telemetry";
import { type DeadLetter, bodyText, bodyType, deadLetterStatements } from "./dead-letters";
import { projectionStatements } from "./projections";
import { toRows } from "./rows";

export type IngestResult = { stored: number; deadLettered: number };

/**
 * Validates a batch of message bodies and writes events, projections and dead
 * letters in one D1 batch (one transaction). Safe to call again with the same
 * messages: events dedupe on id, dead letters on message id, projections merge.
 */
export async function ingestBatch(db: D1Database, messages: readonly { id: string; body: unknown }[], now = Date.now()): Promise<IngestResult> {
  const valid: TelemetryEvent[] = [];
  const dead: DeadLetter[] = [];
  for (const m of messages) {
    const body = decodeBody(m.body);
    if (!body.ok) {
      dead.push({ messageId: m.id, reason: body.reason, eventType: null, body: bodyText(m.body) });
      continue;
    }
    // A message holds one event or a packed array of them; each gets its own verdict.
    const items = Array.isArray(body.value) ? body.value : [body.value];
    items.forEach((item, i) => {
      const r = parseEvent(item);
      if (r.ok) valid.push(r.event);
      else dead.push({ messageId: Array.isArray(body.value) ? `${m.id}#${i}` : m.id, reason: `invalid event: ${r.reason}`, eventType: bodyType(item), body: bodyText(item) });
    });
  }
  const rows = toRows(valid, now);
  const stmts = [...projectionStatements(db, rows.events, rows.projections, rows.rollups), ...deadLetterStatements(db, dead, now)];
  if (stmts.length) await db.batch(stmts);
  annotateActiveSpan(valid);
  return { stored: valid.length, deadLettered: dead.length };
}

/**
 * Agents send events as JSON text (cheaper on the agent's thread); other
 * producers may send structured bodies. Both are accepted.
 */
function decodeBody(body: unknown): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (typeof body !== "string") return { ok: true, value: body };
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch {
    return { ok: false, reason: "invalid event: body is text but not JSON" };
  }
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

/**
 * Queue consumer for the telemetry queue. A D1 failure retries the whole
 * batch (safe: ingest is idempotent); after max retries the Queue moves the
 * messages to the dead-letter queue, whose consumer records them.
 */
export async function handleTelemetryBatch(batch: MessageBatch<unknown>, env: { DB: D1Database }): Promise<void> {
  try {
    await ingestBatch(env.DB, batch.messages);
    batch.ackAll();
    return;
  } catch (e) {
    console.error(`[ingest] batch of ${batch.messages.length} failed, isolating: ${e instanceof Error ? e.message : String(e)}`);
  }
  // One bad message must not hold back the rest: retry only the ones that fail alone.
  for (const m of batch.messages) {
    try {
      await ingestBatch(env.DB, [m]);
      m.ack();
    } catch {
      m.retry({ delaySeconds: 2 });
    }
  }
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
