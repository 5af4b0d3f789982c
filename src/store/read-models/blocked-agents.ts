import { HEARD_FROM_STEP_MS } from "../heard-from";
import type { BlockedPipeline } from "../reconciliations";
import { agents, reconciliations } from "../schema";
import { names } from "../sql-names";
import type { AgentRow } from "./agents";
import { agentFilters } from "./agents";
import { parseFilters } from "./filters";
import { type Capped, decodeCursor, encodeCursor, type ListOrder, type Page, pageLimit, rowsReadOf, SCAN_BUDGET } from "./paging";

/**
 * Agents whose events cannot reach the console: the last reconciliation that asked them (src/store/reconciliations.ts)
 * heard that their Worker has no telemetry Queue binding ("no_queue"), or that their last send failed while the
 * console had heard nothing from them for TELEMETRY_QUIET_MS ("failing"), and no event of theirs has arrived since
 * that ask. Such agents look quiet everywhere else in the console; their events wait in their outboxes.
 *
 * This is the rule the telemetry alert applies to each pass (worker/alerts/telemetry.ts), kept until events show the
 * pipeline works again. An agent is in it only once reconciliation asked it: the cron asks agents with stale work
 * or missing events, and one agent of each class gone quiet.
 *
 * Cost: the rows come from the partial index reconciliations_blocked, which holds only agents whose answer said so
 * (a healthy answer writes no entry), newest ask first, each joined with its agents row by primary key. A list page
 * or the count scans at most SCAN_BUDGET such rows.
 */

/**
 * How long the console must have received nothing from an agent whose last send failed before that counts: a blip
 * the next retry gets through is not an outage. (The agent's own `failingSince` restarts at each wake, so a long
 * outage of an often-evicted agent is told by the console's last event from it, not by the agent.)
 */
export const TELEMETRY_QUIET_MS = 5 * 60_000;

/**
 * What BLOCKED_SQL subtracts from a "failing" ask: TELEMETRY_QUIET_MS of certain silence. The stored last_seen can
 * be up to a step early (src/store/heard-from.ts), so the silence is counted from the latest the console may have
 * heard from the agent: an alert pages a person, and a blip must not. A "no_queue" ask needs no silence, and an event
 * after any ask is stored at once (worker/ingest/projections.ts), so an agent leaves this list as soon as one arrives.
 */
const FAILING_SILENCE_MS = TELEMETRY_QUIET_MS + HEARD_FROM_STEP_MS - 1;

const R = names(reconciliations);
const A = names(agents);

/** A blocked agent: its registry row, what it said, and when it was asked. */
export type BlockedAgentRow = AgentRow & { pipeline: BlockedPipeline; askedAt: number };

/** Newest ask first; the agent's key breaks ties. The cursor's tag and sort key; merged reads merge pages by it. */
export const BLOCKED_AGENTS_ORDER: ListOrder<BlockedAgentRow> = { tag: "agents:blocked", keyOf: (r) => [r.askedAt, r.agentClass, r.agentName] };

const FROM = `${R.$table} r INDEXED BY reconciliations_blocked JOIN ${A.$table} a ON a.${A.agentClass} = r.${R.agentClass} AND a.${A.agentName} = r.${R.agentName}`;
/** Nothing heard from it since the ask (for "failing", for certain since TELEMETRY_QUIET_MS before it). ?1 is FAILING_SILENCE_MS. */
const BLOCKED_SQL = `a.${A.lastSeen} < r.${R.askedAt} - CASE r.${R.pipeline} WHEN 'failing' THEN ?1 ELSE 0 END`;
const ORDER = `ORDER BY r.${R.askedAt} DESC, r.${R.agentClass} DESC, r.${R.agentName} DESC`;
const SELECT = `a.${A.agentClass} AS agentClass, a.${A.agentName} AS agentName, a.${A.firstSeen} AS firstSeen, a.${A.lastSeen} AS lastSeen,
  a.${A.seqMax} AS seqMax, a.${A.seqSeen} AS seqSeen, a.${A.listedAt} AS listedAt, r.${R.pipeline} AS pipeline, r.${R.askedAt} AS askedAt`;

