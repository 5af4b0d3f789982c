import { fiberIncidentId, REASON_DIM_TYPES, sessionStatusOf, type TelemetryEvent, turnIncidentId } from "@agent-oncall/telemetry";
import type { Table } from "drizzle-orm";
import { incidentFacts } from "../../src/store/incident-facts";
import { listedAt } from "../../src/store/listed-at";
import { type Row, type StampGroup, stampColumns, sumOnce } from "../../src/store/merge";
import { ATTEMPT_EVENT_TYPES, UNKNOWN_ATTEMPT } from "../../src/store/read-models/incidents";
import { ALARM_EVENT, alarmDim } from "../../src/store/read-models/residency";
import { runRowOf } from "../../src/store/run-rows";
import * as schema from "../../src/store/schema";
import type { SqlRow } from "../../src/store/sql-names";
import type { ProjectionName } from "./projections";
import { compactEvent, type SegmentKey, type SegmentRow, segmentRows, sumKey } from "./segments";

/**
 * Pure mapping from validated events to the rows they contribute: one events
 * row each, and rows for the projections their facts touch. Merging is
 * merge.ts's job; this file only says which facts an event carries.
 *
 * Rows are keyed by SQL column name (the statements read them with
 * `j ->> '$.<column>'`); each is checked against its table's SqlRow, so a
 * column renamed in the schema fails typecheck here too.
 */

export type BatchRows = { events: SegmentRow[]; projections: Record<ProjectionName, Row[]>; rollups: Row[] };

/**
 * A rollup increment: the bucket key, how many occurrences the event stands for (`n`: 1, or an alarm event's
 * `count`), plus the event's key that makes it count once (segments.ts storedSql).
 */
type RollupRow = SegmentKey & SqlRow<typeof schema.eventRollups, "bucket" | "type" | "dim" | "n" | "amount">;

/** Event types that are one recovery attempt (the lifecycle's "attempt" step): counted on their incident's row. */
const ATTEMPT_TYPES = new Set<string>(ATTEMPT_EVENT_TYPES);

/** Width of an event_rollups bucket. */
export const ROLLUP_BUCKET_MS = 5 * 60_000;

/** Event types whose rollup dimension is their reason (for "top reasons") are the registry's REASON_DIM_TYPES. */
/** Longest reason kept as a rollup dimension; longer ones are cut so the key space stays small. */
const MAX_DIM = 200;

const SESSION_EVENT = /^(session|op|backup)\./;

/** An incident's kind is the prefix of its id for derived ids; chat recovery ids have none. */
export function incidentKind(incidentId: string): string {
  const m = /^(fiber|turn):/.exec(incidentId);
  return m ? m[1]! : "chat";
}

/** A group stamp (see merge.ts): present only when the group's fact is. */
function stamp<T extends Table, G extends StampGroup<T>>(table: T, group: G, present: boolean, e: TelemetryEvent) {
  const [at, id] = stampColumns(table, group);
  // Computed keys widen to string; the cast restores the two stamp columns the rows are checked with.
  return (present ? { [at]: e.time, [id]: e.id } : { [at]: null, [id]: null }) as Record<typeof at, number | null> & Record<typeof id, string | null>;
}

/**
 * Maps a batch of validated events to rows: the segment rows of its distinct events (an event delivered twice in
 * one batch is one event: same agent, same id), and the projection and rollup rows of every event. Rollups and
 * `sum` amounts carry the event's segment key, so SQL counts only events not stored yet.
 */
