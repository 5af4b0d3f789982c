import { eventTypesWithStep, INCIDENT_STATUSES, type IncidentStatus, type SdkIncidentStatus } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import type { HistoryTier } from "../history/tier";
import { incidents, incidentUsage, runs } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { BadRequest } from "./errors";
import { type EventRow, entityWindow, eventsBy } from "./events";
import { flag, instant, oneOf, parseFilters, sinceBeforeUntil, text } from "./filters";
import { type IncidentStatusFacts, isOverlayStatus, overlayApplies, overlayAppliesSql, shownStatus, shownStatusSql } from "./incident-status";
import { classesOfName, classOfNameSql } from "./name-classes";
import { type AgentRef, findOwned } from "./owner";
import {
  type AccessPath,
  type Capped,
  type Cond,
  choosePath,
  cond,
  DEFAULT_CAP,
  decodeCursor,
  keysetPage,
  type ListOrder,
  type Page,
  type PageOptions,
  pageLimit,
  rowsReadOf,
  SCAN_BUDGET,
} from "./paging";

/** Incidents: first seen, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const INCIDENT_ORDER: ListOrder<IncidentRow> = { tag: "incidents", keyOf: (r) => [r.firstSeen, r.incidentId, r.agentClass, r.agentName] };
/** The types of INCIDENT_ORDER's sort key, as cursors carry it. */
const KEY_TYPES: ("number" | "string")[] = ["number", "string", "string", "string"];

/**
 * Incidents: a chat recovery's incidentId, or one derived from a fiber or a
 * session turn, of one agent. Lists are newest first (first_seen DESC, incident_id DESC, then the agent): not by
 * last activity, which moves with every batch of the incident's events and would rewrite every index holding it
 * (D1 bills each entry), while first_seen stays put.
 */

/** An incident's kind, a closed set: ingest derives it from the id (fiber:…, turn:…, else chat), never another. */
export const INCIDENT_KINDS = ["fiber", "turn", "chat"] as const;
/**
 * The statuses the console shows (see incident-status.ts: derived, never stored over the SDK's word).
 * force_idled: an operator's force idle cleared its recovery while the SDK still had it open; ended_unreported:
 * reconciliation found the agent no longer recovering it, and no event said how it ended.
 */
export { INCIDENT_STATUSES } from "@agent-oncall/telemetry/contract";

/** Event types that are one recovery attempt on an incident's timeline. */
export const ATTEMPT_EVENT_TYPES = eventTypesWithStep("attempt");

/**
 * Incident list filters; since / until bound first_seen, when the incident was first seen (inclusive). `status` is the shown status; `reason` is the
 * SDK's reason (the root cause, which actions never change); `noReason` lists those without one.
 */
export const incidentFilters = z
  .object({
    kind: oneOf("kind", INCIDENT_KINDS),
    status: oneOf("status", INCIDENT_STATUSES),
    reason: text("reason"),
    noReason: flag("noReason"),
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    /** The Worker version the incident opened under (deploys). */
    version: text("version"),
    since: instant("since"),
    until: instant("until"),
    /** When the SDK's status last changed (status_at: when an exhausted incident exhausted), inclusive; tested per row. */
    statusSince: instant("statusSince"),
    statusUntil: instant("statusUntil"),
  })
  .superRefine(sinceBeforeUntil)
  .superRefine((f, ctx) => {
    if (f.statusSince !== undefined && f.statusUntil !== undefined && f.statusSince > f.statusUntil)
      ctx.addIssue({ code: "custom", message: "statusSince must not be later than statusUntil" });
    if (f.noReason === true && f.reason !== undefined) ctx.addIssue({ code: "custom", message: "reason and noReason=true cannot both be set" });
  });
export type IncidentFilters = z.output<typeof incidentFilters>;
/** What callers pass: raw values (URL strings are fine), validated by incidentFilters. */
export type IncidentFilterInput = { [K in keyof IncidentFilters]?: unknown };

