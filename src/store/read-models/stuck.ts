import { z } from "zod";
import { incidents, reconciliations, runs } from "../schema";
import { names } from "../sql-names";
import { oneOf, parseFilters, text } from "./filters";
import { openNowSql } from "./incident-status";

/**
 * Stuck detection: work that should be moving and is not, computed from the projections (and from what the
 * agent last answered reconciliation). Each rule is one bounded, indexed query; nothing is stored, so a
 * finding disappears as soon as the projections say the work moved, ended or was force-idled.
 *
 * - no_progress: a run with no outcome whose last event is older than N minutes. A run the agent confirmed
 *   alive is still stuck: "running, no progress" is exactly what users report; the detail says it was confirmed.
 * - incident_no_attempt: a recovery incident still open with no event (no attempt) for N minutes.
 * - alarm_overdue: when reconciliation last asked the agent, its next alarm was more than N minutes in the past.
 * - skipped_no_reason: within the last N minutes, a recovery skipped with no reason given, or a chat turn the
 *   SDK finished as "skipped" (its only word).
 */

export const STUCK_RULES = ["no_progress", "incident_no_attempt", "alarm_overdue", "skipped_no_reason"] as const;
export type StuckRule = (typeof STUCK_RULES)[number];
/** Minutes per rule (alarm_overdue: grace after the alarm was due; skipped_no_reason: how far back to look). */
export type StuckConfig = Record<StuckRule, number>;

export const DEFAULT_STUCK_CONFIG: StuckConfig = { no_progress: 15, incident_no_attempt: 15, alarm_overdue: 5, skipped_no_reason: 24 * 60 };

/** The environment variable that sets each rule's minutes (parsed in worker/config.ts). */
export const STUCK_CONFIG_VARS: Record<StuckRule, string> = {
  no_progress: "STUCK_NO_PROGRESS_MINUTES",
  incident_no_attempt: "STUCK_INCIDENT_NO_ATTEMPT_MINUTES",
  alarm_overdue: "STUCK_ALARM_OVERDUE_MINUTES",
  skipped_no_reason: "STUCK_SKIPPED_NO_REASON_MINUTES",
};

export type StuckEntry = {
  rule: StuckRule;
  agentClass: string;
  agentName: string;
  subjectKind: "run" | "incident" | "agent" | "session";
  subjectId: string;
  /** epoch ms the condition started (e.g. last progress event) */
  since: number;
  /** one sentence: which rule fired and why, for people */
  detail: string;
};

export type StuckFilter = { rule?: StuckRule; agentClass?: string; limit?: number };

/** The list's filters as they come from a URL ("" is unset). */
export const stuckFilters = z.object({ rule: oneOf("rule", STUCK_RULES), agentClass: text("agentClass") });

/** Validates the list's filters; a BadRequest (400) that names the rules otherwise. */
export function parseStuckFilters(input: { rule?: unknown; agentClass?: unknown }): { rule?: StuckRule; agentClass?: string } {
  return parseFilters(stuckFilters, input);
}

/** Validates a rule name from a URL ("" is no rule); a BadRequest (400) that names the rules otherwise. */
export function parseStuckRule(v: unknown): StuckRule | undefined {
  return parseStuckFilters({ rule: v }).rule;
}

const F = names(runs);
const I = names(incidents);
const R = names(reconciliations);
const MIN = 60_000;
const MAX_LIMIT = 500;

const at = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
/** "45s", "23m", "2h 5m", "3d 4h": how long a condition has held. */
export function stuckFor(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  if (m < 24 * 60) return `${Math.floor(m / 60)}h${m % 60 ? ` ${m % 60}m` : ""}`;
  return `${Math.floor(m / 1440)}d${Math.floor((m % 1440) / 60) ? ` ${Math.floor((m % 1440) / 60)}h` : ""}`;
}
const threshold = (min: number) => stuckFor(min * MIN);

const KIND_WORDS: Record<string, string> = { fiber: "fiber", managed_fiber: "managed fiber", task: "task run", chat_turn: "chat turn" };

type RunStuck = {
  runId: string;
  kind: string;
  name: string;
  agentClass: string;
  agentName: string;
  lastSeen: number;
  confirmedAt: number | null;
  phase: string | null;
  wakeAt: number | null;
};
type IncidentStuck = {
  incidentId: string;
  kind: string;
  agentClass: string;
  agentName: string;
  lastSeen: number;
  confirmedAt: number | null;
  attempts: number;
  statusAt: number;
};
type AlarmStuck = { agentClass: string; agentName: string; askedAt: number; nextAlarmAt: number };
type TurnSkipped = { runId: string; agentClass: string; agentName: string; outcomeAt: number | null; lastSeen: number };

/**
 * Every stuck finding now, newest-stuck first, at most `limit` (default 200), optionally one rule / one agent
 * class. Each rule reads one index range (at most `limit` matches each); alarm_overdue reads the
 * reconciliations table (one row per agent asked).
 */
