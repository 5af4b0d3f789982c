import { z } from "zod";
import { agents, incidents, runs, sessions } from "../schema";
import { names } from "../sql-names";
import { flag, oneOf, parseFilters, text } from "./filters";
import { openNowSql } from "./incident-status";
// The stuck rules' findings come from their own read model (one owner of what "stuck" means).
import * as stuck from "./stuck";

/**
 * Which agents a bulk action would act on: every agent matching a filter of
 * class, incident reason, status and stuck rule (all given criteria must hold).
 * The selection is capped (BULK_TARGET_CAP) and each criterion is read over an
 * index: the first criterion given drives the scan, the others are per-agent
 * lookups on the per-agent indexes.
 */

/** At most this many agents in one bulk action. */
export const BULK_TARGET_CAP = 500;
/** Matches are counted up to this many (a count is not free either). */
export const BULK_COUNT_CAP = 10_000;

/**
 * Statuses a bulk filter can select, each derived from one projection:
 * - `running_runs`: the agent has runs with no outcome yet (runs);
 * - `open_incidents`: the agent has recovery incidents still open (incidents);
 * - `running_sessions`: the agent has sessions last reported running or rescheduled (sessions).
 */
export const BULK_STATUSES = ["running_runs", "open_incidents", "running_sessions"] as const;
export type BulkStatus = (typeof BULK_STATUSES)[number];

/** Session statuses that claim work is under way (as reconciliation reads them). */
const BUSY_SESSION = "('running', 'rescheduled')";

/** A bulk filter, as it comes from a URL or a form ("" means not set). At least one criterion is required. */
export const bulkFilter = z
  .object({
    agentClass: text("agentClass"),
    incidentReason: text("incidentReason"),
    /** With incidentReason: only agents whose incident of that reason is still open. */
    openOnly: flag("openOnly"),
    status: oneOf("status", BULK_STATUSES),
    stuckRule: oneOf("stuckRule", stuck.STUCK_RULES),
  })
  .superRefine((f, ctx) => {
    if (!f.agentClass && !f.incidentReason && !f.status && !f.stuckRule) {
      ctx.addIssue({
        code: "custom",
        message: "choose at least one filter (agent class, incident reason, status or stuck rule): a bulk action never targets every agent by default",
      });
    }
    if (f.openOnly && !f.incidentReason) ctx.addIssue({ code: "custom", message: "openOnly narrows an incident reason: give incidentReason too" });
  });
export type BulkFilter = z.output<typeof bulkFilter>;

/** Matching rows are counted per target up to this many (each count is an index read): more reads as "100+". */
export const BULK_WHY_COUNT_CAP = 100;

/** A per-target count of matching rows, stopped at BULK_WHY_COUNT_CAP (`capped`: there may be more). */
export type BulkCount = { count: number; capped: boolean };

/**
 * Which of the filter's criteria a target met, and with what: the facts behind "why it matched" (the console words
 * them, console/words.ts bulkMatchWords). A criterion the filter did not give is `false` / `null`.
 */
export type BulkMatch = {
  /** The class criterion was given (the target is of that class). */
  agentClass: boolean;
  /** The incident-reason criterion: the reason, whether only open incidents count, and how many the target has. */
  incidentReason: ({ reason: string; openOnly: boolean } & BulkCount) | null;
  /** The status criterion: which status, and how many rows of it the target has. */
  status: ({ status: BulkStatus } & BulkCount) | null;
};

/**
 * One agent a bulk action would act on, which criteria it matched (`matched`, as data); with a stuck rule, also the
 * agent's newest finding under it as data (the console phrases both, console/words.ts and console/stuck-words.ts).
 */
export type BulkTarget = { agentClass: string; agentName: string; matched: BulkMatch; stuck: stuck.StuckEntry | null };
export type BulkTargets = { targets: BulkTarget[]; total: number; capped: boolean; filter: BulkFilter };

/** The filter as URL parameters (only those set), for links and the audit row. */
export function bulkFilterQuery(f: BulkFilter): Record<string, string> {
  const q: Record<string, string> = {};
  if (f.agentClass) q.agentClass = f.agentClass;
  if (f.incidentReason) q.incidentReason = f.incidentReason;
  if (f.openOnly) q.openOnly = "true";
  if (f.status) q.status = f.status;
  if (f.stuckRule) q.stuckRule = f.stuckRule;
  return q;
}