export type IncidentRow = {
  incidentId: string;
  kind: (typeof INCIDENT_KINDS)[number];
  agentClass: string;
  agentName: string;
  /** The status the console shows: the SDK's word, or the closed-by overlay while the SDK's word is open. */
  status: IncidentStatus;
  /** When the shown status was said (the overlay's time when it applies). */
  statusAt: number;
  /** The SDK's own last word, as its events said it (never rewritten by an action). */
  sdkStatus: SdkIncidentStatus;
  sdkStatusAt: number;
  attempts: number;
  maxAttempts: number | null;
  /** The SDK's reason (the root cause): an action's words are closedByReason. */
  reason: string | null;
  /** What closed it from outside the SDK (force_idled, ended_unreported), whether or not it applies now. */
  closedBy: string | null;
  closedByAt: number | null;
  /** The operator's reason for a force idle, or what reconciliation found. */
  closedByReason: string | null;
  fiberId: string | null;
  requestId: string | null;
  /** The latest reconciliation that found it still being recovered. */
  confirmedAt: number | null;
  /** Model tokens its recovery attempts re-spent (model.usage events carrying its id, each counted once). */
  respentInputTokens: number;
  respentOutputTokens: number;
  /** Attempt events its own events counted (attempt-step types, each event once), beside the SDK's `attempts`. */
  attemptEvents: number;
  /** Recoveries an operator's pause stopped: held (fibers) and declined (chat turns), and the latest one's time. */
  pauseHeld: number;
  pauseDeclined: number;
  pauseSkippedAt: number | null;
  /** The Worker version it opened under (its earliest versioned event); null when its events carried none. */
  version: string | null;
  firstSeen: number;
  lastSeen: number;
};

const I = names(incidents);
const SELECT = selectList(incidents, [
  "incidentId",
  "kind",
  "agentClass",
  "agentName",
  "status",
  "statusAt",
  "statusEventId",
  "attempts",
  "maxAttempts",
  "reason",
  "fiberId",
  "requestId",
  "confirmedAt",
  "closedBy",
  "closedByAt",
  "closedByEventId",
  "closedByReason",
  "respentInputTokens",
  "respentOutputTokens",
  "attemptEvents",
  "pauseHeld",
  "pauseDeclined",
  "pauseSkippedAt",
  "version",
  "firstSeen",
  "lastSeen",
]);

/** A row as stored (the SDK's word in `status`), before the shown status is derived. */
type StoredIncident = Omit<IncidentRow, "sdkStatus" | "sdkStatusAt" | "status"> & IncidentStatusFacts;

/** The shown status, derived (see incident-status.ts). */
function derive(r: StoredIncident): IncidentRow {
  const { statusEventId: _s, closedByEventId: _c, ...rest } = r;
  const overlay = overlayApplies(r);
  const status = shownStatus(r);
  return {
    ...rest,
    status,
    statusAt: overlay ? r.closedByAt! : r.statusAt,
    sdkStatus: r.status,
    sdkStatusAt: r.statusAt,
  };
}

/** An agent name without its class: incidents_agent, merged over the classes the registry has the name under (namePlan). */
const BY_NAME: AccessPath<ColumnKey<typeof incidents>> = { index: "incidents_agent", cols: ["agentName"] };

/**
 * Indexes that serve the equality filters, most selective first. Any two
 * filters not on one index (e.g. status + reason) scan the first index that
 * serves one of them and test the other per row, bounded by SCAN_BUDGET.
 * An agent name without its class is BY_NAME: an index by name would cost
 * every incident one more entry written.
 */
const PATHS: AccessPath<ColumnKey<typeof incidents>>[] = [
  { index: "incidents_agent", cols: ["agentClass", "agentName"] },
  BY_NAME,
  { index: "incidents_version", cols: ["version"] },
  { index: "incidents_reason", cols: ["reason"] },
  { index: "incidents_status", cols: ["status"] },
  { index: "incidents_class", cols: ["agentClass"] },
  { index: "incidents_kind", cols: ["kind"] },
  // Every incident: incidents_kind merged over the kinds (no first_seen index of its own: one entry fewer per incident).
  { index: "incidents_kind", cols: [], arms: INCIDENT_KINDS.map((k) => cond(`${I.kind} = ?`, k)) },
];