/**
 * Blocked agents, newest ask first, keyset-paginated (pass a page's `next` as `after`; `limit` default 50, at most
 * 200). `agentClass` narrows to one class. Each call scans at most SCAN_BUDGET of the index's rows: a page can come
 * back short, with a `next` that continues the scan; walking every page visits every flagged agent once.
 */
export async function blockedAgents(
  db: D1Database,
  opts: { limit?: number | string | null; after?: string | null; agentClass?: unknown } = {},
): Promise<Page<BlockedAgentRow>> {
  const f = parseFilters(agentFilters, { agentClass: opts.agentClass });
  const limit = pageLimit(opts.limit);
  const where = [`r.${R.pipeline} IS NOT NULL`];
  const binds: unknown[] = [FAILING_SILENCE_MS];
  if (opts.after) {
    where.push(`(r.${R.askedAt}, r.${R.agentClass}, r.${R.agentName}) < (?, ?, ?)`);
    binds.push(...decodeCursor(BLOCKED_AGENTS_ORDER.tag, opts.after, ["number", "string", "string"]));
  }
  // The class is tested per row: flagged agents are few, and the index leads with the ask's time.
  if (f.agentClass !== undefined) {
    where.push(`r.${R.agentClass} = ?`);
    binds.push(f.agentClass);
  }
  const r = await db
    .prepare(`SELECT ${SELECT}, (${BLOCKED_SQL}) AS hit FROM ${FROM} WHERE ${where.join(" AND ")} ${ORDER} LIMIT ${SCAN_BUDGET}`)
    .bind(...binds)
    .all<BlockedAgentRow & { hit: number }>();
  const strip = ({ hit: _hit, ...row }: BlockedAgentRow & { hit: number }): BlockedAgentRow => row;
  const hits = r.results.filter((x) => x.hit).map(strip);
  // After the page's last item when more hits follow; after the last row scanned when the scan ran out first.
  const last = hits.length > limit ? hits[limit - 1] : r.results.length >= SCAN_BUDGET ? strip(r.results[r.results.length - 1]!) : undefined;
  return { items: hits.slice(0, limit), next: last ? encodeCursor(BLOCKED_AGENTS_ORDER.tag, BLOCKED_AGENTS_ORDER.keyOf(last)) : null, rowsRead: rowsReadOf(r) };
}

/** How many flagged agents the overview's count looks at: as many as one list page scans. */
export const BLOCKED_COUNT_WINDOW = SCAN_BUDGET;

/**
 * The statement of the overview's count: blocked agents among the `window` + 1 most recently asked flagged agents,
 * and how many it looked at. Read it with blockedCountOf.
 */
export function blockedCountStatement(db: D1Database, window = BLOCKED_COUNT_WINDOW): D1PreparedStatement {
  return db
    .prepare(
      `SELECT COALESCE(SUM(h), 0) AS n, COUNT(*) AS scanned FROM (SELECT (${BLOCKED_SQL}) AS h FROM ${FROM} WHERE r.${R.pipeline} IS NOT NULL ${ORDER} LIMIT ?2 + 1)`,
    )
    .bind(FAILING_SILENCE_MS, window);
}

/**
 * The count, at most `cap` like the overview's other figures: exact, or `capped` (render "≥n": a lower bound) when it
 * passed the cap or more flagged agents than the window were asked.
 */
export function blockedCountOf(result: D1Result<{ n: number; scanned: number }>, cap: number, window = BLOCKED_COUNT_WINDOW): Capped {
  const row = result.results[0];
  const n = Number(row?.n ?? 0);
  return { n: Math.min(n, cap), capped: n > cap || Number(row?.scanned ?? 0) > window };
}
