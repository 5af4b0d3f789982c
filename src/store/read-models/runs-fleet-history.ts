import { z } from "zod";
import { HOUR_MS } from "../history/layout";
import { emptyScan, type HistoryLimits, historyNewest, type ShardCounts } from "../history/read";
import { foldRuns } from "../history/run-fold";
import type { Store } from "../partitions";
import { BadRequest } from "./errors";
import { parseFilters } from "./filters";
import { compareKey, listRunsIn } from "./merged";
import { decodeCursor, encodeCursor, type PageOptions, pageLimit } from "./paging";
import { RUN_ORDER, type Run, type RunFilters } from "./runs";
import type { CompletedFromHistory } from "./runs-history";

/**
 * The fleet-wide runs list (no agent named) with the runs that completed healthily, which left D1 when they ended:
 * the whole fleet's R2 history over a stated span (the last FLEET_COMPLETED_HOURS by default, `hours` up to
 * FLEET_COMPLETED_MAX_HOURS), newest first, folded with ingest's own mapping, beside D1's page in the runs order.
 *
 * The read is bounded whatever the fleet's size: a page fetches at most FLEET_COMPLETED_LIMITS.maxObjects objects.
 * When that budget ends before the span does, the page says which part it covered and its cursor goes on from
 * there ("older"). A run is listed on the page whose covered span holds its completion; spans of successive pages do
 * not overlap, so each run is listed once. D1's part pages by its own keyset cursor: the two go in one cursor.
 */

/** Hours of the fleet's history a fleet-wide runs list reads for completed runs by default: the page says so. */
export const FLEET_COMPLETED_HOURS = 1;
/** The longest span `hours` may ask for: the hot window's 48 hours. */
export const FLEET_COMPLETED_MAX_HOURS = 48;
/**
 * What one page's history read may cost: 24 objects (Class B reads), 50 list calls, and the hours of the longest span
 * (a span of N hours touches N + 1 hour folders). Events are bounded by the objects (a batch's object per slot and shard).
 */
export const FLEET_COMPLETED_LIMITS: HistoryLimits = { maxHours: FLEET_COMPLETED_MAX_HOURS + 1, maxLists: 50, maxObjects: 24, maxEvents: 5_000 };

/** `hours`: the span of history a runs list reads for completed runs, a whole number of hours. */
export const completedSpanInput = z.object({
  hours: z.preprocess(
    (v) => (v === "" || v === null ? undefined : v),
    z.unknown().transform((v, ctx) => {
      if (v === undefined) return undefined;
      const n = typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
      if (Number.isInteger(n) && n >= 1 && n <= FLEET_COMPLETED_MAX_HOURS) return n;
      ctx.addIssue({
        code: "custom",
        message: `hours must be a whole number of hours from 1 to ${FLEET_COMPLETED_MAX_HOURS} (got ${JSON.stringify(String(v).slice(0, 40))})`,
      });
      return z.NEVER;
    }),
  ),
});

/** The span asked for, in hours (undefined: the list's default); a BadRequest (400) for anything else. */
export function completedSpanHours(filters: Record<string, unknown>): number | undefined {
  return parseFilters(completedSpanInput, filters).hours;
}

/** Where the fleet's history is read from: the bucket, its shard counts, now, the clock skew ingest accepts, and the page's budget. */
export type FleetHistorySource = { bucket: R2Bucket; counts: ShardCounts; now: number; futureSkewMs: number; limits?: Partial<HistoryLimits> };

/** The cursor's tag: D1's cursor (or "" once D1's part is done), the span's start, and where history goes on (-1: done). */
const TAG = "runs+history";
const TYPES = ["string", "number", "number", "number"] as const;

type Position = { d1: string | null; d1Done: boolean; from: number; hours: number; to: number | null };

function positionOf(cursor: string | null | undefined): Position | null {
  if (!cursor) return null;
  const [d1, from, hours, to] = decodeCursor(TAG, cursor, TYPES) as [string, number, number, number];
  if (!(hours >= 1 && hours <= FLEET_COMPLETED_MAX_HOURS)) throw new BadRequest("the page cursor is not valid; start from the first page");
  return { d1: d1 || null, d1Done: d1 === "", from, hours, to: to < 0 ? null : to };
}