const A = names(agents);
const F = names(runs);
const I = names(incidents);
const S = names(sessions);

/** A parameterised SQL piece: text with `?` and its values, in order. */
type Sql = { sql: string; binds: unknown[] };

/** Per-agent conditions on candidate `c` (columns agent_class, agent_name), each an indexed lookup. */
function conditions(f: BulkFilter): Sql[] {
  const out: Sql[] = [];
  if (f.agentClass) out.push({ sql: "c.agent_class = ?", binds: [f.agentClass] });
  if (f.incidentReason) {
    out.push({
      sql: `EXISTS (SELECT 1 FROM ${I.$table} INDEXED BY incidents_agent WHERE ${I.agentClass} = c.agent_class AND ${I.agentName} = c.agent_name AND ${I.reason} = ?${f.openOnly ? ` AND ${openNowSql()}` : ""})`,
      binds: [f.incidentReason],
    });
  }
  if (f.status) out.push({ sql: `EXISTS (${statusLookup(f.status)})`, binds: [] });
  return out;
}

/** The per-agent lookup behind a status. */
function statusLookup(s: BulkStatus): string {
  switch (s) {
    case "running_runs":
      return `SELECT 1 FROM ${F.$table} INDEXED BY runs_agent WHERE ${F.agentClass} = c.agent_class AND ${F.agentName} = c.agent_name AND ${F.outcome} IS NULL`;
    case "open_incidents":
      return `SELECT 1 FROM ${I.$table} INDEXED BY incidents_agent WHERE ${I.agentClass} = c.agent_class AND ${I.agentName} = c.agent_name AND ${openNowSql()}`;
    case "running_sessions":
      return `SELECT 1 FROM ${S.$table} WHERE ${S.agentClass} = c.agent_class AND ${S.agentName} = c.agent_name AND ${S.status} IN ${BUSY_SESSION}`;
  }
}

/**
 * The candidate agents, from the most selective index the filter offers: the stuck agents (given as JSON),
 * the incidents of a reason, the rows of a status, or the agents of a class. Distinct agents, as (agent_class, agent_name).
 */
function candidates(f: BulkFilter, stuck: string | null): Sql {
  if (stuck !== null) return { sql: "SELECT DISTINCT j.value ->> '$[0]' AS agent_class, j.value ->> '$[1]' AS agent_name FROM json_each(?) j", binds: [stuck] };
  if (f.incidentReason) {
    return {
      sql: `SELECT DISTINCT ${I.agentClass} AS agent_class, ${I.agentName} AS agent_name FROM ${I.$table} INDEXED BY incidents_reason WHERE ${I.reason} = ?`,
      binds: [f.incidentReason],
    };
  }
  if (f.status === "running_runs")
    return {
      sql: `SELECT DISTINCT ${F.agentClass} AS agent_class, ${F.agentName} AS agent_name FROM ${F.$table} INDEXED BY runs_open WHERE ${F.outcome} IS NULL`,
      binds: [],
    };
  if (f.status === "open_incidents")
    return {
      sql: `SELECT DISTINCT ${I.agentClass} AS agent_class, ${I.agentName} AS agent_name FROM ${I.$table} INDEXED BY incidents_status WHERE ${openNowSql()}`,
      binds: [],
    };
  if (f.status === "running_sessions")
    return {
      sql: `SELECT DISTINCT ${S.agentClass} AS agent_class, ${S.agentName} AS agent_name FROM ${S.$table} INDEXED BY sessions_status WHERE ${S.status} IN ${BUSY_SESSION}`,
      binds: [],
    };
  return {
    sql: `SELECT ${A.agentClass} AS agent_class, ${A.agentName} AS agent_name FROM ${A.$table} INDEXED BY agents_class_listed WHERE ${A.agentClass} = ?`,
    binds: [f.agentClass],
  };
}