/** The sort key's columns, newest first: the lists' order, and what a bounded count or grouping scans by. */
const NEWEST_FIRST = `${I.firstSeen} DESC, ${I.incidentId} DESC, ${I.agentClass} DESC, ${I.agentName} DESC`;

/**
 * The path's rows as one SELECT of `select` (bound first) and the sort key: the index's range for `conds`, or with
 * arms, one range per arm joined by UNION ALL (a compound orders by result columns, hence the key in every arm).
 * `tail` (ORDER BY over the key, LIMIT) applies to the whole; SQLite merges ordered arms as co-routines.
 */
function pathRows(p: { index: string; arms?: Cond[] }, conds: Cond[], select: Cond, tail: string): Cond {
  const key = `${I.firstSeen}, ${I.incidentId}, ${I.agentClass}, ${I.agentName}`;
  const one = (arm?: Cond) => {
    const all = arm ? [arm, ...conds] : conds;
    return {
      sql: `SELECT ${select.sql}, ${key} FROM ${I.$table} INDEXED BY ${p.index}${all.length ? ` WHERE ${all.map((c) => c.sql).join(" AND ")}` : ""}`,
      binds: [...select.binds, ...all.flatMap((c) => c.binds)],
    };
  };
  const parts = p.arms?.length ? p.arms.map(one) : [one()];
  return { sql: `${parts.map((x) => x.sql).join(" UNION ALL ")} ${tail}`, binds: parts.flatMap((x) => x.binds) };
}

/**
 * The access path for the filters. A shown status is the SDK's word plus, for open and the overlay statuses, a
 * test of the overlay per row: open is `status = 'open'` without a newer overlay, force_idled / ended_unreported
 * are `status = 'open'` with one (so they scan the 'open' range of incidents_status, bounded by SCAN_BUDGET).
 * Every other status is its own index range: the overlay never applies over a closed word.
 */
function plan(f: IncidentFilters, nameArms?: Cond[] | null) {
  const eq = (v: string | undefined, col: string): Cond | undefined => (v === undefined ? undefined : cond(`${col} = ?`, v));
  const sdkWord = f.status === undefined ? undefined : isOverlayStatus(f.status) ? "open" : f.status;
  // nameArms: BY_NAME's arms once known; null when the name is under too many classes (then it is no path).
  const paths = nameArms === null ? PATHS.filter((x) => x !== BY_NAME) : nameArms ? PATHS.map((x) => (x === BY_NAME ? { ...x, arms: nameArms } : x)) : PATHS;
  const p = choosePath(paths, {
    agentClass: eq(f.agentClass, I.agentClass),
    agentName: eq(f.agentName, I.agentName),
    reason: eq(f.reason, I.reason),
    status: eq(sdkWord, I.status),
    kind: eq(f.kind, I.kind),
    version: eq(f.version, I.version),
  });
  const residual = [...p.residual];
  if (f.status === "open") residual.push(cond(`NOT ${overlayAppliesSql()}`));
  else if (f.status !== undefined && isOverlayStatus(f.status)) residual.push(cond(`${overlayAppliesSql()} AND ${I.closedBy} = ?`, f.status));
  // No index orders by status_at: a per-row test over the path (the overview's exact recent window, overview-now.ts).
  if (f.statusSince !== undefined) residual.push(cond(`${I.statusAt} >= ?`, f.statusSince));
  if (f.statusUntil !== undefined) residual.push(cond(`${I.statusAt} <= ?`, f.statusUntil));
  if (f.noReason === true) residual.push(cond(`(${I.reason} IS NULL OR ${I.reason} = '')`));
  else if (f.noReason === false) residual.push(cond(`(${I.reason} IS NOT NULL AND ${I.reason} <> '')`));
  return {
    index: p.index,
    where: p.where,
    residual,
    arms: p.arms,
    byName: f.agentClass === undefined && f.agentName !== undefined && p.where.length === 1 && p.index === BY_NAME.index,
  };
}

