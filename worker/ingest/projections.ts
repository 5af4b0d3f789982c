import { packBodies } from "@agent-oncall/telemetry";
import { INCIDENT_STATUS_RANK } from "@agent-oncall/telemetry/contract";
import { HEARD_FROM_STEP_MS } from "../../src/store/heard-from";
import { foldRows, projection, type Row, upsertSqls } from "../../src/store/merge";
import { RUNS_LEAVE_SQL, RUNS_LEAVING_UPSERT_ONLY, RUNS_SPEC, splitHealthyCompleted } from "../../src/store/run-rows";
import * as schema from "../../src/store/schema";
import { names } from "../../src/store/sql-names";
import { SEGMENTS_SQL, type SegmentRow } from "./segments";

/**
 * The projections ingest maintains, as merge specs (see merge.ts). Table
 * shapes come from src/store/schema.ts; these say only how facts combine,
 * in the schema's column keys (projection() resolves the SQL names).
 *
 * Every key includes the reporting agent (class + name): an event can only
 * merge into rows of the agent it names, so a producer claiming another
 * agent's fiber, incident, op, session or backup id gets rows of its own and
 * never changes the other agent's. Class and name are key columns, so they
 * always come together from one row (never two independent maxima).
 */
const RC = names(schema.reconciliations);
const AG = names(schema.agents);

/**
 * SQL true when reconciliation's last ask of the agents row of `t` found its events blocked (pipeline set) after
 * the row's last activity: then any later event is stored at once, so the blocked list drops it.
 */
const flaggedBefore = (t: string) =>
  `EXISTS (SELECT 1 FROM ${RC.$table} WHERE ${RC.agentClass} = ${t}.${AG.agentClass} AND ${RC.agentName} = ${t}.${AG.agentName} AND ${RC.pipeline} IS NOT NULL AND ${RC.askedAt} > ${t}.${AG.lastSeen})`;

export const SPECS = {
  // The agent registry: written when something a person sees of the agent changes, not per message. Its last
  // activity (lastSeen, and listedAt, its minute, which the lists' indexes hold) moves only by a step of
  // HEARD_FROM_STEP_MS (src/store/heard-from.ts), or by any amount while the agent is flagged blocked and was last
  // heard from before the ask (blocked-agents.ts: an event since the ask takes it off that list). Both move in one
  // statement (one unit), so the row and its two list entries are written about once per step per active agent.
  // seqMax / seqSeen: the agent's own event numbers (src/telemetry/seq.ts); seqMax - seqSeen never arrived. Only
  // numbered events (the outbox path; the tail carries no numbers) move them, so only those cost a row per message.
  agents: projection(schema.agents, {
    key: ["agentClass", "agentName"],
    columns: {
      firstSeen: "min",
      lastSeen: { coarse: HEARD_FROM_STEP_MS, or: flaggedBefore },
      seqMax: "max",
      seqSeen: "sum",
      listedAt: { coarse: HEARD_FROM_STEP_MS, of: "lastSeen", or: flaggedBefore },
      alarmFirstAt: "min",
      alarmLastAt: "max",
    },
    // Where the activity moves, the row's other changes ride in the same row write.
    withPlain: "listedAt",
  }),
  // Runs of every kind: src/store/run-rows.ts declares how they merge (the console folds R2 history with it too).
  fibers: RUNS_SPEC,
  incidents: projection(schema.incidents, {
    key: ["incidentId", "agentClass", "agentName"],
    columns: {
      kind: "max",
      status: { latest: "status" },
      attempts: "max",
      maxAttempts: "max",
      reason: { latest: "reason" },
      fiberId: "max",
      requestId: "max",
      confirmedAt: "max",
      firstSeen: "min",
      lastSeen: "max",
      // What closed it from outside the SDK (force idle, reconciliation): an overlay beside status and reason,
      // which keep only what the SDK said. Whether it applies is derived when read (read-models/incident-status.ts).
      closedBy: { latest: "closedBy" },
      closedByReason: { latest: "closedBy" },
      // Tokens its recovery attempts re-spent: model.usage events carrying the incident id, each counted once.
      respentInputTokens: "sum",
      respentOutputTokens: "sum",
      // Attempts counted from its own events (attempt-step types), each event once: beside the SDK's counter.
      attemptEvents: "sum",
      // Recoveries a pause stopped (recovery.skipped_paused), each event once, and the latest one's time.
      pauseHeld: "sum",
      pauseDeclined: "sum",
      pauseSkippedAt: "max",
      // The deploy it opened under: the version of its earliest versioned event (by that event's time).
      version: { earliest: "versionAt" },
      versionAt: "min",
    },
    // Exhausted is final (INCIDENT_STATUS_RANK): it outranks any later status word, and the exhaustion's reason
    // outranks any later reason. Every row whose status is exhausted carries a reason (chat.recovery.exhausted
    // requires one, session.error has its error), so a merged row's status says whether its reason came from an
    // exhaustion, and the merge stays order-independent.
    ranks: {
      status: { by: "status", values: INCIDENT_STATUS_RANK as Record<string, number> },
      reason: { by: "status", values: INCIDENT_STATUS_RANK as Record<string, number> },
    },
    // A status change and the rest of the row in one row write.
    withPlain: "status",
    // An incident first seen through an event that says nothing of status is open until one does.
    // last_seen 0 only for one nothing but reconciliation or an action ever reported: 0 never wins the maximum.
    defaults: { status: "'open'", statusAt: "0", statusEventId: "''", lastSeen: "0" },
  }),
  // What each recovery attempt re-spent (model.usage events carrying the incident id), each event counted once.
  usage: projection(schema.incidentUsage, {
    key: ["incidentId", "agentClass", "agentName", "attempt"],
    columns: { calls: "sum", inputTokens: "sum", outputTokens: "sum" },
  }),
  // One row per Worker version, written when it is first seen (and only again for an earlier event of it).
  deploys: projection(schema.deploys, { key: ["version"], columns: { firstSeen: "min" } }),
  ops: projection(schema.opAmbiguities, {
    key: ["opId", "agentClass", "agentName"],
    columns: {
      sessionName: "max",
      opKind: "max",
      detail: "max",
      idempotent: "max",
      ambiguousAt: "min",
      resolution: { latest: "resolution" },
      resolutionRef: { latest: "resolution" },
      firstSeen: "min",
      lastSeen: "max",
    },
  }),
  backups: projection(schema.workspaceBackups, {
    key: ["handle", "agentClass", "agentName"],
    columns: {
      tenant: "max",
      environment: "max",
      sessionName: "max",
      createdAt: "min",
      expiresAt: "max",
      bytes: "max",
      restoredAt: "max",
      expiredAt: "min",
      lastSeen: "max",
    },
  }),
  // One row per agent an operator paused: the latest pause or resume wins; held-back recoveries add up.
  recoveryPauses: projection(schema.recoveryPauses, {
    key: ["agentClass", "agentName"],
    columns: {
      pauseState: { latest: "pause" },
      pausedUntil: { latest: "pause" },
      pauseReason: { latest: "pause" },
      pauseActor: { latest: "pause" },
      skipped: "sum",
      lastSkippedAt: "max",
    },
  }),
  sessions: projection(schema.sessions, {
    key: ["sessionName", "agentClass", "agentName"],
    columns: {
      firstSeen: "min",
      lastSeen: "max",
      listedAt: "max",
      lastEventType: { latest: "lastEvent" },
      status: { latest: "status" },
      recoveryCount: "max",
      lastTurnSeq: "max",
    },
    // A status change and the rest of the row in one row write.
    withPlain: "status",
    // For a session nothing but reconciliation ever reported (its rows deleted meanwhile): last_seen 0 never
    // wins the maximum, and a last event stamped 0 gives way to any real one.
    defaults: { recoveryCount: "0", lastSeen: "0", listedAt: "0", lastEventType: "'session.reconciled'", lastEventAt: "0", lastEventEventId: "''" },
  }),
};