/** Per target, what made it match: counts of the matching rows (each read over a per-agent index, at most BULK_WHY_COUNT_CAP counted). */
function whyColumns(f: BulkFilter): Sql {
  const count = (from: string) => `(SELECT COUNT(*) FROM (${from} LIMIT ${BULK_WHY_COUNT_CAP}))`;
  const reason = f.incidentReason
    ? `${count(`SELECT 1 FROM ${I.$table} INDEXED BY incidents_agent WHERE ${I.agentClass} = c.agent_class AND ${I.agentName} = c.agent_name AND ${I.reason} = ?${f.openOnly ? ` AND ${openNowSql()}` : ""}`)} AS reasonN`
    : "0 AS reasonN";
  const status = f.status ? `${count(statusLookup(f.status))} AS statusN` : "0 AS statusN";
  return { sql: `${reason}, ${status}`, binds: f.incidentReason ? [f.incidentReason] : [] };
}

const counted = (n: number): BulkCount => ({ count: n, capped: n >= BULK_WHY_COUNT_CAP });

/**
 * The agents a bulk action with filter `input` would act on (validated; a bad filter is a BadRequest),
 * ordered by class and name, at most `cap`; `total` counts every match (up to BULK_COUNT_CAP) and `capped`
 * says the list stops short of it. Reads nothing but projections; acts on nothing.
 */
export async function bulkTargets(
  db: D1Database,
  now: number,
  input: unknown,
  opts: { cap?: number; stuckConfig?: stuck.StuckConfig } = {},
): Promise<BulkTargets> {
  const cap = opts.cap ?? BULK_TARGET_CAP;
  const f = parseFilters(bulkFilter, input);
  // The stuck rules are computed by their own read model; their agents become the candidates.
  let stuckOf: Map<string, stuck.StuckEntry> | null = null;
  let stuckJson: string | null = null;
  if (f.stuckRule) {
    const entries = await stuck.listStuck(db, now, opts.stuckConfig, {
      rule: f.stuckRule,
      ...(f.agentClass ? { agentClass: f.agentClass } : {}),
      limit: BULK_COUNT_CAP,
    });
    stuckOf = new Map();
    for (const e of entries) {
      const k = JSON.stringify([e.agentClass, e.agentName]);
      if (!stuckOf.has(k)) stuckOf.set(k, e);
    }
    stuckJson = JSON.stringify([...stuckOf.keys()].map((k) => JSON.parse(k)));
  }
  const cand = candidates(f, stuckJson);
  const conds = conditions(f);
  const where = conds.length ? `WHERE ${conds.map((c) => c.sql).join(" AND ")}` : "";
  const condBinds = conds.flatMap((c) => c.binds);
  const why = whyColumns(f);
  // Binds follow the order of the placeholders in the text: candidates, why columns, conditions, limit.
  const [list, count] = (await db.batch([
    db
      .prepare(
        `WITH c AS (${cand.sql}) SELECT c.agent_class AS agentClass, c.agent_name AS agentName, ${why.sql} FROM c ${where} ORDER BY c.agent_class, c.agent_name LIMIT ?`,
      )
      .bind(...cand.binds, ...why.binds, ...condBinds, cap),
    db.prepare(`SELECT COUNT(*) AS n FROM (WITH c AS (${cand.sql}) SELECT 1 FROM c ${where} LIMIT ${BULK_COUNT_CAP})`).bind(...cand.binds, ...condBinds),
  ])) as [D1Result<{ agentClass: string; agentName: string; reasonN: number; statusN: number }>, D1Result<{ n: number }>];
  const total = count.results[0]?.n ?? 0;
  const targets = list.results.map((r) => {
    const found = stuckOf?.get(JSON.stringify([r.agentClass, r.agentName])) ?? null;
    const matched: BulkMatch = {
      agentClass: Boolean(f.agentClass),
      incidentReason: f.incidentReason ? { reason: f.incidentReason, openOnly: Boolean(f.openOnly), ...counted(r.reasonN) } : null,
      status: f.status ? { status: f.status, ...counted(r.statusN) } : null,
    };
    return { agentClass: r.agentClass, agentName: r.agentName, matched, stuck: found };
  });
  return { targets, total, capped: total > targets.length, filter: f };
}
