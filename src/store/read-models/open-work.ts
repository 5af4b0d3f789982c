import type { RunKind } from "@agent-oncall/telemetry/contract";
import { UNCONFIRMED_STAMP } from "../outcome-stamps";
import { agents, incidents, reconciliations, runs, sessions } from "../schema";
import { names } from "../sql-names";
import { openNowSql } from "./incident-status";

/**
 * What the projections say is still going on, for reconciliation: runs with
 * no outcome, incidents still open, sessions last reported running or
 * rescheduled, and runs whose end the event could not say whole. Reconciliation
 * asks the agent itself and records what it found.
 */

/** A run the projections show as running. */
export type OpenRun = { kind: RunKind; runId: string; name: string | null; lastSeen: number; confirmedAt?: number | null };
/** An incident the projections show as open (the SDK's word open, no newer force idle or reconciliation closed it). `kind` is fiber | turn | chat. */
export type OpenIncident = {
  incidentId: string;
  kind: string;
  fiberId: string | null;
  requestId: string | null;
  lastSeen: number;
  confirmedAt?: number | null;
};
/** A session the projections show as running or rescheduled. */
export type OpenSession = { name: string; lastSeen: number };
export type OpenWork = { runs: OpenRun[]; incidents: OpenIncident[]; sessions: OpenSession[] };
export type AgentKey = { agentClass: string; agentName: string };

const F = names(runs);
const I = names(incidents);
const S = names(sessions);
const R = names(reconciliations);
const A = names(agents);

/** Not asked since ?1: agents reconciliation could not get an answer from do not take every pass. */
const notAskedSince = (t: string, c: { agentClass: string; agentName: string }) =>
  `NOT EXISTS (SELECT 1 FROM ${R.$table} WHERE ${R.agentClass} = ${t}.${c.agentClass} AND ${R.agentName} = ${t}.${c.agentName} AND ${R.askedAt} >= ?1)`;

/** A run stamped UNCONFIRMED_STAMP, as the partial index runs_unconfirmed states it (a literal, so the index applies). */
const UNCONFIRMED_SQL = `${F.outcomeAt} = ${UNCONFIRMED_STAMP}`;

/** Session statuses that claim work is under way. */
const BUSY_SESSION = ["running", "rescheduled"] as const;

/**
 * Agents with open work untouched since `before` (no event, no confirmation), or with a run whose end is
 * unconfirmed (UNCONFIRMED_STAMP, whatever its age), and not asked since then, oldest first, at most `limit`
 * agents (runs are taken oldest first to the minute, their index's order). Each source scans at most `scan` rows
 * of its status index, so a pass is bounded however much is stale; the rest
 * waits for the next pass (each pass closes or confirms what it finds, so the
 * oldest rows move on).
 */
export async function staleAgents(db: D1Database, before: number, limit: number, scan = limit * 10): Promise<AgentKey[]> {
  return (await staleAgentsSince(db, before, limit, scan)).map(({ agentClass, agentName }) => ({ agentClass, agentName }));
}

/** An agent key with the time that orders it in its list (staleAgents: its oldest open work; gap visits: last seen). */
export type TimedAgent = AgentKey & { t: number };

