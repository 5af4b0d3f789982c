import { RUN_OUTCOMES as ENDED, RUN_KINDS, type RunKind } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import type { HistoryTier } from "../history/tier";
import { RUNS_OUTCOME_LISTED, runs } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { type EventRow, entityWindow, eventsBy } from "./events";
import { flag, instant, oneOf, parseFilters, sinceBeforeUntil, text } from "./filters";
import { classesOfName, MAX_NAME_CLASSES } from "./name-classes";
import { type AgentRef, findOwned } from "./owner";
import {
  type AccessPath,
  type Cond,
  choosePath,
  cond,
  decodeCursor,
  keysetPage,
  type ListOrder,
  type Page,
  type PageOptions,
  pageLimit,
  SCAN_BUDGET,
} from "./paging";

/** Runs: first seen, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const RUN_ORDER: ListOrder<Run> = { tag: "fibers", keyOf: (r) => [r.firstSeen, r.fiberId, r.agentClass, r.agentName] };

/**
 * Runs of every kind (runs; the table kept its name when runs got kinds): one row per run of an agent,
 * newest first (first_seen DESC, fiber_id DESC, then the agent). Not by last activity: a run's events move
 * last_seen batch after batch, and every index holding it would be rewritten each time (D1 bills each entry);
 * first_seen stays put, so a page's order also holds while its runs go on. `fiberId` is the run's id in the SDK:
 * a fiber id, a Tasks runId, or a chat turn's request id.
 */

export { RUN_KINDS, type RunKind };

/**
 * How a run ended, as ingest records it (sdk-states.ts RUN_OUTCOMES, the closed set run-rows.ts writes), plus
 * "running": no outcome yet. Fibers keep their recovery's result (recovering … recovery_failed) after
 * "interrupted"; see src/store/run-rows.ts.
 */
export const RUN_OUTCOMES = ["running", ...ENDED] as const;

/** Run list filters; since / until bound first_seen, when the run was first seen (inclusive). */
export const runFilters = z
  .object({
    kind: oneOf("kind", RUN_KINDS),
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    outcome: oneOf("outcome", RUN_OUTCOMES),
    /** Running and confirmed by a reconciliation after its last event (true), or not (false): see isConfirmedRunning. */
    confirmed: flag("confirmed"),
    since: instant("since"),
    until: instant("until"),
  })
  .superRefine(sinceBeforeUntil);
export type RunFilters = z.output<typeof runFilters>;
export type RunFilterInput = { [K in keyof RunFilters]?: unknown };

export type Run = {
  fiberId: string;
  /** The same id, under the name every kind shares. */
  runId: string;
  kind: RunKind;
  agentClass: string;
  agentName: string;
  name: string;
  /** A Tasks run's definition. */
  definition: string | null;
  /** The highest attempt a Tasks run reported. */
  attempt: number | null;
  startedAt: number | null;
  endedAt: number | null;
  /** null while running (no outcome reported yet). */
  outcome: string | null;
  /** The outcome, or "running": what the run's status is, derived. */
  status: string;
  error: string | null;
  /** Words that came with the outcome (a cancellation or force-idle reason, a recovery's result, the SDK's turn status). */
  reason: string | null;
  /**
   * A live run's state: pending, running, waiting, interrupted (a replay is due). Null once the run has an
   * outcome: an ended run is in no phase (the last live state stays in the run's events).
   */
  phase: string | null;
  wakeAt: number | null;
  /** The step a Tasks run is at (live), or the last one known (ended): interrupted in, waiting in, reported by the agent. */
  step: string | null;
  /** A Tasks run's own progress line (`step.status()`), the last the SDK recorded as far as the console knows. */
  statusMessage: string | null;
  /** The latest reconciliation that found the run alive. */
  confirmedAt: number | null;
  /** Running, and a reconciliation confirmed it after its last event: the agent itself says it is alive. */
  confirmed: boolean;
  snapshotBytes: number | null;
  snapshotAt: number | null;
  firstSeen: number;
  lastSeen: number;
};

/** A run with its last stashed snapshot (a masked, truncated preview). */
export type RunWithSnapshot = Run & { snapshotPreview: string | null };

type Stored = Omit<Run, "runId" | "status" | "confirmed">;

const F = names(runs);
const SELECT = selectList(runs, [
  "fiberId",
  "kind",
  "agentClass",
  "agentName",
  "name",
  "definition",
  "attempt",
  "startedAt",
  "endedAt",
  "outcome",
  "error",
  "reason",
  "phase",
  "wakeAt",
  "step",
  "statusMessage",
  "confirmedAt",
  "snapshotBytes",
  "snapshotAt",
  "firstSeen",
  "lastSeen",
]);
const SELECT_DETAIL = `${SELECT}, ${selectList(runs, ["snapshotPreview"])}`;

