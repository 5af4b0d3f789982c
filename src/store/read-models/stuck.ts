import { z } from "zod";
import { incidents, reconciliations, runs } from "../schema";
import { names } from "../sql-names";
import { oneOf, parseFilters, text } from "./filters";
import { openNowSql } from "./incident-status";
import type { SortValue } from "./paging";

/**
 * Stuck detection: work that should be moving and is not, computed from the projections (and from what the
 * agent last answered reconciliation). Each rule is one bounded, indexed query; nothing is stored, so a
 * finding disappears as soon as the projections say the work moved, ended or was force-idled.
 *
 * - no_progress: a run with no outcome whose last event is older than N minutes. A run the agent confirmed
 *   alive is still stuck: "running, no progress" is exactly what users report; the entry says when it was confirmed.
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

/** What every finding carries: who, what and since when (epoch ms). */
type StuckBase = {
  agentClass: string;
  agentName: string;
  subjectKind: "run" | "incident" | "agent" | "session";
  subjectId: string;
  /** epoch ms the condition started (e.g. last progress event) */
  since: number;
};

/**
 * One finding: its rule and the facts that made it fire, as data (epoch ms, counts, kinds). The console
 * phrases them (console/stuck-words.ts); the store says what is true, not how to say it.
 */
export type StuckEntry = StuckBase &
  (
    | {
        rule: "no_progress";
        /** the run's kind as the projection stores it (fiber, managed_fiber, task, chat_turn) */
        runKind: string;
        /** the run's name; null when it has none */
        runName: string | null;
        /** epoch ms of its last progress event */
        lastSeen: number;
        /** epoch ms reconciliation last confirmed it alive, when that was at or after its last event; else null */
        confirmedAt: number | null;
        /** epoch ms a waiting run was due to wake (and has not); null when it was not waiting */
        wakeAt: number | null;
      }
    | {
        rule: "incident_no_attempt";
        incidentKind: string;
        /** epoch ms of the incident's last event */
        lastSeen: number;
        attempts: number;
        /** epoch ms the agent last reported it recovering, when that was at or after its last event; else null */
        confirmedAt: number | null;
      }
    | { rule: "alarm_overdue" /** epoch ms reconciliation asked */; askedAt: number /** epoch ms the alarm was due */; nextAlarmAt: number }
    | {
        rule: "skipped_no_reason";
        /** what was skipped: a recovery (subject: the incident) or a chat turn the SDK finished as "skipped" (subject: the run) */
        skipped: "recovery" | "chat_turn";
        /** the incident's kind for a skipped recovery; null for a chat turn */
        incidentKind: string | null;
      }
  );

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

/** The list's length for a filter: default 200, 1 to MAX_LIMIT. */
export const stuckLimit = (filter: StuckFilter): number => Math.max(1, Math.min(MAX_LIMIT, Math.floor(filter.limit ?? 200)));

/**
 * One finding and its place in its statement's order. Each statement walks one index (INDEXED BY) newest first and
 * stops at `limit`, so its rows come in the order of all that index's columns, descending: the ORDER BY names only
 * the first ones (naming the rest made SQLite sort the trailing columns, reading more rows), and `key` is the whole
 * index key, which is the order partitions' rows merge by.
 */
export type KeyedStuck = { key: SortValue[]; entry: StuckEntry };

/**
 * Every stuck finding now, newest-stuck first, at most `limit` (default 200), optionally one rule / one agent
 * class. Each rule reads one index range (at most `limit` matches each); alarm_overdue reads the
 * reconciliations table (one row per agent asked).
 */
export async function listStuck(db: D1Database, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, filter: StuckFilter = {}): Promise<StuckEntry[]> {
  return finishStuck(await stuckReads(db, now, config, filter), stuckLimit(filter));
}

/**
 * The findings of each of listStuck's statements, in that statement's order (at most `limit` each): the same
 * statements, in the same order, for every database given the same filter, so partitions' reads merge statement by
 * statement (merged-overview.ts listStuckIn) before finishStuck.
 */
