import type { HistoryTier } from "../history/tier";
import { partitionFor, type Store } from "../partitions";
import {
  type ArrivalKey,
  byTimeDesc,
  EVENTS_LIST_SEGMENTS,
  EVENTS_TAG,
  type EventListInput,
  fleetEventsQuery,
  listEvents,
  newestEvents,
  type TimelinePage,
} from "./events";
import { decodeCursor, encodeCursor, type PageOptions, pageLimit } from "./paging";

/**
 * The events list over a partitioned store (src/store/partitions.ts). One agent's events are its partition's. The
 * fleet-wide list is in arrival order (newest segments first, by rowid, one database's insertion order), which
 * partitions do not share: across partitions arrival is the segment's receipt time (received_at), and the events
 * of one delivery, received at the same instant, come partition by partition. So a merged page reads the same page
 * from every partition, each from its own position, and takes the newest arrivals up to the nearest point a
 * partition stopped at (mergePages' rule); its cursor holds every partition's position. On one database that is
 * exactly listEvents; over N it reads about N × a page's segments.
 */

/** A partition's position in a merged cursor: [rowid, index] as its own cursor holds them; these two mark the ends. */
const START = -1;
const DONE = -2;

/** The merged cursor's tag (its key is two numbers per partition, so it is never mistaken for one database's). */
const MERGED_TAG = `${EVENTS_TAG}:merged`;

/** Arrival order, newest first: receipt time, then partition (the lower first), then rowid and index. */
const after = (a: ArrivalKey & { p: number }, b: ArrivalKey & { p: number }): number => b.ra - a.ra || a.p - b.p || b.r - a.r || b.i - a.i;

/** listEvents over the store: one agent's from its partition (and the R2 history, with `history`); fleet-wide, every partition's newest arrivals merged. */
export async function listEventsIn(store: Store, filters: EventListInput, page: PageOptions = {}, history?: HistoryTier): Promise<TimelinePage> {
  const q = fleetEventsQuery(filters);
  if (!q) {
    const f = filters as { agentClass: string; agentName: string };
    return listEvents(partitionFor(store, f.agentClass, f.agentName), filters, page, history);
  }
  // D1 keeps no event bodies (TIMELINE_SEGMENTS off): the fleet's newest are read from R2, which every partition shares.
  if (history && !history.segments) return listEvents(store.parts[0]!, filters, page, history);
  if (store.parts.length === 1) return listEvents(store.parts[0]!, filters, page);
  const n = store.parts.length;
  const limit = pageLimit(page.limit);
  const at = page.cursor
    ? decodeCursor(MERGED_TAG, page.cursor, Array(2 * n).fill("number")).map(Number)
    : Array.from({ length: 2 * n }, (_, k) => (k % 2 ? 0 : START));
  const reads = await Promise.all(
    store.parts.map((db, p) => {
      const r = at[2 * p]!;
      if (r === DONE) return null;
      const cursor = r === START ? null : encodeCursor(EVENTS_TAG, [r, at[2 * p + 1]!]);
      return newestEvents(db, { tag: EVENTS_TAG, ...q, budget: EVENTS_LIST_SEGMENTS }, { cursor, limit });
    }),
  );
  // Past the newest point where a partition stopped, it may hold arrivals not read yet: nothing older is taken.
  let frontier: (ArrivalKey & { p: number }) | null = null;
  reads.forEach((x, p) => {
    const stop = x?.arrival.next;
    if (stop && (!frontier || after({ ...stop, p }, frontier) < 0)) frontier = { ...stop, p };
  });
  const all = reads
    .flatMap((x, p) => (x ? x.arrival.items.map((it) => ({ ...it, p })) : []))
    .filter((it) => !frontier || after(it, frontier) <= 0)
    .sort(after);
  const taken = all.slice(0, limit);
  const next = [...at];
  reads.forEach((x, p) => {
    if (!x) return;
    const mine = taken.filter((t) => t.p === p);
    const last = mine.at(-1);
    // Everything the partition read was taken: it continues where its own page did, or is done. Nothing of it
    // taken: it stays where it was. Else it continues below its last event taken.
    const pos =
      mine.length === x.arrival.items.length
        ? x.arrival.next
          ? [x.arrival.next.r, x.arrival.next.i]
          : [DONE, 0]
        : last
          ? [last.r, last.i]
          : [at[2 * p]!, at[2 * p + 1]!];
    next[2 * p] = pos[0]!;
    next[2 * p + 1] = pos[1]!;
  });
  const more = next.some((v, k) => k % 2 === 0 && v !== DONE);
  return {
    items: taken.map((t) => t.e).sort(byTimeDesc),
    next: more ? encodeCursor(MERGED_TAG, next) : null,
    rowsRead: reads.reduce((a, x) => a + (x?.rowsRead ?? 0), 0),
  };
}