/** Running and confirmed after its last event (reconciliation never moves last_seen). */
export const isConfirmedRunning = (r: Pick<Run, "outcome" | "confirmedAt" | "lastSeen">) =>
  r.outcome === null && r.confirmedAt !== null && r.confirmedAt >= r.lastSeen;

/** Adds what is derived from a stored row; an ended run has no phase (nor a wake time), whatever its last live state was. */
export function derive<T extends Stored>(r: T): T & Pick<Run, "runId" | "status" | "confirmed"> {
  const ended = r.outcome !== null;
  return {
    ...r,
    phase: ended ? null : r.phase,
    wakeAt: ended ? null : r.wakeAt,
    runId: r.fiberId,
    status: r.outcome ?? "running",
    confirmed: isConfirmedRunning(r),
  };
}

/**
 * One arm per kind: every run has one of them (the contract's closed set, which ingest refuses anything outside of),
 * so an index led by the kind, merged over these, holds every run in first_seen order.
 */
export const KIND_ARMS: Cond[] = RUN_KINDS.map((k) => cond(`${F.kind} = ?`, k));

/**
 * The filters a runs list is planned by: the columns, and "completed" (outcome = completed), which no index serves
 * (runs_kind_outcome leaves completed runs out, RUNS_OUTCOME_LISTED), so it is always tested per row.
 */
type RunFilterKey = ColumnKey<typeof runs> | "completed";

const OUTCOME_LISTED = cond(`(${RUNS_OUTCOME_LISTED})`);

/**
 * Rows a page filtered by "completed" reads at most (ListQuery.scanCap): the pages' rows-read target. Completed runs
 * are no index's entries, so the page tests runs row by row; most runs complete, so it holds nearly a full page, and a
 * fleet where few do pages on with short pages instead of scanning up to SCAN_BUDGET rows for each.
 */
export const COMPLETED_SCAN_CAP = 60;

/**
 * Most selective first; two filters not on one index are a bounded scan (SCAN_BUDGET) over the first that serves one.
 * An outcome alone is runs_kind_outcome merged over the kinds, no filter at all is runs_kind merged over the kinds,
 * and an agent name alone is runs_agent merged over the classes the agent registry has that name under (namePath):
 * an index of their own would cost every run one more entry written (and the outcome's, one more each time it moves).
 * "completed" is runs_kind (merged over the kinds) tested per row: most runs complete, so the scan is dense.
 */
const PATHS: AccessPath<RunFilterKey>[] = [
  { index: "runs_agent", cols: ["agentClass", "agentName"] },
  { index: "runs_kind_outcome", cols: ["kind", "outcome"], partial: OUTCOME_LISTED },
  { index: "runs_kind_outcome", cols: ["outcome"], arms: KIND_ARMS, partial: OUTCOME_LISTED },
  { index: "runs_kind", cols: ["kind"] },
  { index: "runs_class", cols: ["agentClass"] },
  { index: "runs_kind", cols: [], arms: KIND_ARMS },
];

/** The types of RUN_ORDER's sort key, as cursors carry it. */
export const RUN_KEY_TYPES: ("number" | "string")[] = ["number", "string", "string", "string"];

export { MAX_NAME_CLASSES };

/**
 * The path for an agent name without a class: runs_agent, one arm per class the registry has the name under
 * (classesOfName); none means no run.
 */
async function namePath(db: D1Database, agentName: string): Promise<{ path: AccessPath<RunFilterKey> | null; none: boolean; rowsRead: number }> {
  const { classes, rowsRead } = await classesOfName(db, agentName);
  if (classes === null) return { path: null, none: false, rowsRead };
  if (!classes.length) return { path: null, none: true, rowsRead };
  return { path: { index: "runs_agent", cols: ["agentName"], arms: classes.map((c) => cond(`${F.agentClass} = ?`, c)) }, none: false, rowsRead };
}

