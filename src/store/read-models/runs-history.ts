import { HOUR_MS } from "../history/layout";
import { type HistoryLimits, type HistoryScan, historyEvents, type ShardCounts } from "../history/read";
import { foldRuns } from "../history/run-fold";
import type { Store } from "../partitions";
import { parseFilters } from "./filters";
import { compareKey, listRunsIn, mergePages } from "./merged";
import type { AgentRef } from "./owner";
import { decodeCursor, type Page, type PageOptions, pageLimit } from "./paging";
import { RUN_KEY_TYPES, RUN_ORDER, type Run, type RunFilterInput, runFilters } from "./runs";
import { completedSpanHours, listFleetRunsWithHistory } from "./runs-fleet-history";

/**
 * Runs lists with the runs that left D1: a run that completed healthily is deleted from D1 when it ends (ingest), so
 * an agent's runs list (and its `outcome=completed` list) adds them from the R2 history: the agent's events over a
 * stated span, folded with ingest's own mapping (history/run-fold.ts), merged with D1's page in the runs order.
 */

/** Hours of an agent's history its runs list reads for completed runs: the page says so. */
export const COMPLETED_RUNS_HOURS = 24;

/**
 * Where the completed runs are read: the bucket, its shard counts, now and the clock skew ingest accepts; `limits`:
 * a fleet-wide page's budget, when not FLEET_COMPLETED_LIMITS (tests).
 */
export type RunsHistorySource = { bucket: R2Bucket; counts: ShardCounts; now: number; futureSkewMs: number; hours?: number; limits?: Partial<HistoryLimits> };

/**
 * What the history read of a runs list looked at: the span asked for (`hours`, from `from`), what this page read of it
 * (up to `to`; `scan` says what it covered and cost), and the completed runs it added. An agent's list and the fleet's share it.
 */
export type CompletedFromHistory = { hours: number; from: number; to: number; scan: HistoryScan; found: number };

export type RunsListPage = Page<Run> & { completedFromHistory?: CompletedFromHistory };

/**
 * listRunsIn, plus, with the history bound and a filter that admits completed runs, the healthy completed runs from
 * the R2 history: for one agent (class and name), its last `hours` (the `hours` filter, else COMPLETED_RUNS_HOURS),
 * in the D1 list's order and cursors, so pages go on across both; for the fleet (no agent named), a bounded read of
 * the fleet's last hours per page (runs-fleet-history.ts). A run D1 also holds is listed once (D1's row).
 */
export async function listRunsWithHistory(store: Store, filters: RunFilterInput, page: PageOptions = {}, source?: RunsHistorySource): Promise<RunsListPage> {
  const f = parseFilters(runFilters, filters);
  const asked = completedSpanHours(filters as Record<string, unknown>);
  const admits = (f.outcome === undefined || f.outcome === "completed") && f.confirmed !== true;
  if (!source || !admits) return listRunsIn(store, filters, page);
  if (f.agentClass === undefined || f.agentName === undefined) return listFleetRunsWithHistory(store, f, filters as Record<string, unknown>, page, source);
  const limit = pageLimit(page.limit);
  const after = page.cursor ? decodeCursor(RUN_ORDER.tag, page.cursor, RUN_KEY_TYPES) : null;
  const hours = asked ?? source.hours ?? COMPLETED_RUNS_HOURS;
  const from = source.now - hours * HOUR_MS;
  const to = source.now + source.futureSkewMs;
  const agent = { agentClass: f.agentClass, agentName: f.agentName };
  const [d1, read] = await Promise.all([listRunsIn(store, filters, page), historyEvents(source.bucket, source.counts, { agent, from, to, dir: "DESC" })]);
  const inD1 = new Set(d1.items.map((r) => r.fiberId));
  const older = (r: Run) => after === null || compareKey(RUN_ORDER.keyOf(r), after) < 0;
  const completed = foldRuns(read.events, { healthy: true }).filter(
    (r) =>
      !inD1.has(r.fiberId) &&
      older(r) &&
      (f.kind === undefined || r.kind === f.kind) &&
      (f.since === undefined || r.firstSeen >= f.since) &&
      (f.until === undefined || r.firstSeen <= f.until),
  );
  const merged = mergePages([d1, { items: completed, next: null, rowsRead: 0 }], { ...RUN_ORDER, dir: "DESC" }, limit);
  return { ...merged, completedFromHistory: { hours, from, to, scan: read.scan, found: completed.length } };
}

/**
 * Which of an agent's run ids the R2 history holds an ended run for (folded by ingest's mapping), with its outcome:
 * a run that completed healthily is absent from D1 but not missing, so reconciliation's gap filling must not
 * re-create it. Reads the agent's last `hours` (COMPLETED_RUNS_HOURS).
 */
export async function endedInHistory(source: RunsHistorySource, agent: AgentRef, ids: readonly string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const want = new Set(ids);
  const hours = source.hours ?? COMPLETED_RUNS_HOURS;
  const read = await historyEvents(source.bucket, source.counts, {
    agent,
    from: source.now - hours * HOUR_MS,
    to: source.now + source.futureSkewMs,
    match: (e) => [e.fiberId, e.taskId, e.requestId].some((id) => id !== null && want.has(id)),
  });
  const out = new Map<string, string>();
  for (const r of foldRuns(read.events)) if (want.has(r.fiberId) && r.outcome !== null) out.set(r.fiberId, r.outcome);
  return out;
}