const lastSeenDesc = (a: Run, b: Run) => b.lastSeen - a.lastSeen;

/**
 * One page: D1's runs for the filters (its own cursor) and, from the fleet's history, the runs that completed healthily
 * in what this page's read covered, at most `limit` of them (cut between instants of their last event, so the next
 * page goes on below). Runs a D1 page also holds are listed once (D1's row).
 */
export async function listFleetRunsWithHistory(
  store: Store,
  f: RunFilters,
  filters: Record<string, unknown>,
  page: PageOptions,
  source: FleetHistorySource,
): Promise<{ items: Run[]; next: string | null; rowsRead: number; completedFromHistory: CompletedFromHistory }> {
  const limit = pageLimit(page.limit);
  const at = positionOf(page.cursor);
  const asked = completedSpanHours(filters);
  // A `since` filter (the page's time presets) without `hours` widens the span to reach it, up to the longest span.
  const sinceHours = f.since === undefined ? undefined : Math.min(FLEET_COMPLETED_MAX_HOURS, Math.max(1, Math.ceil((source.now - f.since) / HOUR_MS)));
  const hours = at?.hours ?? asked ?? sinceHours ?? FLEET_COMPLETED_HOURS;
  const from = at?.from ?? source.now - hours * HOUR_MS;
  const to = at ? at.to : source.now + source.futureSkewMs;
  const d1Part = at?.d1Done
    ? Promise.resolve({ items: [] as Run[], next: null as string | null, rowsRead: 0 })
    : listRunsIn(store, filters, { cursor: at?.d1 ?? null, limit });
  const mine = (e: { agentClass: string; agentName: string }) =>
    (f.agentClass === undefined || e.agentClass === f.agentClass) && (f.agentName === undefined || e.agentName === f.agentName);
  const [d1, read] = await Promise.all([
    d1Part,
    to === null
      ? { events: [], scan: emptyScan() }
      : historyNewest(source.bucket, { from, to, match: mine, limits: { ...FLEET_COMPLETED_LIMITS, ...source.limits } }),
  ]);
  const inD1 = new Set(d1.items.map((r) => `${r.agentClass}\u0000${r.agentName}\u0000${r.fiberId}`));
  let completed = foldRuns(read.events, { healthy: true })
    .filter(
      (r) =>
        !inD1.has(`${r.agentClass}\u0000${r.agentName}\u0000${r.fiberId}`) &&
        (f.kind === undefined || r.kind === f.kind) &&
        (f.since === undefined || r.firstSeen >= f.since) &&
        (f.until === undefined || r.firstSeen <= f.until),
    )
    .sort(lastSeenDesc);
  // Where history goes on: below what this read covered, or below the last instant kept when the page is full. A read
  // that covered nothing (its list calls ran out inside one hour folder) cannot go on: its page says it stopped.
  let historyTo: number | null = to === null ? null : read.scan.complete || read.scan.coveredFrom === null ? null : read.scan.coveredFrom - 1;
  if (completed.length > limit) {
    const edge = completed[limit]!.lastSeen;
    const kept = completed.filter((r) => r.lastSeen > edge);
    // One instant holds more than a page: keep that instant whole rather than never move on.
    completed = kept.length ? kept : completed.filter((r) => r.lastSeen >= edge);
    historyTo = kept.length ? edge : edge - 1;
  }
  const items = [...d1.items, ...completed].sort((a, b) => -compareKey(RUN_ORDER.keyOf(a), RUN_ORDER.keyOf(b)));
  const d1Next = at?.d1Done ? null : d1.next;
  const next = d1Next === null && historyTo === null ? null : encodeCursor(TAG, [d1Next ?? "", from, hours, historyTo ?? -1]);
  return {
    items,
    next,
    rowsRead: d1.rowsRead,
    completedFromHistory: { hours, from, to: to ?? from, scan: read.scan, found: completed.length },
  };
}