/** Lists runs, newest first (first seen); outcome "running" means no outcome yet. Filter by kind, outcome, agent, time. */
export async function listRuns(db: D1Database, filters: RunFilterInput, page: PageOptions = {}): Promise<Page<Run>> {
  const f = parseFilters(runFilters, filters);
  const byName = f.agentName !== undefined && f.agentClass === undefined ? await namePath(db, f.agentName) : null;
  if (byName?.none) {
    pageLimit(page.limit);
    if (page.cursor) decodeCursor(RUN_ORDER.tag, page.cursor, RUN_KEY_TYPES);
    return { items: [], next: null, rowsRead: byName.rowsRead };
  }
  const eq = (v: string | undefined, col: string): Cond | undefined => (v === undefined ? undefined : cond(`${col} = ?`, v));
  const p = choosePath(byName?.path ? [PATHS[0]!, byName.path, ...PATHS.slice(1)] : PATHS, {
    kind: eq(f.kind, F.kind),
    agentClass: eq(f.agentClass, F.agentClass),
    agentName: eq(f.agentName, F.agentName),
    // IS NULL is an equality for the index, so "running" is as cheap as any outcome but "completed" (RunFilterKey).
    outcome: f.outcome === "running" ? cond(`${F.outcome} IS NULL`) : f.outcome === "completed" ? undefined : eq(f.outcome, F.outcome),
    completed: f.outcome === "completed" ? eq(f.outcome, F.outcome) : undefined,
  });
  // The same test as isConfirmedRunning, per row (a bounded scan over the path's index).
  const confirmed = `(${F.outcome} IS NULL AND ${F.confirmedAt} IS NOT NULL AND ${F.confirmedAt} >= ${F.lastSeen})`;
  const residual = f.confirmed === undefined ? p.residual : [...p.residual, cond(f.confirmed ? confirmed : `NOT ${confirmed}`)];
  const listed = await keysetPage<Run>(
    db,
    {
      ...RUN_ORDER,
      table: F.$table,
      index: p.index,
      select: SELECT,
      order: [F.firstSeen, F.fiberId, F.agentClass, F.agentName],
      types: RUN_KEY_TYPES,
      dir: "DESC",
      where: p.where,
      arms: p.arms,
      residual,
      scanBudget: SCAN_BUDGET - (byName?.rowsRead ?? 0),
      ...(f.outcome === "completed" ? { scanCap: COMPLETED_SCAN_CAP - (byName?.rowsRead ?? 0) } : {}),
      range: { min: f.since, max: f.until },
      map: (r) => derive(r),
    },
    page,
  );
  return byName ? { ...listed, rowsRead: listed.rowsRead + byName.rowsRead } : listed;
}

/**
 * One run with its snapshot preview: the run of `owner`, or the only agent's with that id, or null.
 * An id several agents reported needs the owner (BadRequest listing them).
 */
export async function getStoredRun(db: D1Database, fiberId: string, owner?: AgentRef): Promise<RunWithSnapshot | null> {
  const q = { table: F.$table, select: SELECT_DETAIL, key: F.fiberId, agentClass: F.agentClass, agentName: F.agentName, what: "run" as const };
  const row = await findOwned<Omit<RunWithSnapshot, "runId" | "status" | "confirmed">>(db, q, fiberId, owner);
  return row ? derive(row) : null;
}

/** The event field that carries a run's id, by kind: a chat turn's events (its own, its internal fiber's, its recovery's) carry its request id. */
const RUN_EVENTS = {
  fiber: "fiberId",
  managed_fiber: "fiberId",
  task: "taskId",
  chat_turn: "requestId",
} as const satisfies Record<RunKind, string>;

/**
 * One agent's run's events, oldest first: the agent's segments in the run's window (first_seen .. last_seen, or
 * a later reconciliation or end), at most segmentBudget(limit) segments read per page.
 */
export function runEvents(
  db: D1Database,
  run: Pick<Run, "fiberId"> & Partial<Pick<Run, "kind" | "firstSeen" | "lastSeen" | "confirmedAt" | "endedAt">> & AgentRef,
  page: PageOptions = {},
  history?: HistoryTier,
): Promise<Page<EventRow>> {
  const column = run.kind && Object.hasOwn(RUN_EVENTS, run.kind) ? RUN_EVENTS[run.kind] : RUN_EVENTS.fiber;
  const w = entityWindow(run, run.confirmedAt, run.endedAt);
  return eventsBy(db, { tag: "fiber-events", column, value: run.fiberId, owner: run, dir: "ASC", ...w }, page, history);
}

/** The reason a plain runFiber's run gets when its recovery hook started it again (ingest writes it, pages link it). */
export const RESUMED_BY_HOOK = "its recovery hook started run ";

/** The run a recovery hook started, from a run's reason (RESUMED_BY_HOOK), or null. */
export function resumedRunOf(reason: string | null): string | null {
  return reason?.startsWith(RESUMED_BY_HOOK) ? reason.slice(RESUMED_BY_HOOK.length) || null : null;
}
