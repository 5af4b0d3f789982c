import { eventSegments } from "../schema";
import { names } from "../sql-names";
import type { AgentRef } from "./owner";
import { decodeCursor, encodeCursor, type Page, type PageOptions, pageLimit, type SortValue } from "./paging";

/**
 * The hot timeline's storage form (schema.eventSegments): each segment's `body` is a JSON array of events in
 * the compact form below. Ingest writes it (worker/ingest/segments.ts); every timeline read goes through here.
 */

/** Stored events as the console shows them: the envelope, correlation ids and the parsed payload. */
export type EventRow = {
  id: string;
  time: number;
  type: string;
  agentClass: string;
  agentName: string;
  fiberId: string | null;
  incidentId: string | null;
  requestId: string | null;
  opId: string | null;
  sessionName: string | null;
  taskId: string | null;
  traceId: string | null;
  spanId: string | null;
  payload: unknown;
};

/**
 * One event of a segment body: short keys (they repeat in every event), absent when null. `q` is the agent's
 * number (absent when the event had none), `l` the derived incident timeline id (see worker/ingest/rows.ts).
 */
export type CompactEvent = {
  i: string;
  t: number;
  y: string;
  v: number;
  q?: number;
  f?: string;
  n?: string;
  r?: string;
  o?: string;
  s?: string;
  k?: string;
  l?: string;
  x?: string;
  z?: string;
  p: unknown;
};

/** The compact key of each correlation field, by EventRow name (timelineId has no EventRow field of its own). */
export const EVENT_FIELDS = {
  fiberId: "f",
  incidentId: "n",
  requestId: "r",
  opId: "o",
  sessionName: "s",
  taskId: "k",
  timelineId: "l",
  traceId: "x",
  spanId: "z",
} as const satisfies Record<string, keyof CompactEvent>;
export type EventField = keyof typeof EVENT_FIELDS;

/** Events of one segment may span at most this much event time, so a time window maps to one time_to range. */
export const MAX_SEGMENT_SPAN_MS = 60_000;

const S = names(eventSegments);

/**
 * Every stored event as a relation with the columns of the old per-event table (id, time, type, v, seq,
 * agent_class, agent_name, fiber_id, …, payload as JSON text, received_at): a scan of every segment. For
 * bounded reads (rowid-ordered scans of the newest segments) and for ad-hoc SQL; never for a page over all.
 */
export function storedEventsSql(segments = S.$table): string {
  const f = (k: string, as: string) => `e.value ->> '$.${k}' AS ${as}`;
  return `SELECT ${f("i", "id")}, ${f("t", "time")}, ${f("y", "type")}, ${f("v", "v")}, ${f("q", "seq")}, s.${S.agentClass} AS agent_class, s.${S.agentName} AS agent_name,
 ${f("f", "fiber_id")}, ${f("n", "incident_id")}, ${f("r", "request_id")}, ${f("o", "op_id")}, ${f("s", "session_name")}, ${f("k", "task_id")},
 ${f("l", "timeline_id")}, ${f("x", "trace_id")}, ${f("z", "span_id")}, e.value -> '$.p' AS payload, s.${S.receivedAt} AS received_at, s.rowid AS segment_rowid, e.key AS segment_index
 FROM ${segments} s, json_each(s.${S.body}) e`;
}

/** The console's form of one compact event of an agent. */
export function eventRowOf(c: CompactEvent, owner: AgentRef): EventRow {
  return {
    id: c.i,
    time: c.t,
    type: c.y,
    agentClass: owner.agentClass,
    agentName: owner.agentName,
    fiberId: c.f ?? null,
    incidentId: c.n ?? null,
    requestId: c.r ?? null,
    opId: c.o ?? null,
    sessionName: c.s ?? null,
    taskId: c.k ?? null,
    traceId: c.x ?? null,
    spanId: c.z ?? null,
    payload: c.p,
  };
}

/** A segment body's events; a body that does not parse (never written so) holds none. */
export function bodyEvents(body: string): CompactEvent[] {
  try {
    const v = JSON.parse(body) as unknown;
    return Array.isArray(v) ? (v as CompactEvent[]) : [];
  } catch {
    return [];
  }
}

/**
 * Segments a timeline page of the default size (50) reads at most, each one D1 row read, however deep it is: a detail
 * page (the timeline, plus its entity's row, its agent's open ops and pause) then stays within 60 rows read. A larger
 * page may read 3 segments per 5 events asked (segmentBudget). A sparse timeline's page comes back short, with a
 * cursor where the reading stopped; the console says so ("more events").
 */
export const SEGMENT_BUDGET = 30;