export async function stuckReads(db: D1Database, now: number, config: StuckConfig, filter: StuckFilter): Promise<KeyedStuck[][]> {
  const limit = stuckLimit(filter);
  const wants = (r: StuckRule) => filter.rule === undefined || filter.rule === r;
  const cls = filter.agentClass;
  const byClass = (col: string, n: number) => (cls === undefined ? "" : ` AND ${col} = ?${n}`);
  const binds = (...v: unknown[]) => (cls === undefined ? v : [...v, cls]);

  const statements: { rule: StuckRule; stmt: D1PreparedStatement; map: (row: never) => StuckEntry; keyOf: (row: never) => SortValue[] }[] = [];

  if (wants("no_progress")) {
    const before = now - config.no_progress * MIN;
    // In runs_open's order: last activity to the minute (listed_at), newest first, so the scan stops at `limit`
    // matches with no sort (a longer ORDER BY makes SQLite sort); the minute that reaches the limit gives its runs by
    // id. The list is sorted exactly by finishStuck.
    // A waiting Tasks run makes no progress by design until it wakes: stuck only once its wake is overdue too.
    statements.push({
      rule: "no_progress",
      stmt: db
        .prepare(
          `SELECT ${F.fiberId} AS runId, ${F.kind} AS kind, ${F.name} AS name, ${F.agentClass} AS agentClass, ${F.agentName} AS agentName,
             ${F.lastSeen} AS lastSeen, ${F.confirmedAt} AS confirmedAt, ${F.phase} AS phase, ${F.wakeAt} AS wakeAt, ${F.listedAt} AS listedAt
           FROM ${F.$table} INDEXED BY runs_open
           WHERE ${F.outcome} IS NULL AND ${F.listedAt} < ?1 AND ${F.lastSeen} < ?1
             AND NOT (COALESCE(${F.phase}, '') = 'waiting' AND (${F.wakeAt} IS NULL OR ${F.wakeAt} >= ?1))${byClass(F.agentClass, 3)}
           ORDER BY ${F.listedAt} DESC, ${F.fiberId} DESC LIMIT ?2`,
        )
        .bind(...binds(before, limit)),
      map: noProgress,
      keyOf: (r: RunStuck & { listedAt: number }) => [r.listedAt, r.runId, r.agentClass, r.agentName],
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
      map: noAttempt,
      keyOf: incidentKey,
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
           ORDER BY ${R.nextAlarmAt} DESC, ${R.agentClass} DESC, ${R.agentName} DESC LIMIT ?2`,
        )
        .bind(...binds(config.alarm_overdue * MIN, limit)),
      map: alarmOverdue,
      keyOf: (r: AlarmStuck) => [r.nextAlarmAt, r.agentClass, r.agentName],
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
      map: recoverySkipped,
      keyOf: incidentKey,
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
      map: turnSkipped,
      keyOf: (r: TurnSkipped) => [r.lastSeen, r.runId, r.agentClass, r.agentName],
    });
  }

  if (!statements.length) return [];
  const results = await db.batch(statements.map((s) => s.stmt));
  return results.map((res, i) => res.results.map((row) => ({ key: statements[i]!.keyOf(row as never), entry: statements[i]!.map(row as never) })));
}

/** The list from each statement's findings: all of them in the list's order (compareStuck), cut at `limit`. */
export function finishStuck(reads: KeyedStuck[][], limit: number): StuckEntry[] {
  return reads
    .flat()
    .map((x) => x.entry)
    .sort(compareStuck)
    .slice(0, limit);
}

const incidentKey = (r: IncidentStuck): SortValue[] => [r.lastSeen, r.incidentId, r.agentClass, r.agentName];

/** The stuck list's order: newest-stuck first; ties by agent and subject so the order is stable (merged lists use it too). */
export const compareStuck = (a: StuckEntry, b: StuckEntry): number =>
  b.since - a.since || a.agentClass.localeCompare(b.agentClass) || a.agentName.localeCompare(b.agentName) || a.subjectId.localeCompare(b.subjectId);

/** How many stuck findings there are now, up to `cap` (the overview's card). */
export async function countStuck(db: D1Database, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, cap = 200): Promise<{ n: number; capped: boolean }> {
  const found = await listStuck(db, now, config, { limit: cap });
  return { n: found.length, capped: found.length >= cap };
}

function noProgress(r: RunStuck): StuckEntry {
  const overdueWake = r.phase === "waiting" && r.wakeAt !== null;
  const confirmed = r.confirmedAt !== null && r.confirmedAt >= r.lastSeen;
  return {
    rule: "no_progress",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "run",
    subjectId: r.runId,
    since: overdueWake ? Math.max(r.lastSeen, r.wakeAt!) : r.lastSeen,
    runKind: r.kind,
    runName: r.name && r.name !== "(unnamed)" ? r.name : null,
    lastSeen: r.lastSeen,
    confirmedAt: confirmed ? r.confirmedAt : null,
    wakeAt: overdueWake ? r.wakeAt : null,
  };
}

function noAttempt(r: IncidentStuck): StuckEntry {
  const confirmed = r.confirmedAt !== null && r.confirmedAt >= r.lastSeen;
  return {
    rule: "incident_no_attempt",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "incident",
    subjectId: r.incidentId,
    since: r.lastSeen,
    incidentKind: r.kind,
    lastSeen: r.lastSeen,
    attempts: r.attempts,
    confirmedAt: confirmed ? r.confirmedAt : null,
  };
}

function alarmOverdue(r: AlarmStuck): StuckEntry {
  return {
    rule: "alarm_overdue",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "agent",
    subjectId: `${r.agentClass}/${r.agentName}`,
    since: r.nextAlarmAt,
    askedAt: r.askedAt,
    nextAlarmAt: r.nextAlarmAt,
  };
}

function recoverySkipped(r: IncidentStuck): StuckEntry {
  return {
    rule: "skipped_no_reason",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "incident",
    subjectId: r.incidentId,
    since: r.statusAt,
    skipped: "recovery",
    incidentKind: r.kind,
  };
}

function turnSkipped(r: TurnSkipped): StuckEntry {
  return {
    rule: "skipped_no_reason",
    agentClass: r.agentClass,
    agentName: r.agentName,
    subjectKind: "run",
    subjectId: r.runId,
    since: r.outcomeAt ?? r.lastSeen,
    skipped: "chat_turn",
    incidentKind: null,
  };
}