/** staleAgents with each agent's oldest untouched work (`t`), the order partitions merge by (merged.ts staleAgentsIn). */
export async function staleAgentsSince(db: D1Database, before: number, limit: number, scan = limit * 10): Promise<TimedAgent[]> {
  const [runs, open, busy, unconfirmed] = (await db.batch([
    db
      .prepare(
        `SELECT ${F.agentClass} AS agentClass, ${F.agentName} AS agentName, ${F.lastSeen} AS t FROM ${F.$table} INDEXED BY runs_open
         WHERE ${F.outcome} IS NULL AND ${F.listedAt} < ?1 AND ${F.lastSeen} < ?1 AND COALESCE(${F.confirmedAt}, 0) < ?1 AND ${notAskedSince(F.$table, F)}
         ORDER BY ${F.listedAt}, ${F.fiberId} LIMIT ?2`,
      )
      .bind(before, scan),
    db
      .prepare(
        `SELECT ${I.agentClass} AS agentClass, ${I.agentName} AS agentName, ${I.lastSeen} AS t FROM ${I.$table} INDEXED BY incidents_open
         WHERE ${openNowSql()} AND ${I.lastSeen} < ?1 AND COALESCE(${I.confirmedAt}, 0) < ?1 AND ${notAskedSince(I.$table, I)} ORDER BY ${I.lastSeen} LIMIT ?2`,
      )
      .bind(before, scan),
    db
      .prepare(
        `SELECT ${S.agentClass} AS agentClass, ${S.agentName} AS agentName, ${S.lastSeen} AS t FROM ${S.$table} INDEXED BY sessions_status
         WHERE ${S.status} IN (${BUSY_SESSION.map((s) => `'${s}'`).join(", ")}) AND ${S.listedAt} < ?1 AND ${S.lastSeen} < ?1 AND ${notAskedSince(S.$table, S)}
         ORDER BY ${S.listedAt} LIMIT ?2`,
      )
      .bind(before, scan),
    // Ended runs whose end the event could not say whole: their agents are asked what they record, whatever the
    // run's age (the SDK settled it before it published the event), once per window like every other source.
    db
      .prepare(
        `SELECT ${F.agentClass} AS agentClass, ${F.agentName} AS agentName, ${F.lastSeen} AS t FROM ${F.$table} INDEXED BY runs_unconfirmed
         WHERE ${UNCONFIRMED_SQL} AND ${notAskedSince(F.$table, F)} ORDER BY ${F.listedAt}, ${F.fiberId} LIMIT ?2`,
      )
      .bind(before, scan),
  ])) as D1Result<AgentKey & { t: number }>[];
  const oldest = new Map<string, AgentKey & { t: number }>();
  for (const r of [...runs!.results, ...open!.results, ...busy!.results, ...unconfirmed!.results]) {
    const k = JSON.stringify([r.agentClass, r.agentName]);
    const prev = oldest.get(k);
    if (!prev || r.t < prev.t) oldest.set(k, r);
  }
  return [...oldest.values()]
    .sort(oldestFirst)
    .slice(0, limit)
    .map(({ agentClass, agentName, t }) => ({ agentClass, agentName, t }));
}

/** Oldest first; ties by agent, so the order does not depend on which source or partition found it first. */
export const oldestFirst = (a: TimedAgent, b: TimedAgent): number =>
  a.t - b.t || (a.agentClass < b.agentClass ? -1 : a.agentClass > b.agentClass ? 1 : 0) || (a.agentName < b.agentName ? -1 : a.agentName > b.agentName ? 1 : 0);

/** One agent's open work, at most `limit` of each (oldest first: those most likely to be stale). */
export async function openWorkOf(db: D1Database, agent: AgentKey, limit = 200): Promise<OpenWork> {
  const [runs, open, busy] = (await db.batch([
    db
      .prepare(
        `SELECT ${F.kind} AS kind, ${F.fiberId} AS runId, ${F.name} AS name, ${F.lastSeen} AS lastSeen, ${F.confirmedAt} AS confirmedAt
         FROM ${F.$table} INDEXED BY runs_agent WHERE ${F.agentClass} = ?1 AND ${F.agentName} = ?2 AND ${F.outcome} IS NULL ORDER BY ${F.lastSeen} LIMIT ?3`,
      )
      .bind(agent.agentClass, agent.agentName, limit),
    db
      .prepare(
        `SELECT ${I.incidentId} AS incidentId, ${I.kind} AS kind, ${I.fiberId} AS fiberId, ${I.requestId} AS requestId, ${I.lastSeen} AS lastSeen, ${I.confirmedAt} AS confirmedAt
         FROM ${I.$table} INDEXED BY incidents_agent WHERE ${I.agentClass} = ?1 AND ${I.agentName} = ?2 AND ${openNowSql()} ORDER BY ${I.lastSeen} LIMIT ?3`,
      )
      .bind(agent.agentClass, agent.agentName, limit),
    db
      .prepare(
        `SELECT ${S.sessionName} AS name, ${S.lastSeen} AS lastSeen FROM ${S.$table}
         WHERE ${S.agentClass} = ?1 AND ${S.agentName} = ?2 AND ${S.status} IN (${BUSY_SESSION.map((s) => `'${s}'`).join(", ")}) ORDER BY ${S.lastSeen} LIMIT ?3`,
      )
      .bind(agent.agentClass, agent.agentName, limit),
  ])) as [D1Result<OpenRun>, D1Result<OpenIncident>, D1Result<OpenSession>];
  return { runs: runs.results, incidents: open.results, sessions: busy.results };
}

/** A run whose end its event could not say whole (UNCONFIRMED_STAMP): reconciliation reads the agent's record of it. */
export type UnconfirmedRun = { kind: RunKind; runId: string };