/**
 * plan, with BY_NAME's arms when it is the path: one per class the registry has the name under (classesOfName; none
 * means no incident). A name under more classes than a page merges is a bounded scan of the newest incidents instead.
 */
async function namePlan(db: D1Database, f: IncidentFilters) {
  const first = plan(f);
  if (!first.byName) return { p: first, none: false, rowsRead: 0 };
  const { classes, rowsRead } = await classesOfName(db, f.agentName!);
  const arms = classes === null ? null : classes.map((c) => cond(`${I.agentClass} = ?`, c));
  return { p: plan(f, arms), none: classes !== null && !classes.length, rowsRead };
}

/** Lists incidents, newest first (first seen), one keyset page at a time. */
export async function listIncidents(db: D1Database, filters: IncidentFilterInput, page: PageOptions = {}): Promise<Page<IncidentRow>> {
  const f = parseFilters(incidentFilters, filters);
  const { p, none, rowsRead } = await namePlan(db, f);
  if (none) {
    pageLimit(page.limit);
    if (page.cursor) decodeCursor(INCIDENT_ORDER.tag, page.cursor, KEY_TYPES);
    return { items: [], next: null, rowsRead };
  }
  const listed = await keysetPage<IncidentRow>(
    db,
    {
      ...INCIDENT_ORDER,
      table: I.$table,
      index: p.index,
      select: SELECT,
      order: [I.firstSeen, I.incidentId, I.agentClass, I.agentName],
      types: KEY_TYPES,
      dir: "DESC",
      where: p.where,
      arms: p.arms,
      residual: p.residual,
      scanBudget: SCAN_BUDGET - rowsRead,
      range: { min: f.since, max: f.until },
      // keysetPage reads stored rows; the map derives the shown status from them.
      map: (r) => derive(r as unknown as StoredIncident),
    },
    page,
  );
  return { ...listed, rowsRead: listed.rowsRead + rowsRead };
}

/** Index rows a count with per-row tests scans at most, newest first; past it the count is "at least". */
export const COUNT_SCAN = 5 * DEFAULT_CAP;

/**
 * How many incidents listIncidents would list for the same filters (every page), capped: the overview's counts
 * are this, so a figure and the list it links to count the same rows. Without per-row tests it reads at most
 * cap + 1 index rows; with them (open, force_idled, ended_unreported, filter pairs) at most COUNT_SCAN rows, and
 * the count is capped (≥) when the scan stopped there.
 */
export async function countIncidents(db: D1Database, filters: IncidentFilterInput, cap = DEFAULT_CAP): Promise<Capped & { rowsRead: number }> {
  const stmt = countIncidentsStatement(db, filters, cap);
  const r = await stmt.statement.all<{ n: number; scanned: number }>();
  return { ...stmt.read(r), rowsRead: rowsReadOf(r) };
}