/** Segments a timeline page of `limit` events reads at most: SEGMENT_BUDGET, or 3 per 5 events for larger pages. */
export function segmentBudget(limit: number): number {
  return Math.max(SEGMENT_BUDGET, Math.ceil((limit * 3) / 5));
}
/** Segments fetched per query while a page fills: a dense timeline fills its page in one round trip. */
const SEGMENT_BATCH = 15;

export type TimelineQuery = {
  tag: string;
  owner: AgentRef;
  /** Only events for which this is true are listed. */
  match: (c: CompactEvent) => boolean;
  dir: "ASC" | "DESC";
  /** The entity's event-time window (first_seen..last_seen); open ends read the agent's whole hot timeline. */
  from?: number | null;
  to?: number | null;
};

type SegRow = { r: number; time_to: number; body: string };

/**
 * One keyset page of one agent's events that `match`, in segment order (time_to, rowid), and within a segment
 * in the agent's own order (seq); each page is then ordered by (time, id). The cursor is (time_to, rowid, event
 * index) of the last event listed. A page reads at most segmentBudget(limit) segments of the one index range
 * time_to in [from, to + MAX_SEGMENT_SPAN_MS] (a segment holding an event at or before `to` ends by then); when
 * the budget runs out first, the page comes back short with a cursor where the reading stopped.
 */
export async function timelinePage(db: D1Database, q: TimelineQuery, page: PageOptions = {}): Promise<Page<EventRow>> {
  const limit = pageLimit(page.limit);
  const budget = segmentBudget(limit);
  const types = ["number", "number", "number"] as const;
  let cur: SortValue[] | null = page.cursor ? decodeCursor(q.tag, page.cursor, types) : null;
  const lo = q.from ?? Number.MIN_SAFE_INTEGER;
  const hi = q.to === undefined || q.to === null ? Number.MAX_SAFE_INTEGER : q.to + MAX_SEGMENT_SPAN_MS;
  const asc = q.dir === "ASC";
  const found: { e: EventRow; key: SortValue[] }[] = [];
  let rowsRead = 0;
  let segments = 0;
  let next: SortValue[] | null = null;
  const cmp = asc ? ">" : "<";
  for (;;) {
    const take = Math.min(SEGMENT_BATCH, budget - segments);
    // The cursor narrows the index range itself (time_to up to / from the cursor's), so a later batch or page
    // starts where the last one stopped instead of scanning past what it already read; only ties are tested.
    const after = cur ? `AND (${S.timeTo} <> ?4 OR rowid ${cmp}= ?5)` : "";
    const from = cur && asc ? Math.max(lo, Number(cur[0])) : lo;
    const to = cur && !asc ? Math.min(hi, Number(cur[0])) : hi;
    const sql = `SELECT rowid AS r, ${S.timeTo} AS time_to, ${S.body} AS body FROM ${S.$table} INDEXED BY event_segments_agent_time
      WHERE ${S.agentClass} = ?1 AND ${S.agentName} = ?2 AND ${S.timeTo} BETWEEN ?6 AND ?7 ${after}
      ORDER BY ${S.timeTo} ${q.dir}, rowid ${q.dir} LIMIT ${take}`;
    const res = await db
      .prepare(sql)
      .bind(q.owner.agentClass, q.owner.agentName, null, cur?.[0] ?? null, cur?.[1] ?? null, from, to)
      .all<SegRow>();
    rowsRead += Number(res.meta?.rows_read ?? 0);
    const rows = res.results;
    segments += rows.length;
    for (const seg of rows) {
      const evs = bodyEvents(seg.body);
      const same = cur !== null && cur[0] === seg.time_to && cur[1] === seg.r;
      const skip = same ? Number(cur![2]) : asc ? -1 : evs.length;
      const order = asc
        ? evs.map((_, i) => i).filter((i) => i > skip)
        : evs
            .map((_, i) => i)
            .filter((i) => i < skip)
            .reverse();
      for (const i of order) {
        const c = evs[i]!;
        if (q.to !== undefined && q.to !== null && c.t > q.to) continue;
        if (q.from !== undefined && q.from !== null && c.t < q.from) continue;
        if (!q.match(c)) continue;
        found.push({ e: eventRowOf(c, q.owner), key: [seg.time_to, seg.r, i] });
        if (found.length > limit) break;
      }
      if (found.length > limit) break;
      // The whole segment was read: a cursor here skips all of it.
      cur = [seg.time_to, seg.r, asc ? evs.length - 1 : 0];
    }
    if (found.length > limit) {
      next = found[limit - 1]!.key;
      break;
    }
    if (rows.length < take) break;
    if (segments >= budget) {
      next = cur;
      break;
    }
  }
  const items = found.slice(0, limit).map((f) => f.e);
  const sign = asc ? 1 : -1;
  items.sort((a, b) => sign * (a.time - b.time || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
  return { items, next: next ? encodeCursor(q.tag, next) : null, rowsRead };
}