export async function listStuck(db: D1Database, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, filter: StuckFilter = {}): Promise<StuckEntry[]> {
  const limit = Math.max(1, Math.min(MAX_LIMIT, Math.floor(filter.limit ?? 200)));
  const wants = (r: StuckRule) => filter.rule === undefined || filter.rule === r;
  const cls = filter.agentClass;
  const byClass = (col: string, n: number) => (cls === undefined ? "" : ` AND ${col} = ?${n}`);
  const binds = (...v: unknown[]) => (cls === undefined ? v : [...v, cls]);

  const statements: { rule: StuckRule; stmt: D1PreparedStatement; map: (row: never) => StuckEntry }[] = [];

  if (wants("no_progress")) {
    const before = now - config.no_progress * MIN;
    // A waiting Tasks run makes no progress by design until it wakes: stuck only once its wake is overdue too.
    statements.push({
      rule: "no_progress",
      stmt: db
        .prepare(
          `SELECT ${F.fiberId} AS runId, ${F.kind} AS kind, ${F.name} AS name, ${F.agentClass} AS agentClass, ${F.agentName} AS agentName,
             ${F.lastSeen} AS lastSeen, ${F.confirmedAt} AS confirmedAt, ${F.phase} AS phase, ${F.wakeAt} AS wakeAt
           FROM ${F.$table} INDEXED BY runs_open
           WHERE ${F.outcome} IS NULL AND ${F.lastSeen} < ?1
             AND NOT (COALESCE(${F.phase}, '') = 'waiting' AND (${F.wakeAt} IS NULL OR ${F.wakeAt} >= ?1))${byClass(F.agentClass, 3)}
           ORDER BY ${F.lastSeen} DESC LIMIT ?2`,
        )
        .bind(...binds(before, limit)),
      map: (r: RunStuck) => noProgress(r, now, config),
    });
  }

  if (wants("incident_no_attempt")) {
    const before = now - config.incident_no_attempt * MIN;
    statements.push({
      rule: "incident_no_attempt",
      stmt: db
        .prepare(
          `SELECT ${I.incidentId} AS incidentId, ${I.kind} AS kind, ${I.agentClass} AS agentClass, ${I.agentName} AS agentName,
             ${I.lastSeen} AS lastSeen, ${I.confirmedAt} AS confirmedAt, ${I.attempts} AS attempts, ${I.statusAt} AS statusAt
           FROM ${I.$table} INDEXED BY incidents_open
           WHERE ${openNowSql()} AND ${I.lastSeen} < ?1${byClass(I.agentClass, 3)}
           ORDER BY ${I.lastSeen} DESC LIMIT ?2`,
        )
        .bind(...binds(before, limit)),
      map: (r: IncidentStuck) => noAttempt(r, now, config),
    });
  }

  if (wants("alarm_overdue")) {
    // One row per agent reconciliation asked; an answer without an alarm (null) never matches.
    statements.push({
      rule: "alarm_overdue",
      stmt: db
        .prepare(
          `SELECT ${R.agentClass} AS agentClass, ${R.agentName} AS agentName, ${R.askedAt} AS askedAt, ${R.nextAlarmAt} AS nextAlarmAt
           FROM ${R.$table}
           WHERE ${R.error} IS NULL AND ${R.nextAlarmAt} IS NOT NULL AND ${R.nextAlarmAt} < ${R.askedAt} - ?1${byClass(R.agentClass, 3)}
           ORDER BY ${R.nextAlarmAt} DESC LIMIT ?2`,
        )
        .bind(...binds(config.alarm_overdue * MIN, limit)),
      map: (r: AlarmStuck) => alarmOverdue(r, now, config),
    });
  }

  if (wants("skipped_no_reason")) {
    const since = now - config.skipped_no_reason * MIN;
    // A recovery skipped without a reason: the skip itself gave none (a reason kept from an earlier event is not the skip's).
    statements.push({
      rule: "skipped_no_reason",
      stmt: db
        .prepare(
          `SELECT ${I.incidentId} AS incidentId, ${I.kind} AS kind, ${I.agentClass} AS agentClass, ${I.agentName} AS agentName,
             ${I.lastSeen} AS lastSeen, ${I.confirmedAt} AS confirmedAt, ${I.attempts} AS attempts, ${I.statusAt} AS statusAt
           FROM ${I.$table} INDEXED BY incidents_skipped
           WHERE ${I.status} = 'skipped' AND ${I.lastSeen} >= ?1
             AND (${I.reason} IS NULL OR ${I.reason} = '' OR ${I.reasonEventId} IS NOT ${I.statusEventId})${byClass(I.agentClass, 3)}
           ORDER BY ${I.lastSeen} DESC LIMIT ?2`,
        )
        .bind(...binds(since, limit)),
      map: (r: IncidentStuck) => recoverySkipped(r, config),
    });
    // A chat turn the SDK finished as "skipped": ingest keeps that word as its reason, and no other reason exists.
    statements.push({
      rule: "skipped_no_reason",
      stmt: db
        .prepare(
          `SELECT ${F.fiberId} AS runId, ${F.agentClass} AS agentClass, ${F.agentName} AS agentName, ${F.outcomeAt} AS outcomeAt, ${F.lastSeen} AS lastSeen
           FROM ${F.$table} INDEXED BY runs_skipped_turns
           WHERE ${F.kind} = 'chat_turn' AND ${F.outcome} = 'cancelled' AND ${F.reason} = 'skipped' AND ${F.lastSeen} >= ?1${byClass(F.agentClass, 3)}
           ORDER BY ${F.lastSeen} DESC LIMIT ?2`,
        )
        .bind(...binds(since, limit)),
      map: (r: TurnSkipped) => turnSkipped(r, config),
    });
  }

  if (!statements.length) return [];
  const results = await db.batch(statements.map((s) => s.stmt));
  const out: StuckEntry[] = [];
  results.forEach((res, i) => {
    for (const row of res.results) out.push(statements[i]!.map(row as never));
  });
  // Newest-stuck first; ties by agent and subject so the order is stable.
  out.sort(
    (a, b) => b.since - a.since || a.agentClass.localeCompare(b.agentClass) || a.agentName.localeCompare(b.agentName) || a.subjectId.localeCompare(b.subjectId),
  );
  return out.slice(0, limit);
}