/** countIncidents as a statement (for a D1 batch) and the reader of its result. */
export function countIncidentsStatement(db: D1Database, filters: IncidentFilterInput, cap = DEFAULT_CAP) {
  const f = parseFilters(incidentFilters, filters);
  // BY_NAME: incidents_agent over the classes the registry has the name under, one IN (a statement of a batch cannot
  // look them up first). Its order is a sort of the name's incidents: a count reads them all, a name's few.
  const p = plan(f);
  const conds = p.byName ? [cond(classOfNameSql(I.agentClass), f.agentName), ...p.where] : [...p.where];
  if (f.since !== undefined) conds.push(cond(`${I.firstSeen} >= ?`, f.since));
  if (f.until !== undefined) conds.push(cond(`${I.firstSeen} <= ?`, f.until));
  if (!p.residual.length) {
    const rows = pathRows(p, conds, cond("1 AS one"), `ORDER BY ${NEWEST_FIRST} LIMIT ?`);
    return {
      statement: db.prepare(`SELECT COUNT(*) AS n, 0 AS scanned FROM (${rows.sql})`).bind(...rows.binds, cap + 1),
      read: (r: D1Result<{ n: number; scanned: number }>): Capped => {
        const n = Number(r.results[0]?.n ?? 0);
        return { n: Math.min(n, cap), capped: n > cap };
      },
    };
  }
  const hit = p.residual.map((c) => `(${c.sql})`).join(" AND ");
  const rows = pathRows(p, conds, cond(`(${hit}) AS _hit`, ...p.residual.flatMap((c) => c.binds)), `ORDER BY ${NEWEST_FIRST} LIMIT ${COUNT_SCAN}`);
  return {
    statement: db.prepare(`SELECT COALESCE(SUM(_hit), 0) AS n, COUNT(*) AS scanned FROM (${rows.sql})`).bind(...rows.binds),
    read: (r: D1Result<{ n: number; scanned: number }>): Capped => {
      const n = Number(r.results[0]?.n ?? 0);
      return { n: Math.min(n, cap), capped: n > cap || Number(r.results[0]?.scanned ?? 0) >= COUNT_SCAN };
    },
  };
}

/**
 * One incident by id: the row of `owner`, or the only agent's, or null. When several agents reported the id,
 * a derived id (fiber:Class/name/…, turn:Class/name/…) names its agent; any other needs the owner (BadRequest).
 */
export async function getIncident(db: D1Database, id: string, owner?: AgentRef): Promise<IncidentRow | null> {
  const q = { table: I.$table, select: SELECT, key: I.incidentId, agentClass: I.agentClass, agentName: I.agentName, what: "incident" as const };
  const row = await findOwned<StoredIncident>(db, q, id, owner, (r) => r.kind !== "chat" && id.startsWith(`${r.kind}:${r.agentClass}/${r.agentName}/`));
  return row ? derive(row) : null;
}

export type IncidentAttempts = {
  /** Attempt events of the incident (chat/fiber recovery attempts, session reschedules), each event once. */
  counted: number;
  /** `respentByAttempt` lists the first USAGE_ATTEMPTS attempts only (a looping incident's many). */
  usageCapped: boolean;
  /** The SDK's own counter (the highest attempt it reported); null when it reports none (fiber recovery). */
  reported: number | null;
  /** Both are known and differ (events lost, or the SDK counts attempts it never announced). */
  disagree: boolean;
  /**
   * The SDK's counter is a budget, not a count: a chat recovery's `attempt` starts again at 1 whenever a recovery
   * makes progress and holds for recoveries bunched within 30 s, while every one of them emits an attempt event (and a
   * stable-state reschedule moves it without one). So the two differ without anything lost; they disagree only when
   * not even the first attempt's event (which the SDK always emits) arrived.
   */
  reportedIsBudget: boolean;
  /**
   * Tokens re-spent per attempt, from the model.usage events carrying the incident id, by attempt number ascending;
   * `attempt` is null for usage whose attempt the agent could not tell.
   */
  respentByAttempt: AttemptUsage[];
  /**
   * Recoveries of this incident an operator's recovery pause stopped (recovery.skipped_paused carrying its id, counted
   * at ingest): `held` kept for after the pause (fibers), `declined` ended by it (chat turns: the SDK
   * records the recovery skipped and does not restart it). `lastAt`: the latest of them.
   */
  pauseSkips: { held: number; declined: number; lastAt: number | null };
  rowsRead: number;
};

/** What one recovery attempt re-spent: its model calls and their tokens. */
export type AttemptUsage = { attempt: number | null; calls: number; inputTokens: number; outputTokens: number };

/** incident_usage's attempt for usage whose attempt the agent could not tell (a key column is never null). */
export const UNKNOWN_ATTEMPT = -1;

