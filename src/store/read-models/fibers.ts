import { z } from "zod";
import { fiberRuns } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { type EventRow, eventsBy } from "./events";
import { instant, oneOf, parseFilters, sinceBeforeUntil, text } from "./filters";
import { type AgentRef, findOwned } from "./owner";
import { type AccessPath, type Cond, type Page, type PageOptions, choosePath, cond, keysetPage } from "./paging";

/** Fiber runs: one row per run of an agent, newest activity first (last_seen DESC, fiber_id DESC, then the agent). */

/** Outcomes ingest records, plus "running": no outcome reported yet. */
export const FIBER_OUTCOMES = ["running", "completed", "failed", "interrupted", "recovering", "recovered", "recovery_skipped", "recovery_failed"] as const;

/** Fiber list filters; since / until bound last_seen (inclusive). */
export const fiberFilters = z
  .object({
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    outcome: oneOf("outcome", FIBER_OUTCOMES),
    since: instant("since"),
    until: instant("until"),
  })
  .superRefine(sinceBeforeUntil);
export type FiberFilters = z.output<typeof fiberFilters>;
export type FiberFilterInput = { [K in keyof FiberFilters]?: unknown };

export type FiberRow = {
  fiberId: string;
  agentClass: string;
  agentName: string;
  name: string;
  startedAt: number | null;
  endedAt: number | null;
  /** null while running (no outcome reported yet). */
  outcome: string | null;
  error: string | null;
  snapshotBytes: number | null;
  snapshotAt: number | null;
  firstSeen: number;
  lastSeen: number;
};

/** A run with its last stashed snapshot (a masked, truncated preview). */
export type FiberDetail = FiberRow & { snapshotPreview: string | null };

const F = names(fiberRuns);
const SELECT = selectList(fiberRuns, [
  "fiberId", "agentClass", "agentName", "name", "startedAt", "endedAt",
  "outcome", "error", "snapshotBytes", "snapshotAt", "firstSeen", "lastSeen",
]);
const SELECT_DETAIL = `${SELECT}, ${selectList(fiberRuns, ["snapshotPreview"])}`;

/** Most selective first; two filters not on one index are a bounded scan (SCAN_BUDGET) over the first that serves one. */
const PATHS: AccessPath<ColumnKey<typeof fiberRuns>>[] = [
  { index: "fiber_runs_agent", cols: ["agentClass", "agentName"] },
  { index: "fiber_runs_name", cols: ["agentName"] },
  { index: "fiber_runs_outcome", cols: ["outcome"] },
  { index: "fiber_runs_class", cols: ["agentClass"] },
  { index: "fiber_runs_last_seen", cols: [] },
];

/** Lists fiber runs, newest activity first; outcome "running" means no outcome yet. */
export async function listFibers(db: D1Database, filters: FiberFilterInput, page: PageOptions = {}): Promise<Page<FiberRow>> {
  const f = parseFilters(fiberFilters, filters);
  const eq = (v: string | undefined, col: string): Cond | undefined => (v === undefined ? undefined : cond(`${col} = ?`, v));
  const p = choosePath(PATHS, {
    agentClass: eq(f.agentClass, F.agentClass),
    agentName: eq(f.agentName, F.agentName),
    // IS NULL is an equality for the index, so "running" is as cheap as any outcome.
    outcome: f.outcome === "running" ? cond(`${F.outcome} IS NULL`) : eq(f.outcome, F.outcome),
  });
  return keysetPage<FiberRow>(
    db,
    {
      tag: "fibers",
      table: F.$table,
      index: p.index,
      select: SELECT,
      order: [F.lastSeen, F.fiberId, F.agentClass, F.agentName],
      types: ["number", "string", "string", "string"],
      dir: "DESC",
      where: p.where,
      residual: p.residual,
      range: { min: f.since, max: f.until },
      keyOf: (r) => [r.lastSeen, r.fiberId, r.agentClass, r.agentName],
    },
    page,
  );
}

/**
 * One fiber run with its snapshot preview: the run of `owner`, or the only agent's with that id, or null.
 * An id several agents reported needs the owner (BadRequest listing them).
 */
export async function getFiber(db: D1Database, fiberId: string, owner?: AgentRef): Promise<FiberDetail | null> {
  const q = { table: F.$table, select: SELECT_DETAIL, key: F.fiberId, agentClass: F.agentClass, agentName: F.agentName, what: "fiber" };
  return findOwned<FiberDetail>(db, q, fiberId, owner);
}

/** One agent's fiber's events, oldest first (one range of events_fiber_time: at most limit + 1 rows read). */
export function fiberEvents(db: D1Database, fiber: Pick<FiberRow, "fiberId"> & AgentRef, page: PageOptions = {}): Promise<Page<EventRow>> {
  return eventsBy(db, { tag: "fiber-events", column: "fiberId", index: "events_fiber_time", value: fiber.fiberId, owner: fiber, dir: "ASC" }, page);
}
