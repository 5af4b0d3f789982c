import { z } from "zod";
import { agents } from "../schema";
import { names } from "../sql-names";
import { AGENT_SELECT, type AgentRow } from "./agents";
import { parseFilters, text } from "./filters";
import { type Capped, type Cond, cond, keysetPage, type ListOrder, type Page, rowsReadOf, SCAN_BUDGET } from "./paging";

/**
 * Events an agent numbered and the console never stored (src/telemetry/seq.ts): per agent, the highest number
 * that arrived (agents.seq_max) minus how many distinct numbered events arrived (agents.seq_seen). Lost in
 * transport (a local Queue killed with messages in it), or refused at ingest (dead letters: invalid, outside
 * the time window, bad signature) — either way the console never applied them.
 *
 * Cost and its bound: no index serves "agents with a gap" (the schema has none), so the list and the count scan
 * the agents_listed index newest first and test the gap on each row, never more than SCAN_BUDGET (1,000)
 * index rows per request (plus as many to place the next cursor on a short page). The index that would make
 * both O(page) is a partial one, `agents(last_seen, agent_class, agent_name) WHERE seq_max > seq_seen`: it holds
 * only agents with a gap, and costs an index write only when such an agent's row changes.
 */

const A = names(agents);

/** What an agent's numbers say. */
export type EventGap = {
  /** Events numbered below the highest that arrived and never arrived themselves (0 when none, or unknowable). */
  missing: number;
  /** The highest number that arrived; null: the agent sends no numbered events (older package, no outbox). */
  highest: number | null;
  /** Distinct numbered events that arrived. */
  arrived: number;
  /**
   * More numbered events arrived than the highest number: the agent's numbering restarted (its storage was
   * wiped, e.g. destroyed and created again under the same name). Missing events cannot be counted since.
   */
  restarted: boolean;
};

/** The gap of one agent row. */
export function eventGapOf(row: Pick<AgentRow, "seqMax" | "seqSeen">): EventGap {
  const highest = row.seqMax === null || row.seqMax === undefined ? null : Number(row.seqMax);
  const arrived = Number(row.seqSeen ?? 0);
  return { missing: highest !== null && highest > arrived ? highest - arrived : 0, highest, arrived, restarted: highest !== null && arrived > highest };
}

/** An agent with a gap, and how many events are missing. */
export type AgentGapRow = AgentRow & { missing: number };

/** The SQL test "this agent has events missing". */
export const HAS_GAP_SQL = `${A.seqMax} > ${A.seqSeen}`;

export const agentGapFilters = z.object({ agentClass: text("agentClass") });

/** The gaps list's order, fleet-wide and within one class (cursor tag and sort key; merged.ts merges by them). */
export const AGENT_GAPS_ORDER: ListOrder<AgentGapRow> = { tag: "agents:gaps", keyOf: (r) => [r.listedAt, r.agentClass, r.agentName] };
export const AGENT_GAPS_IN_CLASS_ORDER: ListOrder<AgentGapRow> = { tag: "agents:gaps:class", keyOf: (r) => [r.listedAt, r.agentName] };

/**
 * Agents whose events did not all arrive (seq_max > seq_seen), most recently seen first, keyset-paginated:
 * pass a page's `next` as `after` for the following one (`limit` default 50, at most 200). Used by the
 * overview's list (/agents?gaps=true) and by reconciliation, which asks these agents for the work the missing
 * events would have reported. `agentClass` narrows to one class.
 *
 * Each call scans at most SCAN_BUDGET index rows (agents_listed, or agents_class_listed for one class)
 * and tests the gap on each: a page can come back short, even empty, with a `next` that continues the scan;
 * walking every page visits every agent once. See the module comment for the index that would make it O(page).
 */
export async function agentsWithGaps(
  db: D1Database,
  opts: { limit?: number | string | null; after?: string | null; agentClass?: unknown } = {},
): Promise<Page<AgentGapRow>> {
  const f = parseFilters(agentGapFilters, { agentClass: opts.agentClass });
  const residual: Cond[] = [cond(HAS_GAP_SQL)];
  const map = (r: AgentGapRow): AgentGapRow => ({ ...r, missing: eventGapOf(r).missing });
  const page = { cursor: opts.after ?? null, limit: opts.limit ?? null };
  if (f.agentClass === undefined) {
    return keysetPage<AgentGapRow>(
      db,
      {
        tag: AGENT_GAPS_ORDER.tag,
        table: A.$table,
        index: "agents_listed",
        select: AGENT_SELECT,
        order: [A.listedAt, A.agentClass, A.agentName],
        types: ["number", "string", "string"],
        dir: "DESC",
        where: [],
        residual,
        keyOf: AGENT_GAPS_ORDER.keyOf,
        map,
      },
      page,
    );
  }
  return keysetPage<AgentGapRow>(
    db,
    {
      tag: AGENT_GAPS_IN_CLASS_ORDER.tag,
      table: A.$table,
      index: "agents_class_listed",
      select: AGENT_SELECT,
      order: [A.listedAt, A.agentName],
      types: ["number", "string"],
      dir: "DESC",
      where: [cond(`${A.agentClass} = ?`, f.agentClass)],
      residual,
      keyOf: AGENT_GAPS_IN_CLASS_ORDER.keyOf,
      map,
    },
    page,
  );
}

/** How many agents the overview's count looks at: the most recently seen, as many as one list page scans. */
export const GAP_COUNT_WINDOW = SCAN_BUDGET;

/**
 * The statement of the overview's count: agents with a gap among the `window` + 1 most recently seen agents,
 * and how many such agents it looked at (one index range of at most window + 1 rows: about 1,001 rows read).
 * Read it with gapCountOf.
 */
export function gapCountStatement(db: D1Database, window = GAP_COUNT_WINDOW): D1PreparedStatement {
  // No window function: numbering the rows (to leave the last one out) made D1 read each row three times.
  return db
    .prepare(
      `SELECT COALESCE(SUM(g), 0) AS n, COALESCE(SUM(missing), 0) AS missing, COUNT(*) AS scanned FROM (
         SELECT (${HAS_GAP_SQL}) AS g, CASE WHEN ${HAS_GAP_SQL} THEN ${A.seqMax} - ${A.seqSeen} ELSE 0 END AS missing
         FROM ${A.$table} INDEXED BY agents_listed ORDER BY ${A.listedAt} DESC, ${A.agentClass} DESC, ${A.agentName} DESC LIMIT ?1 + 1)`,
    )
    .bind(window);
}

/**
 * The count of agents with a gap, and the events they miss. `capped` when the count looked at more agents than
 * the window (window + 1): there may be more agents than it looked at, so render "≥n" (a true lower bound);
 * the list, which goes on past the window, may hold more. Not capped: exact.
 */
export type GapCount = Capped & { missingEvents: number };

/** Reads gapCountStatement's result. */
export function gapCountOf(result: D1Result<{ n: number; missing: number; scanned: number }>, window = GAP_COUNT_WINDOW): GapCount {
  const row = result.results[0];
  return { n: Number(row?.n ?? 0), capped: Number(row?.scanned ?? 0) > window, missingEvents: Number(row?.missing ?? 0) };
}

/** Counts agents with a gap among the `window` + 1 most recently seen (see gapCountStatement). */
export async function countAgentsWithGaps(db: D1Database, window = GAP_COUNT_WINDOW): Promise<GapCount & { rowsRead: number }> {
  const r = await gapCountStatement(db, window).all<{ n: number; missing: number; scanned: number }>();
  return { ...gapCountOf(r, window), rowsRead: rowsReadOf(r) };
}