/** How many stuck findings there are now, up to `cap` (the overview's card). */
export async function countStuck(db: D1Database, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, cap = 200): Promise<{ n: number; capped: boolean }> {
  const found = await listStuck(db, now, config, { limit: cap });
  return { n: found.length, capped: found.length >= cap };
}

function noProgress(r: RunStuck, now: number, config: StuckConfig): StuckEntry {
  const what = `${KIND_WORDS[r.kind] ?? r.kind}${r.name && r.name !== "(unnamed)" ? ` "${r.name}"` : ""}`;
  const overdueWake = r.phase === "waiting" && r.wakeAt !== null;
  const since = overdueWake ? Math.max(r.lastSeen, r.wakeAt!) : r.lastSeen;
  const confirmed = r.confirmedAt !== null && r.confirmedAt >= r.lastSeen;
  const tail = overdueWake
    ? `it was waiting to wake at ${at(r.wakeAt!)} and has not`
    : confirmed
      ? `it is still running in the agent (confirmed ${at(r.confirmedAt!)}), so it is running and making no progress`
      : "no reconciliation has confirmed it is still alive";
  return {
    rule: "no_progress",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "run",
    subjectId: r.runId,
    since,
    detail: `No progress: this ${what} has had no progress event since ${at(r.lastSeen)} (${stuckFor(now - r.lastSeen)}, threshold ${threshold(config.no_progress)}); ${tail}.`,
  };
}

function noAttempt(r: IncidentStuck, now: number, config: StuckConfig): StuckEntry {
  const confirmed = r.confirmedAt !== null && r.confirmedAt >= r.lastSeen;
  const attempts = r.attempts > 0 ? `after ${r.attempts} attempt${r.attempts === 1 ? "" : "s"}` : "with no attempt reported";
  return {
    rule: "incident_no_attempt",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "incident",
    subjectId: r.incidentId,
    since: r.lastSeen,
    detail: `Recovery not attempted: this ${r.kind} incident is open ${attempts} and nothing has happened since ${at(r.lastSeen)} (${stuckFor(now - r.lastSeen)}, threshold ${threshold(config.incident_no_attempt)})${confirmed ? `; the agent still reported it as recovering at ${at(r.confirmedAt!)}` : ""}.`,
  };
}

function alarmOverdue(r: AlarmStuck, _now: number, config: StuckConfig): StuckEntry {
  return {
    rule: "alarm_overdue",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "agent",
    subjectId: `${r.agentClass}/${r.agentName}`,
    since: r.nextAlarmAt,
    detail: `Alarm overdue: when the console asked at ${at(r.askedAt)}, the agent's alarm had been due since ${at(r.nextAlarmAt)} (${stuckFor(r.askedAt - r.nextAlarmAt)} late, grace ${threshold(config.alarm_overdue)}) and had not run; opening the agent page asks again.`,
  };
}

function recoverySkipped(r: IncidentStuck, config: StuckConfig): StuckEntry {
  return {
    rule: "skipped_no_reason",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "incident",
    subjectId: r.incidentId,
    since: r.statusAt,
    detail: `Skipped without a reason: the agent skipped recovering this ${r.kind} incident at ${at(r.statusAt)} and gave no reason (looking back ${threshold(config.skipped_no_reason)}).`,
  };
}

function turnSkipped(r: TurnSkipped, config: StuckConfig): StuckEntry {
  const when = r.outcomeAt ?? r.lastSeen;
  return {
    rule: "skipped_no_reason",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "run",
    subjectId: r.runId,
    since: when,
    detail: `Skipped without a reason: the SDK finished this chat turn as "skipped" at ${at(when)} and no reason came with it (looking back ${threshold(config.skipped_no_reason)}).`,
  };
}