/** Attempts whose re-spent tokens the incident page lists at most (one row read each). */
export const USAGE_ATTEMPTS = 20;

const U = names(incidentUsage);

/**
 * The attempts of an incident, counted from its own events at ingest (the row's attempt_events), next to the SDK's
 * own counter, and what each attempt re-spent (incident_usage, read by its key: at most USAGE_ATTEMPTS + 1 rows).
 * Neither reads the timeline, so the count covers every attempt event ever ingested, hot or not.
 */
export async function incidentAttempts(
  db: D1Database,
  incident: Pick<IncidentRow, "incidentId" | "kind" | "attempts" | "attemptEvents" | "pauseHeld" | "pauseDeclined" | "pauseSkippedAt"> & AgentRef,
): Promise<IncidentAttempts> {
  const r = await db
    .prepare(
      `SELECT ${U.attempt} AS attempt, ${U.calls} AS calls, ${U.inputTokens} AS inputTokens, ${U.outputTokens} AS outputTokens FROM ${U.$table}
       WHERE ${U.incidentId} = ?1 AND ${U.agentClass} = ?2 AND ${U.agentName} = ?3 ORDER BY ${U.attempt} LIMIT ${USAGE_ATTEMPTS + 1}`,
    )
    .bind(incident.incidentId, incident.agentClass, incident.agentName)
    .all<{ attempt: number; calls: number; inputTokens: number; outputTokens: number }>();
  const rows = r.results;
  const respentByAttempt = rows.slice(0, USAGE_ATTEMPTS).map((u) => ({ ...u, attempt: u.attempt === UNKNOWN_ATTEMPT ? null : u.attempt }));
  const counted = incident.attemptEvents;
  const reported = incident.kind === "fiber" && incident.attempts === 0 ? null : incident.attempts;
  const budget = incident.kind === "chat";
  const disagree = reported !== null && (budget ? counted === 0 && reported > 0 : reported !== counted);
  return {
    counted,
    usageCapped: rows.length > USAGE_ATTEMPTS,
    reported,
    disagree,
    reportedIsBudget: budget,
    respentByAttempt,
    pauseSkips: { held: incident.pauseHeld, declined: incident.pauseDeclined, lastAt: incident.pauseSkippedAt },
    rowsRead: rowsReadOf(r),
  };
}

/**
 * An incident's timeline, oldest first. Ingest stamps every event with the
 * incident timeline it belongs to (the compact event's `l`): the reported
 * incidentId, else the fiber:… id of its fiber (so a fiber incident also
 * shows the run's start, stashes and interruption), else the turn:… id of its
 * session turn (so a turn incident shows that turn's session.* and op.*
 * events). The timeline reads the agent's segments from the start of the
 * incident's run (its fiber's or turn's first_seen, one primary-key read) or
 * its own first_seen, to its last stamp: at most segmentBudget(limit) segments per
 * page. Not included: the turn fiber's own fiber.* events in a turn incident
 * (they carry no turn number). Only the incident's agent's events: another
 * producer's events under the same id are its own incident.
 */
export async function incidentTimeline(
  db: D1Database,
  incident: Pick<IncidentRow, "incidentId"> & Partial<IncidentRow> & AgentRef,
  page: PageOptions = {},
  history?: HistoryTier,
): Promise<Page<EventRow>> {
  const w = entityWindow(incident, incident.closedByAt, incident.confirmedAt, incident.statusAt);
  let rowsRead = 0;
  const runIds = [incident.fiberId, incident.requestId].filter((x): x is string => typeof x === "string");
  if (w.from !== null && runIds.length) {
    const F = names(runs);
    const r = await db
      .prepare(`SELECT MIN(${F.firstSeen}) AS f FROM ${F.$table} WHERE ${F.fiberId} IN (?1, ?2) AND ${F.agentClass} = ?3 AND ${F.agentName} = ?4`)
      .bind(runIds[0], runIds[1] ?? runIds[0], incident.agentClass, incident.agentName)
      .first<{ f: number | null }>();
    if (r?.f !== null && r?.f !== undefined) w.from = Math.min(w.from, r.f);
    rowsRead += runIds.length;
  }
  const p = await eventsBy(
    db,
    { tag: "incident-timeline", column: "timelineId", value: incident.incidentId, owner: incident, dir: "ASC", ...w },
    page,
    history,
  );
  return { ...p, rowsRead: p.rowsRead + rowsRead };
}