export type ProjectionName = keyof typeof SPECS;

const R = names(schema.eventRollups);
const G = names(schema.eventSegments);
const RS = names(schema.respentRollups);

/**
 * Adds each incoming event to its rollup bucket (`n` occurrences: 1, or an alarm event's count). It counts what it is
 * given: ingest gives it only events the idempotency ledger does not hold (ledger.ts), in the transaction that files
 * them there, so a redelivered event counts zero times. Events inside one call must be distinct (firstById).
 */
const ROLLUPS_SQL = `INSERT INTO ${R.$table} (${R.bucket}, ${R.type}, ${R.dim}, ${R.n}, ${R.amount})
SELECT j.value ->> '$.${R.bucket}', j.value ->> '$.${R.type}', j.value ->> '$.${R.dim}', SUM(j.value ->> '$.${R.n}'), COALESCE(SUM(j.value ->> '$.${R.amount}'), 0) FROM json_each(?1) j
GROUP BY 1, 2, 3
ON CONFLICT(${R.bucket}, ${R.type}, ${R.dim}) DO UPDATE SET ${R.n} = ${R.$table}.${R.n} + excluded.${R.n}, ${R.amount} = ${R.$table}.${R.amount} + excluded.${R.amount}`;

/** Adds the tokens recovery re-spent (rollup rows with an amount) to their agent's bucket, under the rollups' rule. */
const RESPENT_SQL = `INSERT INTO ${RS.$table} (${RS.bucket}, ${RS.agentClass}, ${RS.agentName}, ${RS.tokens})
SELECT j.value ->> '$.${R.bucket}', j.value ->> '$.agent_class', j.value ->> '$.agent_name', SUM(j.value ->> '$.${R.amount}') FROM json_each(?1) j
GROUP BY 1, 2, 3
ON CONFLICT(${RS.bucket}, ${RS.agentClass}, ${RS.agentName}) DO UPDATE SET ${RS.tokens} = ${RS.$table}.${RS.tokens} + excluded.${RS.tokens}`;