/** One agent's unconfirmed runs, at most `limit`, oldest activity first. */
export async function unconfirmedRunsOf(db: D1Database, agent: AgentKey, limit = 100): Promise<UnconfirmedRun[]> {
  const r = await db
    .prepare(
      `SELECT ${F.kind} AS kind, ${F.fiberId} AS runId FROM ${F.$table} INDEXED BY runs_agent
       WHERE ${F.agentClass} = ?1 AND ${F.agentName} = ?2 AND ${UNCONFIRMED_SQL} ORDER BY ${F.lastSeen} LIMIT ?3`,
    )
    .bind(agent.agentClass, agent.agentName, limit)
    .all<UnconfirmedRun>();
  return r.results;
}

/** When reconciliation last asked an agent, and what came of it. */
export type ReconciliationRow = { askedAt: number; findings: number; error: string | null };

/** The agent's last reconciliation, or null when it was never asked. */
export async function lastReconciliation(db: D1Database, agent: AgentKey): Promise<ReconciliationRow | null> {
  return db
    .prepare(`SELECT ${R.askedAt} AS askedAt, ${R.findings} AS findings, ${R.error} AS error FROM ${R.$table} WHERE ${R.agentClass} = ? AND ${R.agentName} = ?`)
    .bind(agent.agentClass, agent.agentName)
    .first<ReconciliationRow>();
}

/** An agent some of whose numbered events never arrived (`missing` = seq_max - seq_seen). */
export type GapAgent = AgentKey & { missing: number };

/**
 * Reconciliation's visits: agents with a sequence gap (see event-gaps.ts for the list the console shows) not asked
 * since `before`, most recently active first, at most `limit`. The gap has no index of its own: the query
 * reads the `scan` most recently active agents (agents_listed, newest first) and keeps those with a gap,
 * so a pass reads at most `scan` rows however large the fleet; an agent with a gap that has been quiet
 * longer than the `scan` most recent is not visited (its work is open-work reconciliation's).
 */
export async function gapAgentsDueForReconcile(db: D1Database, before: number, limit: number, scan = limit * 50): Promise<GapAgent[]> {
  return (await gapAgentsDueSince(db, before, limit, scan)).map(({ agentClass, agentName, missing }) => ({ agentClass, agentName, missing }));
}

/** gapAgentsDueForReconcile with each agent's last activity (`t`), the order partitions merge by (merged.ts). */
export async function gapAgentsDueSince(db: D1Database, before: number, limit: number, scan = limit * 50): Promise<(GapAgent & { t: number })[]> {
  const r = await db
    .prepare(
      `SELECT agentClass, agentName, missing, t FROM (
         SELECT ${A.agentClass} AS agentClass, ${A.agentName} AS agentName, ${A.seqMax} - ${A.seqSeen} AS missing, ${A.lastSeen} AS t
         FROM ${A.$table} INDEXED BY agents_listed ORDER BY ${A.listedAt} DESC LIMIT ?3
       ) a
       WHERE missing > 0 AND NOT EXISTS (SELECT 1 FROM ${R.$table} WHERE ${R.agentClass} = a.agentClass AND ${R.agentName} = a.agentName AND ${R.askedAt} >= ?1)
       ORDER BY t DESC, agentClass, agentName LIMIT ?2`,
    )
    .bind(before, limit, scan)
    .all<GapAgent & { t: number }>();
  return r.results;
}

/**
 * The console's outcome for each of `ids` it knows for this agent; ids it never heard of are absent. Null: the
 * console awaits the agent's word on it, a run still open or one whose end its event could not say whole
 * (UNCONFIRMED_STAMP: reconciliation reads the agent's record of it). One primary-key lookup per id.
 */
export async function knownRunOutcomes(db: D1Database, agent: AgentKey, ids: readonly string[]): Promise<Map<string, string | null>> {
  if (!ids.length) return new Map();
  const r = await db
    .prepare(
      `SELECT ${F.fiberId} AS runId, CASE WHEN ${F.outcomeAt} = ${UNCONFIRMED_STAMP} THEN NULL ELSE ${F.outcome} END AS outcome FROM ${F.$table}
       WHERE ${F.agentClass} = ?1 AND ${F.agentName} = ?2 AND ${F.fiberId} IN (SELECT value FROM json_each(?3))`,
    )
    .bind(agent.agentClass, agent.agentName, JSON.stringify(ids.slice(0, 500)))
    .all<{ runId: string; outcome: string | null }>();
  return new Map(r.results.map((x) => [x.runId, x.outcome]));
}