export function toRows(events: TelemetryEvent[], receivedAt: number): BatchRows {
  const out: BatchRows = {
    events: [],
    projections: { agents: [], fibers: [], incidents: [], usage: [], deploys: [], ops: [], backups: [], sessions: [], recoveryPauses: [] },
    rollups: [],
  };
  const p = out.projections;
  const distinct = new Map<string, TelemetryEvent>();
  for (const e of events) {
    const k = JSON.stringify([e.source.agentClass, e.source.agentName, e.id]);
    if (!distinct.has(k)) distinct.set(k, e);
  }
  const segs = segmentRows(
    [...distinct.values()].map((e) => ({ e, compact: compactEvent(e, timelineId(e)) })),
    receivedAt,
  );
  out.events = segs;
  const keyOf = new Map<string, SegmentKey>(segs.map((r) => [JSON.stringify([r.agent_class, r.agent_name, r.id]), r]));
  for (const e of events) {
    const { agentClass: agent_class, agentName: agent_name } = e.source;
    const c = e.corr;
    const who = { agent_class, agent_name };
    const sk = keyOf.get(JSON.stringify([agent_class, agent_name, e.id]))!;
    const key: SegmentKey = { agent_class, agent_name, id: e.id, k: sk.k, alt: sk.alt };
    const reason = REASON_DIM_TYPES.has(e.type) ? (e.payload as { reason?: string }).reason : undefined;
    const respent = respentTokens(e);
    out.rollups.push({
      ...key,
      bucket: Math.floor(e.time / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS,
      type: e.type,
      // An alarm firing rolls up per agent (read-models/residency.ts reads its rate): one rollup row per agent and
      // bucket per batch, instead of one per bucket.
      dim: e.type === ALARM_EVENT ? alarmDim(agent_class, agent_name) : reason ? reason.slice(0, MAX_DIM) : "",
      // The agent ships a loop's firings as counts (src/telemetry/alarm-firings.ts): one event, `count` firings.
      n: e.type === ALARM_EVENT ? ((e.payload as { count?: number }).count ?? 1) : 1,
      // Tokens recovery re-spent, so the overview sums them over 24 h from the rollups (never the events).
      amount: respent ? respent.respent_input_tokens + respent.respent_output_tokens : 0,
    } satisfies RollupRow);
    // The agent's own event numbers (src/telemetry/seq.ts): the highest, and one per distinct numbered event
    // (sumOnce: a redelivered event id counts once). seq_max - seq_seen events never arrived.
    const numbered = e.seq !== undefined;
    p.agents.push({
      ...who,
      first_seen: e.time,
      last_seen: e.time,
      listed_at: listedAt(e.time),
      seq_max: e.seq ?? null,
      alarm_first_at: e.type === ALARM_EVENT ? e.time : null,
      alarm_last_at: e.type === ALARM_EVENT ? e.time : null,
      ...sumOnce(sumKey(key), { seq_seen: numbered ? 1 : 0 }),
    } satisfies SqlRow<typeof schema.agents>);

    const run = runRowOf(e);
    if (run) p.fibers.push(run);

    // A Worker version's first event marks its deploy (folded to one row per version and batch).
    if (e.ver) p.deploys.push({ version: e.ver, first_seen: e.time } satisfies SqlRow<typeof schema.deploys>);

    if (c.incidentId) {
      const pl = e.payload as {
        attempt?: number;
        maxAttempts?: number;
        recoveryCount?: number;
        reason?: string;
        error?: string;
        finding?: string;
        fiberStatus?: string;
      };
      // Which status the event sets, or which overlay closes it, is the declared lifecycle (src/store/incident-facts.ts). Actions
      // and reconciliation observe from outside: they never move last_seen (first_seen is a minimum, so their
      // later time never does), and say no reason or attempt of the SDK's. A reason-less chat:recovery:failed is a
      // failure all the same (the SDK's own record says failed); the reason stays the last one given.
      const { status, closed, observed } = incidentFacts(e);
      const paused = e.type === "recovery.skipped_paused" ? ((e.payload as { decision?: string }).decision === "declined" ? "declined" : "held") : null;
      const reconciled = e.type === "incident.reconciled";
      // A failure's reason is only useful with its error: "handler_error: cannot resume ...".
      const reason = observed
        ? null
        : e.type === "fiber.recovery.failed"
          ? [pl.reason, pl.error].filter(Boolean).join(": ")
          : (pl.reason ?? (e.type === "session.error" ? pl.error : undefined) ?? null);
      p.incidents.push({
        incident_id: c.incidentId,
        kind: incidentKind(c.incidentId),
        ...who,
        status,
        ...stamp(schema.incidents, "status", status !== null, e),
        // The SDK's own counter: the highest attempt it reported (fiber recovery reports none).
        attempts: observed ? 0 : (pl.attempt ?? pl.recoveryCount ?? 0),
        max_attempts: observed ? null : (pl.maxAttempts ?? null),
        reason,
        ...stamp(schema.incidents, "reason", reason !== null, e),
        fiber_id: c.fiberId ?? null,
        // The user turn the incident recovers, where the sender named it (a chat recovery's events name the run they
        // recover, a different one per attempt): the turn's run, so the incident links to it.
        request_id: rootRequestIdOf(e) ?? c.requestId ?? null,
        confirmed_at: reconciled && pl.finding === "confirmed_open" ? e.time : null,
        closed_by: closed?.by ?? null,
        closed_by_reason: closed?.reason ?? null,
        ...stamp(schema.incidents, "closedBy", closed !== null, e),
        ...sumOnce(sumKey(key), {
          ...(respent ?? { respent_input_tokens: 0, respent_output_tokens: 0 }),
          attempt_events: !observed && ATTEMPT_TYPES.has(e.type) ? 1 : 0,
          // Older senders say no decision: theirs were held (fibers).
          pause_held: paused === "held" ? 1 : 0,
          pause_declined: paused === "declined" ? 1 : 0,
        }),
        pause_skipped_at: paused ? e.time : null,
        // Actions and reconciliation observe from outside: the deploy an incident opened under is the agent's word.
        version: observed ? null : (e.ver ?? null),
        version_at: observed || !e.ver ? null : e.time,
        first_seen: e.time,
        last_seen: observed ? null : e.time,
      } satisfies SqlRow<typeof schema.incidents>);
      if (respent) {
        const attempt = (e.payload as { attempt?: unknown }).attempt;
        p.usage.push({
          incident_id: c.incidentId,
          ...who,
          attempt: typeof attempt === "number" && Number.isInteger(attempt) && attempt >= 0 ? attempt : UNKNOWN_ATTEMPT,
          ...sumOnce(sumKey(key), { calls: 1, input_tokens: respent.respent_input_tokens, output_tokens: respent.respent_output_tokens }),
        } satisfies SqlRow<typeof schema.incidentUsage>);
      }
    }

    if ((e.type === "op.ambiguous" || e.type === "op.resolved") && c.opId) {
      const pl = e.payload as { opKind: string; detail?: string; resolution?: string; idempotent?: boolean; resultRef?: string };
      const resolution = e.type === "op.resolved" ? (pl.resolution ?? null) : null;
      p.ops.push({
        op_id: c.opId,
        ...who,
        session_name: c.sessionName ?? null,
        op_kind: pl.opKind,
        detail: pl.detail ?? null,
        idempotent: e.type === "op.ambiguous" && pl.idempotent !== undefined ? (pl.idempotent ? 1 : 0) : null,
        ambiguous_at: e.type === "op.ambiguous" ? e.time : null,
        resolution,
        resolution_ref: resolution !== null ? (pl.resultRef ?? null) : null,
        ...stamp(schema.opAmbiguities, "resolution", resolution !== null, e),
        first_seen: e.time,
        last_seen: e.time,
      } satisfies SqlRow<typeof schema.opAmbiguities>);
    }

    if (c.sessionName && SESSION_EVENT.test(e.type)) {
      const pl = e.payload as { turnSeq?: number; recoveryCount?: number; lastEventAt?: number };
      // Reconciliation only observes: its "ended, not reported" is a status, never the session's last event or last_seen.
      const observed = e.type === "session.reconciled";
      // The last status a session reported: the registry entry's `session`.
      const status = sessionStatusOf(e.type);
      p.sessions.push({
        session_name: c.sessionName,
        ...who,
        first_seen: e.time,
        last_seen: observed ? null : e.time,
        listed_at: observed ? null : listedAt(e.time),
        last_event_type: observed ? null : e.type,
        ...stamp(schema.sessions, "lastEvent", !observed, e),
        status,
        // A finding's status is dated at the last event it judged (its id sorts after that event's): any event from
        // after it, a resent idle one included, outranks it whatever the order of arrival.
        ...stamp(schema.sessions, "status", status !== null, observed && pl.lastEventAt ? { ...e, time: pl.lastEventAt } : e),
        recovery_count: e.type === "session.status_rescheduled" ? (pl.recoveryCount ?? null) : null,
        last_turn_seq: pl.turnSeq ?? null,
      } satisfies SqlRow<typeof schema.sessions>);
    }

    if (e.type === "recovery.paused" || e.type === "recovery.resumed" || e.type === "recovery.skipped_paused") {
      const pl = e.payload as { actor?: string; reason?: string; until?: number };
      const change = e.type !== "recovery.skipped_paused";
      p.recoveryPauses.push({
        ...who,
        pause_state: change ? (e.type === "recovery.paused" ? "paused" : "resumed") : null,
        paused_until: e.type === "recovery.paused" ? (pl.until ?? null) : null,
        pause_reason: change ? (pl.reason ?? null) : null,
        pause_actor: change ? (pl.actor ?? null) : null,
        ...stamp(schema.recoveryPauses, "pause", change, e),
        ...sumOnce(sumKey(key), { skipped: change ? 0 : 1 }),
        last_skipped_at: change ? null : e.time,
      } satisfies SqlRow<typeof schema.recoveryPauses>);
    }

    if (e.type === "backup.created" || e.type === "backup.restored" || e.type === "backup.expired") {
      const pl = e.payload as { handle: string; tenant: string; environment: string; sessionName: string; expiresAt?: number; bytes?: number };
      p.backups.push({
        handle: pl.handle,
        tenant: pl.tenant,
        environment: pl.environment,
        session_name: pl.sessionName,
        ...who,
        created_at: e.type === "backup.created" ? e.time : null,
        expires_at: pl.expiresAt ?? null,
        bytes: pl.bytes ?? null,
        restored_at: e.type === "backup.restored" ? e.time : null,
        expired_at: e.type === "backup.expired" ? e.time : null,
        last_seen: e.time,
      } satisfies SqlRow<typeof schema.workspaceBackups>);
    }
  }
  return out;
}

/** The user turn a chat event names as the one it serves (`rootRequestId`, stamped by the chat-turn folds), else null. */
function rootRequestIdOf(e: TelemetryEvent): string | null {
  const root = (e.payload as { rootRequestId?: unknown }).rootRequestId;
  return typeof root === "string" && root ? root : null;
}

/** The tokens a model.usage event says its incident's recovery re-spent; null for any other event, or usage outside recovery. */
function respentTokens(e: TelemetryEvent): { respent_input_tokens: number; respent_output_tokens: number } | null {
  if (e.type !== "model.usage" || !e.corr.incidentId) return null;
  const pl = e.payload as { inputTokens: number; outputTokens: number };
  return { respent_input_tokens: pl.inputTokens, respent_output_tokens: pl.outputTokens };
}

/**
 * The incident timeline an event belongs to: its reported incident id; else, for a fiber's event, the
 * id a recovery of that fiber derives; else, for a session event that names its turn, the id a recovery
 * of that turn derives. Derived with the same functions the agent side uses, so ids match.
 */
export function timelineId(e: TelemetryEvent): string | null {
  const c = e.corr;
  if (c.incidentId) return c.incidentId;
  // A chat turn's internal fiber has no fiber incident: its recovery is the turn's chat incident.
  if (c.fiberId && e.type.startsWith("fiber.") && (e.payload as { kind?: unknown }).kind !== "chat_turn")
    return fiberIncidentId(e.source.agentClass, e.source.agentName, c.fiberId);
  const turnSeq = (e.payload as { turnSeq?: unknown }).turnSeq;
  if (c.sessionName && SESSION_EVENT.test(e.type) && typeof turnSeq === "number") return turnIncidentId(e.source.agentClass, e.source.agentName, turnSeq);
  return null;
}