/**
 * The `isNew` test of sum columns (merge.ts): every event given is new. Ingest drops the events the ledger holds
 * before it makes rows (ledger.ts), and the per-event amounts still fold by event, so one counts once.
 */
const notStored = (_eventKeySql: string) => "1";

const SQL = Object.fromEntries(Object.entries(SPECS).map(([k, spec]) => [k, upsertSqls(spec, notStored)])) as Record<ProjectionName, string[]>;

/** The runs upserts for runs that complete healthily in the batch (run-rows.ts RUNS_LEAVING_UPSERT_ONLY). */
const LEAVING_SQL = upsertSqls(SPECS.fibers, notStored, RUNS_LEAVING_UPSERT_ONLY);

/** Largest JSON parameter we send in one statement (D1 caps a value at 2 MB). */
const MAX_PARAM_BYTES = 900_000;

/** Splits rows into JSON-array parameters under the size cap. */
const chunks = (rows: unknown[]): string[] =>
  packBodies(
    rows.map((r) => JSON.stringify(r)),
    MAX_PARAM_BYTES,
  );

/** The first row per event (agent and id): a batch may carry the same event twice, and rollups must count it once. */
function firstById<T extends { agent_class: unknown; agent_name: unknown; id: unknown }>(rows: T[]): T[] {
  const seen = new Set<string>();
  const key = (r: T) => JSON.stringify([r.agent_class, r.agent_name, r.id]);
  return rows.filter((r) => {
    const k = key(r);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * `completedLeave`: a run that completes healthily leaves D1 (run-rows.ts splitHealthyCompleted), for a console whose
 * R2 history holds every event (the HISTORY binding): the console reads it from there. Without it, D1 keeps it.
 */
export type BatchOptions = { completedLeave?: boolean };

/** A statement of an ingest batch, with the table it writes (so a batch's cost can be told per table). */
export type TableStatement = { table: string; stmt: D1PreparedStatement };

/**
 * Statements for one ingest batch, to run in one db.batch (one transaction).
 * Each takes ONE bound parameter, a JSON array expanded with json_each, so a
 * batch of any size stays far inside D1's 100-parameter limit; rows are first
 * folded per key, and each projection's statements (upsertSqls) write a row's
 * index entries only where a value they hold changed. Rollups and the
 * projections' sum columns count every event they are given: the caller gives
 * only events the ledger does not hold (ledger.ts), so a redelivered event adds
 * nothing (the other merge rules are idempotent and do not care). `events` are
 * segments.ts SegmentRows of distinct events (toRows): the hot timeline's
 * segments, written only in D1-only mode (none when R2 holds the timelines).
 */
export function tableStatements(
  db: D1Database,
  events: SegmentRow[],
  projections: Record<ProjectionName, Row[]>,
  rollups: Row[],
  opts: BatchOptions = {},
): TableStatement[] {
  const stmts: TableStatement[] = [];
  const counted = firstById(rollups as (Row & { agent_class: unknown; agent_name: unknown; id: unknown })[]);
  for (const json of chunks(counted)) stmts.push({ table: R.$table, stmt: db.prepare(ROLLUPS_SQL).bind(json) });
  // Only batches with re-spent tokens pay for this statement (and its rows).
  for (const json of chunks(counted.filter((r) => Number(r.amount) > 0))) stmts.push({ table: RS.$table, stmt: db.prepare(RESPENT_SQL).bind(json) });
  for (const name of Object.keys(SPECS) as ProjectionName[]) {
    const folded = foldRows(SPECS[name], projections[name]);
    const { leaving, staying } = name === "fibers" && opts.completedLeave ? splitHealthyCompleted(projections[name], folded) : { leaving: [], staying: folded };
    const table = SPECS[name].table;
    for (const json of chunks(staying)) for (const sql of SQL[name]) stmts.push({ table, stmt: db.prepare(sql).bind(json) });
    // Healthy completions: merged only into rows that stay, and a healthy running row deleted with its end.
    for (const json of chunks(leaving)) {
      for (const sql of LEAVING_SQL) stmts.push({ table, stmt: db.prepare(sql).bind(json) });
      stmts.push({ table, stmt: db.prepare(RUNS_LEAVE_SQL).bind(json) });
    }
  }
  // One chunk per statement keeps each agent's run in one statement (a run split across two still never overlaps).
  for (const json of chunks(firstById(events))) stmts.push({ table: G.$table, stmt: db.prepare(SEGMENTS_SQL).bind(json) });
  return stmts;
}

/** The statements of tableStatements alone, in order. */
export function projectionStatements(
  db: D1Database,
  events: SegmentRow[],
  projections: Record<ProjectionName, Row[]>,
  rollups: Row[],
  opts: BatchOptions = {},
): D1PreparedStatement[] {
  return tableStatements(db, events, projections, rollups, opts).map((s) => s.stmt);
}
