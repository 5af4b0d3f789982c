import type { AgentRef } from "../read-models/owner";
import { type HistoryEvent, HOUR_MS, hourOf } from "./layout";
import { type HistoryRead, type HistorySearchInput, historyEvents, historySearch, type ShardCounts } from "./read";

/** What a lookup of work the hot store no longer holds found in the history, and the span it was asked to look at. */
export type FoundBeforeHot = HistoryRead & { from: number; to: number };

/**
 * The events of one run or incident that left the hot store, oldest first, read from the R2 history before
 * `hotStart` (everything of such work is older than it). With the agent known: that agent's objects for
 * `lookbackHours` whole UTC hours ending at `hotStart`, newest first so a limit cuts the oldest part (which the
 * page says). Without it: the id lookup `search` (every agent, its own span). `match` keeps the work's own events.
 */
export async function readBeforeHot(
  bucket: R2Bucket,
  counts: ShardCounts,
  opts: { owner: AgentRef | undefined; hotStart: number; lookbackHours: number; match: (e: HistoryEvent) => boolean; search: HistorySearchInput },
): Promise<FoundBeforeHot> {
  const to = opts.hotStart;
  if (opts.owner) {
    const from = hourOf(to) - (opts.lookbackHours - 1) * HOUR_MS;
    const r = await historyEvents(bucket, counts, {
      agent: opts.owner,
      from,
      to,
      dir: "DESC",
      match: opts.match,
      limits: { maxHours: opts.lookbackHours },
    });
    return { events: r.events.reverse(), scan: r.scan, from, to };
  }
  const r = await historySearch(bucket, { ...opts.search, to }, { now: to });
  return { events: r.events.filter(opts.match).reverse(), scan: r.scan, from: r.scan.coveredFrom ?? to, to };
}