export const INCIDENT_GROUPS = ["reason", "status", "kind", "agent", "version"] as const;
export type IncidentGroupBy = (typeof INCIDENT_GROUPS)[number];

/** Incidents the group-by view aggregates over, at most: the newest GROUP_BOUND index rows of the list's scan. */
export const GROUP_BOUND = 5 * SCAN_BUDGET;

const GROUP_EXPR: Record<IncidentGroupBy, string> = {
  // The SDK's reason: an action never changes an incident's root cause. '' is "no reason" (noReason=true lists them).
  reason: `COALESCE(${I.reason}, '')`,
  status: shownStatusSql(),
  kind: I.kind,
  agent: `${I.agentClass} || '/' || ${I.agentName}`,
  // The Worker version it opened under; '' for incidents whose events carried none.
  version: `COALESCE(${I.version}, '')`,
};

/** Groups returned at most (largest first). */
export const MAX_GROUPS = 100;

export type IncidentGroups = {
  /** Largest first, at most MAX_GROUPS; `key` is the reason ('' for none), status, kind, "Class/name", or version ('' for none). */
  groups: { key: string; n: number }[];
  /** Index rows scanned; when it reached GROUP_BOUND (`bounded`), counts cover only the newest incidents. */
  scanned: number;
  bounded: boolean;
  rowsRead: number;
};

/**
 * Counts the filtered incidents per group. Bounded: it scans the same index
 * the list would, newest first, and stops after GROUP_BOUND rows, so it reads
 * at most 2 × GROUP_BOUND rows whatever the table size (D1 also counts the
 * GROUP BY's temporary b-tree); `bounded` says when older incidents were left out.
 */
export async function groupIncidents(db: D1Database, filters: IncidentFilterInput, by: IncidentGroupBy): Promise<IncidentGroups> {
  if (!INCIDENT_GROUPS.includes(by)) throw new BadRequest(`group by must be one of ${INCIDENT_GROUPS.join(", ")} (got ${JSON.stringify(by)})`);
  const f = parseFilters(incidentFilters, filters);
  const p = plan(f);
  const conds = [...p.where];
  if (f.since !== undefined) conds.push(cond(`${I.firstSeen} >= ?`, f.since));
  if (f.until !== undefined) conds.push(cond(`${I.firstSeen} <= ?`, f.until));
  const hit = p.residual.length ? p.residual.map((c) => `(${c.sql})`).join(" AND ") : "1";
  const rows = pathRows(
    p,
    conds,
    cond(`${GROUP_EXPR[by]} AS g, (${hit}) AS _hit`, ...p.residual.flatMap((c) => c.binds)),
    `ORDER BY ${NEWEST_FIRST} LIMIT ${GROUP_BOUND}`,
  );
  const r = await db
    .prepare(`SELECT g, SUM(_hit) AS n, COUNT(*) AS scanned FROM (${rows.sql}) GROUP BY g`)
    .bind(...rows.binds)
    .all<{ g: string; n: number; scanned: number }>();
  const scanned = r.results.reduce((s, x) => s + Number(x.scanned), 0);
  const groups = r.results
    .filter((x) => Number(x.n) > 0)
    .map((x) => ({ key: x.g, n: Number(x.n) }))
    .sort((a, b) => b.n - a.n || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, MAX_GROUPS);
  return { groups, scanned, bounded: scanned >= GROUP_BOUND, rowsRead: rowsReadOf(r) };
}
