import type { AgentRef } from "../read-models/owner";
import type { EventRow } from "../read-models/segments";
import { type HistoryEvent, HOUR_MS } from "./layout";
import { type HistoryLimits, type HistoryScan, historyEvents, type ShardCounts } from "./read";

/** Where a timeline stands in its order: an event's time and id (ids break ties between events of one instant). */
export type TimelineKey = { time: number; id: string };

/** (time, id) order: negative when `a` comes first in time order. */
export function compareKeys(a: TimelineKey, b: TimelineKey): number {
  return a.time - b.time || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** One page's worth of a timeline from the R2 history, and where the next one goes on. */
export type HistoryTimelineRead = {
  /** At most `limit` events, in the order asked, each strictly past `after`. */
  events: EventRow[];
  /** Where the next page starts (strictly past this key), or null when the span asked for is read to its end. */
  next: TimelineKey | null;
  /** What the read looked at and what it cost (list calls, objects, bytes), and the span it was asked for. */
  scan: HistoryScan;
  from: number;
  to: number;
};

export type HistoryTimelineQuery = {
  agent: AgentRef;
  /** Which of the agent's events belong to the timeline (a run's, an incident's, a session's). */
  match: (e: HistoryEvent) => boolean;
  dir: "ASC" | "DESC";
  /** Inclusive epoch-ms bounds on the events' own time. */
  from: number;
  to: number;
  /** The key the previous page ended on: this page lists only events past it in `dir` order. */
  after: TimelineKey | null;
  limit: number;
};

/** A timeline reader bound to a bucket (history/tier.ts builds it), as the read models take it. */
export type HistoryTimeline = (q: HistoryTimelineQuery) => Promise<HistoryTimelineRead>;

/**
 * Events one page's read keeps at most: the page and one more (which says a next page exists), or this many, so a
 * read never stops on one busy instant's events (a limit keeps whole instants) and the next page can go on past it.
 */
const MIN_EVENTS = 200;

/** The latest time whose hour a Date can name (8.64e15 ms is the last valid Date). */
const LAST_READABLE = 8.64e15 - HOUR_MS;

/** The console's form of a stored event: the history's extra fields (v, seq, timelineId, receivedAt) left out. */
function rowOf(e: HistoryEvent): EventRow {
  const { v: _v, seq: _s, timelineId: _t, receivedAt: _r, ...row } = e;
  return row;
}

/**
 * One keyset page of one agent's timeline from the R2 history (historyEvents: that agent's shard folder, hour by
 * hour, objects its Bloom filter may hold, within AGENT_READ_LIMITS or `limits`). The read starts at the previous
 * page's key, so a page costs the objects of the span it lists, not those of the pages before it. When a limit stops
 * the read first, `next` is the edge of what it covered, so the following page goes on from there.
 */
export async function historyTimelinePage(
  bucket: R2Bucket,
  counts: ShardCounts,
  q: HistoryTimelineQuery,
  limits?: Partial<HistoryLimits>,
): Promise<HistoryTimelineRead> {
  const asc = q.dir === "ASC";
  // A stored time past what a Date can hold (a producer's bad clock) has no hour folder: the read stops before it.
  const from = Math.max(0, asc && q.after ? Math.max(q.from, q.after.time) : q.from);
  const to = Math.min(LAST_READABLE, !asc && q.after ? Math.min(q.to, q.after.time) : q.to);
  const past = (e: HistoryEvent) => !q.after || (asc ? compareKeys(e, q.after) > 0 : compareKeys(e, q.after) < 0);
  const read = await historyEvents(bucket, counts, {
    agent: q.agent,
    from,
    to,
    dir: q.dir,
    match: (e) => q.match(e) && past(e),
    limits: { maxEvents: Math.max(q.limit + 1, MIN_EVENTS), ...limits },
  });
  const listed = read.events.slice(0, q.limit);
  const last = listed.at(-1);
  let next: TimelineKey | null = null;
  if (read.events.length > q.limit && last) next = { time: last.time, id: last.id };
  else if (!read.scan.complete) {
    // Every event of the covered span was returned: the next page starts past its edge (all of that instant).
    if (asc && read.scan.coveredTo !== null) next = { time: read.scan.coveredTo, id: "\uffff" };
    if (!asc && read.scan.coveredFrom !== null) next = { time: read.scan.coveredFrom, id: "" };
  }
  return { events: listed.map(rowOf), next, scan: read.scan, from, to };
}
