import { EVENT_TYPES, type EventType } from "@agent-oncall/telemetry/contract";

/** How an event type reads on a timeline (the registry's tone key; console/ says how each looks). */
export { type Tone as EventTone, toneOf as eventToneOf } from "@agent-oncall/telemetry/contract";

import { z } from "zod";
import type { HistoryEvent } from "../history/layout";
import type { HistoryScan } from "../history/read";
import type { HistoryTier } from "../history/tier";
import { compareKeys, type HistoryTimelineRead, type TimelineKey } from "../history/timeline";
import { eventSegments } from "../schema";
import { names } from "../sql-names";
import { commaList, flag, instant, parseFilters, sinceBeforeUntil, text } from "./filters";
import type { AgentRef } from "./owner";
import { decodeCursor, encodeCursor, type Page, type PageOptions, pageLimit, SCAN_BUDGET, type SortValue } from "./paging";
import { bodyEvents, type CompactEvent, EVENT_FIELDS, type EventField, type EventRow, eventRowOf, timelinePage } from "./segments";

/** Stored events as the console shows them (read from the hot store's segments, see segments.ts). */
export type { EventRow } from "./segments";

const S = names(eventSegments);

/**
 * Where a timeline page's events came from: the R2 history's read (the span asked for, what it looked at and cost),
 * how many events it listed, and how many newer ones came from the hot store because R2 did not hold them yet.
 * `scan` is null on a page that only continued the hot store's part.
 */
export type TimelineSources = { scan: HistoryScan | null; from: number; to: number; fromHistory: number; fromHot: number };

/** A timeline page, and, when an R2 history is bound, where its events came from. */
export type TimelinePage = Page<EventRow> & { history?: TimelineSources };

export type EventsBySpec = {
  tag: string;
  column: EventField;
  value: string;
  owner: AgentRef;
  dir: "ASC" | "DESC";
  from?: number | null;
  to?: number | null;
  /** Where the timeline starts when the entity has no window (`from`): its first activity. */
  olderFrom?: number | null;
};

/**
 * One page of the events of one agent whose `column` equals `value`, in the entity's time window (`from`..`to`,
 * its first_seen..last_seen when the caller has them). Scoped to the agent because ids are only unique per agent:
 * another producer's events under the same id are not part of this timeline.
 *
 * With `history` (the R2 tier) the timeline is read from R2, which holds every accepted event: the window, or from
 * `olderFrom` (else the hot window's start) to now. Ingest writes a batch's new events to R2 before D1, so D1 holds
 * none R2 lacks; events newer than the newest one R2 holds in the window are still listed from the hot store's
 * segments when it keeps them (TIMELINE_SEGMENTS on; segments stored before that order), counted in `history.fromHot`.
 * Without `history`, the hot store's segments alone (segments.ts timelinePage).
 */
export async function eventsBy(db: D1Database, spec: EventsBySpec, page: PageOptions = {}, history?: HistoryTier): Promise<TimelinePage> {
  const key = EVENT_FIELDS[spec.column];
  const match = (c: CompactEvent) => c[key] === spec.value;
  if (!history) return timelinePage(db, { tag: spec.tag, owner: spec.owner, match, dir: spec.dir, from: spec.from, to: spec.to }, page);
  const inHistory = (e: HistoryEvent) => (e as unknown as Record<string, unknown>)[spec.column] === spec.value;
  return tieredPage(db, spec, { hot: match, history: inHistory }, page, history);
}

/** Which events a tiered timeline lists, as each store holds them. */
type TieredMatch = { hot: (c: CompactEvent) => boolean; history: (e: HistoryEvent) => boolean };

/** A tiered timeline's cursor: inside the R2 part (past `after`), or inside the hot part (events past `k`). */
type TieredCursor = { phase: "history"; after: TimelineKey } | { phase: "hot"; k: TimelineKey | null; inner: string | null };

const CURSOR_SHAPES = [
  ["string", "number", "string"],
  ["string", "number", "string", "string"],
  ["string", "string"],
] as const;

function decodeTiered(tag: string, cursor: string): TieredCursor {
  let last: unknown = null;
  for (const types of CURSOR_SHAPES) {
    let k: SortValue[];
    try {
      k = decodeCursor(tag, cursor, types);
    } catch (e) {
      last = e;
      continue;
    }
    if (k[0] === "h" && k.length === 3) return { phase: "history", after: { time: Number(k[1]), id: String(k[2]) } };
    if (k[0] === "d" && k.length === 4) return { phase: "hot", k: { time: Number(k[1]), id: String(k[2]) }, inner: String(k[3]) || null };
    if (k[0] === "d" && k.length === 2) return { phase: "hot", k: null, inner: String(k[1]) || null };
  }
  throw last ?? new Error("unreachable");
}

const historyCursor = (tag: string, after: TimelineKey) => encodeCursor(tag, ["h", after.time, after.id]);
const hotCursor = (tag: string, k: TimelineKey | null, inner: string | null) =>
  k ? encodeCursor(tag, ["d", k.time, k.id, inner ?? ""]) : encodeCursor(tag, ["d", inner ?? ""]);
const keyOf = (e: EventRow): TimelineKey => ({ time: e.time, id: e.id });
/** Just past `k` toward older events, so a DESC read "strictly before" this still lists `k` itself. */
const through = (k: TimelineKey): TimelineKey => ({ time: k.time, id: `${k.id}\u0000` });

/**
 * A timeline read from R2, with the hot store's events newer than R2's newest (key `k`) beside it. ASC: the R2 part
 * page by page, then the hot part. DESC: the hot part first (the newest events), then R2 from `k` back. The two parts
 * never overlap (split at `k`), so an event both stores hold is listed once, from R2.
 */
async function tieredPage(
  db: D1Database,
  spec: Omit<EventsBySpec, "column" | "value">,
  matches: TieredMatch,
  page: PageOptions,
  tier: HistoryTier,
): Promise<TimelinePage> {
  const match = matches.hot;
  const limit = pageLimit(page.limit);
  const cur = page.cursor ? decodeTiered(spec.tag, page.cursor) : null;
  const from = spec.from ?? spec.olderFrom ?? tier.hotStart;
  const to = spec.to ?? tier.now + tier.futureSkewMs;
  const agent = { agentClass: spec.owner.agentClass, agentName: spec.owner.agentName };
  const matchHistory = matches.history;
  const fromR2 = (after: TimelineKey | null, n: number) => tier.timeline({ agent, match: matchHistory, dir: spec.dir, from, to, after, limit: n });
  // The hot store's events of the timeline newer than `k` (all of them without `k`).
  const hot = (k: TimelineKey | null, inner: string | null, n: number) =>
    timelinePage(
      db,
      {
        tag: spec.tag,
        owner: spec.owner,
        match: (c) => match(c) && (!k || compareKeys({ time: c.t, id: c.i }, k) > 0),
        dir: spec.dir,
        from: k ? Math.max(spec.from ?? k.time, k.time) : spec.from,
        to: spec.to,
      },
      { cursor: inner, limit: n },
    );
  const sources = (r: HistoryTimelineRead | null, fromHistory: number, fromHot: number): TimelineSources => ({
    scan: r?.scan ?? null,
    from,
    to,
    fromHistory,
    fromHot,
  });

  if (cur?.phase === "history") {
    const r = await fromR2(cur.after, limit);
    if (r.next || spec.dir === "DESC")
      return { items: r.events, next: r.next ? historyCursor(spec.tag, r.next) : null, rowsRead: 0, history: sources(r, r.events.length, 0) };
    return ascTail(r, cur.after);
  }
  if (spec.dir === "ASC") {
    if (cur?.phase === "hot") {
      const t = await hot(cur.k, cur.inner, limit);
      return { ...t, next: t.next ? hotCursor(spec.tag, cur.k, t.next) : null, history: sources(null, 0, t.items.length) };
    }
    const r = await fromR2(null, limit);
    if (r.next) return { items: r.events, next: historyCursor(spec.tag, r.next), rowsRead: 0, history: sources(r, r.events.length, 0) };
    return ascTail(r, null);
  }
  // DESC: the hot part first. Its split key is the newest event R2 holds in the window (or the edge R2 read to).
  let r: HistoryTimelineRead | null = null;
  let k: TimelineKey | null;
  if (cur?.phase === "hot") k = cur.k;
  else {
    r = await fromR2(null, limit);
    k = r.events[0] ? keyOf(r.events[0]) : r.next;
  }
  const t = await hot(k, cur?.phase === "hot" ? cur.inner : null, limit);
  if (t.next) return { ...t, next: hotCursor(spec.tag, k, t.next), history: sources(r, 0, t.items.length) };
  const room = limit - t.items.length;
  if (!k) return { ...t, next: null, history: sources(r, 0, t.items.length) };
  if (room === 0) return { ...t, next: historyCursor(spec.tag, through(k)), history: sources(r, 0, t.items.length) };
  r ??= await fromR2(through(k), room);
  const old = r.events.slice(0, room);
  const next = old.length < r.events.length ? historyCursor(spec.tag, keyOf(old.at(-1)!)) : r.next ? historyCursor(spec.tag, r.next) : null;
  return { items: [...t.items, ...old], next, rowsRead: t.rowsRead, history: sources(r, old.length, t.items.length) };

  /** ASC once R2's part is read to its end: the hot store's events past R2's last one fill the page. */
  async function ascTail(r: HistoryTimelineRead, after: TimelineKey | null): Promise<TimelinePage> {
    const k = r.events.at(-1) ? keyOf(r.events.at(-1)!) : after;
    const room = limit - r.events.length;
    const t = await hot(k, null, Math.max(room, 1));
    const tail = t.items.slice(0, room);
    const more = room === 0 ? t.items.length > 0 || t.next !== null : t.next !== null;
    const next = more ? hotCursor(spec.tag, k, room === 0 ? null : t.next) : null;
    return { items: [...r.events, ...tail], next, rowsRead: t.rowsRead, history: sources(r, r.events.length, tail.length) };
  }
}

/**
 * The event-time window of an entity's timeline: from its first_seen to the latest time any of its stamps
 * says (last_seen, and the times of what observed it: reconciliation, force idle), each end open when the
 * caller does not know it (then the agent's whole hot timeline is read, page by bounded page).
 */
export function entityWindow(
  row: { firstSeen?: number | null; lastSeen?: number | null },
  ...later: (number | null | undefined)[]
): { from: number | null; to: number | null } {
  const from = typeof row.firstSeen === "number" && row.firstSeen > 0 ? row.firstSeen : null;
  const ends = [row.lastSeen, ...later].filter((t): t is number => typeof t === "number" && t > 0);
  // An observation stamped later than last_seen is in the timeline too; without last_seen, the end is open.
  const to = typeof row.lastSeen === "number" && row.lastSeen > 0 ? Math.max(...ends) : null;
  return { from, to };
}

/** Event types one events list may name at most. */
export const MAX_TYPES = 10;

/**
 * The events list's filters: one or more event types (a comma list from a URL), a time window on the event's own
 * time (since / until, inclusive), an agent, and `withIncident` (only events that carried an incident id: what
 * recovery re-spent, for model.usage). It lists exactly the events the overview's rollup figures count.
 */
export const eventListFilters = z
  .object({
    type: commaList(
      z
        .array(
          z.enum(EVENT_TYPES as [EventType, ...EventType[]], {
            error: (iss) => `type must be event types such as chat.recovery.exhausted (got ${JSON.stringify(iss.input)})`,
          }),
          {
            error: (iss) =>
              iss.input === undefined
                ? "type is required: name one or more event types, e.g. type=chat.recovery.exhausted"
                : "type must be a list of event types",
          },
        )
        .min(1, { error: "type must name at least one event type" })
        .max(MAX_TYPES, { error: `type may name at most ${MAX_TYPES} event types` }),
    ),
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    withIncident: flag("withIncident"),
    since: instant("since"),
    until: instant("until"),
  })
  .superRefine(sinceBeforeUntil)
  .superRefine((f, ctx) => {
    if ((f.agentName === undefined) !== (f.agentClass === undefined))
      ctx.addIssue({ code: "custom", message: "agentClass and agentName go together (an agent is its class and name)" });
    if (f.withIncident !== undefined && f.type.length > 1 && f.agentClass === undefined)
      ctx.addIssue({ code: "custom", message: "withIncident works with one event type at a time (or with an agent)" });
  });
export type EventListInput = { [K in keyof z.input<typeof eventListFilters>]?: unknown };

/** The fleet-wide events list's cursor tag. */
export const EVENTS_TAG = "events";

/** Segments one fleet-wide events page reads at most (newest first by rowid: no index). */
export const EVENTS_LIST_SEGMENTS = SCAN_BUDGET;

/**
 * Events of the given types, newest first. With an agent: that agent's timeline in the time window, from the R2
 * history when `history` is given (as eventsBy reads it, the newest events R2 does not hold yet from the hot store),
 * else its segments (one range of event_segments_agent_time, at most segmentBudget(limit) segments per page). Fleet-wide: the newest segments by rowid
 * (arrival order, no index), at most EVENTS_LIST_SEGMENTS per page; a page can come back short with a cursor where
 * the reading stopped. Within the page, events are ordered by (time, id), newest first.
 */
export async function listEvents(db: D1Database, filters: EventListInput, page: PageOptions = {}, history?: HistoryTier): Promise<TimelinePage> {
  const f = parseFilters(eventListFilters, filters);
  const match = matchOf(f);
  if (f.agentClass !== undefined) {
    const owner = { agentClass: f.agentClass, agentName: f.agentName! };
    const spec = { tag: "events-agent", owner, dir: "DESC" as const, from: f.since, to: f.until };
    if (history) return tieredPage(db, spec, { hot: match, history: (e) => match(compactOf(e)) }, page, history);
    return timelinePage(db, { ...spec, match }, page);
  }
  if (history && !history.segments) return newestFromHistory(filters, page, history);
  const { arrival: _, ...list } = await newestEvents(db, { tag: EVENTS_TAG, match, since: f.since, until: f.until, budget: EVENTS_LIST_SEGMENTS }, page);
  return list;
}

/** The fleet-wide list's cursor tag when it reads R2: its key is the (time, id) the next page continues below. */
const HISTORY_EVENTS_TAG = `${EVENTS_TAG}:history`;

/**
 * The fleet-wide events list from the R2 history, for when D1 keeps no event bodies (TIMELINE_SEGMENTS off): the
 * newest events of the filters' types in the window (since, else the hot window's start, to until, else now),
 * newest first, read as historyNewest reads (at most FLEET_READ_LIMITS per page: 48 hours, 50 list calls, 24
 * objects). A page a limit cut comes back short with a cursor at the edge it covered; `history` says what it read.
 * No D1 rows.
 */
export async function newestFromHistory(filters: EventListInput, page: PageOptions, tier: HistoryTier): Promise<TimelinePage> {
  const f = parseFilters(eventListFilters, filters);
  const match = matchOf(f);
  const limit = pageLimit(page.limit);
  const cur = page.cursor ? decodeCursor(HISTORY_EVENTS_TAG, page.cursor, ["number", "string"]) : null;
  const below: TimelineKey | null = cur ? { time: Number(cur[0]), id: String(cur[1]) } : null;
  const from = f.since ?? tier.hotStart;
  const until = f.until ?? tier.now + tier.futureSkewMs;
  const to = below ? Math.min(until, below.time) : until;
  const r = await tier.newest({
    from,
    to,
    match: (e) => match(compactOf(e)) && (!below || compareKeys({ time: e.time, id: e.id }, below) < 0),
    limits: { maxEvents: limit + 1 },
  });
  const items = r.events.slice(0, limit);
  // More than a page: continue below its last event. Cut by a limit: continue below the edge it covered.
  const next: TimelineKey | null =
    r.events.length > limit
      ? keyOf(items.at(-1)!)
      : !r.scan.complete && r.scan.coveredFrom !== null && r.scan.coveredFrom > from
        ? { time: r.scan.coveredFrom, id: "" }
        : null;
  return {
    items,
    next: next ? encodeCursor(HISTORY_EVENTS_TAG, [next.time, next.id]) : null,
    rowsRead: 0,
    history: { scan: r.scan, from, to, fromHistory: items.length, fromHot: 0 },
  };
}

/** Event times ingest accepts ahead of receipt by default (INGEST_MAX_FUTURE_SKEW_SECONDS). */
const FUTURE_SKEW_MS = 5 * 60_000;

/**
 * Where a windowed fleet-wide list starts: the largest rowid whose segment's oldest event is at or before `at`,
 * searched over rowids as if time_from rose with rowid (it does as events arrive in order: segments are inserted in
 * time order, batch after batch), to within SEARCH_SLACK rowids above it. Interpolation steps take turns with
 * halving steps: a few probes of one row each, never more than about 2 log2(segments). An event that arrives after newer events of the fleet were stored sits
 * above the start and is in its agent's list (per-agent time index), not in the fleet-wide windowed one.
 */
async function rowidStartingBy(db: D1Database, at: number): Promise<{ rowid: number; rowsRead: number }> {
  let rowsRead = 0;
  const probe = async (sql: string, ...binds: number[]) => {
    const r = await db
      .prepare(sql)
      .bind(...binds)
      .all<{ r: number; ra: number }>();
    rowsRead += Number(r.meta?.rows_read ?? 0);
    return r.results[0] ?? null;
  };
  const COLS = `rowid AS r, ${S.timeFrom} AS ra FROM ${S.$table}`;
  const last = await probe(`SELECT ${COLS} ORDER BY rowid DESC LIMIT 1`);
  if (!last || last.ra <= at) return { rowid: last?.r ?? 0, rowsRead };
  const first = await probe(`SELECT ${COLS} ORDER BY rowid LIMIT 1`);
  if (!first || first.ra > at) return { rowid: 0, rowsRead };
  // Invariant: row lo was received by `at`, row hi was not; the answer is in [lo, hi).
  let lo = first,
    hi = last;
  // Close enough: starting up to SEARCH_SLACK segments above the answer reads those few and lists none of them.
  let movedHi = false;
  for (let step = 0; hi.r - lo.r > SEARCH_SLACK; step++) {
    // After an interpolation that landed just above the answer, try just below it; else interpolate and halve in turn.
    const guess =
      movedHi && step % 2 === 1
        ? hi.r - SEARCH_SLACK
        : step % 2 === 0 && hi.ra > lo.ra
          ? lo.r + Math.floor(((at - lo.ra) / (hi.ra - lo.ra)) * (hi.r - lo.r))
          : Math.floor((lo.r + hi.r) / 2);
    const mid = Math.min(hi.r - 1, Math.max(lo.r + 1, guess));
    const p = await probe(`SELECT ${COLS} WHERE rowid >= ?1 ORDER BY rowid LIMIT 1`, mid);
    movedHi = !p || p.r >= hi.r || p.ra > at;
    if (!p || p.r >= hi.r) hi = { r: mid, ra: hi.ra };
    else if (p.ra <= at) lo = p;
    else hi = p;
  }
  return { rowid: hi.r - 1, rowsRead };
}

/** How far above the exact start a windowed scan may begin (rowidStartingBy stops searching within it). */
const SEARCH_SLACK = 8;

/**
 * The newest events fleet-wide that `match`: segments newest first by rowid (no index), at most `budget` per
 * page, events newest first within each segment. Cursor: (segment rowid, event index) of the last event listed.
 * A window (`since`, `until`) starts the scan at the newest segment starting by until (rowidStartingBy) and ends it
 * at the first segment received before since (less the allowed clock skew).
 */
export async function newestEvents(
  db: D1Database,
  q: { tag: string; match: (c: CompactEvent) => boolean; since?: number; until?: number; budget: number },
  page: PageOptions = {},
): Promise<Page<EventRow> & { segments: number; arrival: ArrivalPage }> {
  const limit = pageLimit(page.limit);
  let cur: SortValue[] | null = page.cursor ? decodeCursor(q.tag, page.cursor, ["number", "number"]) : null;
  const found: { e: EventRow; key: SortValue[]; ra: number }[] = [];
  let rowsRead = 0,
    segments = 0;
  if (!cur && q.until !== undefined) {
    const start = await rowidStartingBy(db, q.until);
    rowsRead += start.rowsRead;
    cur = [start.rowid, Number.MAX_SAFE_INTEGER];
  }
  // Segments received before `since` (less the clock skew ingest allows) hold no event of the window.
  const receivedFloor = q.since === undefined ? null : q.since - FUTURE_SKEW_MS;
  let next: SortValue[] | null = null;
  // When the segment the scan stopped after was received (the `next` of a short page).
  let stopRa = 0;
  let batch = 16;
  for (;;) {
    const take = Math.min(batch, q.budget - segments);
    const res = await db
      .prepare(
        `SELECT rowid AS r, ${S.agentClass} AS c, ${S.agentName} AS a, ${S.receivedAt} AS ra, ${S.timeTo} >= ?2 AND ${S.timeFrom} <= ?3 AS w, ${S.body} AS body
         FROM ${S.$table} WHERE rowid <= ?1 ORDER BY rowid DESC LIMIT ${take}`,
      )
      .bind(cur ? cur[0] : Number.MAX_SAFE_INTEGER, q.since ?? Number.MIN_SAFE_INTEGER, q.until ?? Number.MAX_SAFE_INTEGER)
      .all<{ r: number; c: string; a: string; ra: number; w: number; body: string }>();
    rowsRead += Number(res.meta?.rows_read ?? 0);
    segments += res.results.length;
    let past = false;
    for (const seg of res.results) {
      if (receivedFloor !== null && seg.ra < receivedFloor) {
        past = true;
        break;
      }
      const evs = seg.w ? bodyEvents(seg.body) : [];
      const skip = cur !== null && cur[0] === seg.r ? Number(cur[1]) : evs.length;
      for (let i = Math.min(skip, evs.length) - 1; i >= 0; i--) {
        const c = evs[i]!;
        if ((q.since !== undefined && c.t < q.since) || (q.until !== undefined && c.t > q.until) || !q.match(c)) continue;
        found.push({ e: eventRowOf(c, { agentClass: seg.c, agentName: seg.a }), key: [seg.r, i], ra: seg.ra });
        if (found.length > limit) break;
      }
      if (found.length > limit) break;
      cur = [seg.r, 0];
      stopRa = seg.ra;
    }
    if (found.length > limit) {
      next = found[limit - 1]!.key;
      break;
    }
    if (past || res.results.length < take) break;
    if (segments >= q.budget) {
      next = cur;
      break;
    }
    // The next read: as many segments as the matches so far say the page still needs (double when none matched).
    const perSegment = found.length / segments;
    batch = Math.min(100, Math.max(8, perSegment > 0 ? Math.ceil((limit + 1 - found.length) / perSegment) + 1 : batch * 2));
  }
  const listed = found.slice(0, limit);
  const items = listed.map((x) => x.e).sort(byTimeDesc);
  const arrival: ArrivalPage = {
    items: listed.map((x) => ({ e: x.e, ra: x.ra, r: Number(x.key[0]), i: Number(x.key[1]) })),
    next: next ? { ra: found.length > limit ? found[limit - 1]!.ra : stopRa, r: Number(next[0]), i: Number(next[1]) } : null,
  };
  return { items, next: next ? encodeCursor(q.tag, next) : null, rowsRead, segments, arrival };
}

/** Events newest first by time, then id: how a fleet-wide page lists the events it read. */
export const byTimeDesc = (a: EventRow, b: EventRow): number => b.time - a.time || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0);

/** Where an event or a stop sits in the arrival order: its segment's receipt time, rowid, and index in it. */
export type ArrivalKey = { ra: number; r: number; i: number };

/**
 * A fleet-wide page in arrival order (before it is sorted by time), with where the scan stopped: what merged-events.ts
 * merges partitions by. `next` is the (rowid, index) the page's cursor continues below, and that segment's receipt time.
 */
export type ArrivalPage = { items: (ArrivalKey & { e: EventRow })[]; next: ArrivalKey | null };

/** The fleet-wide list's settings for the filters (listEvents without an agent), for reading partitions one by one. */
export function fleetEventsQuery(filters: EventListInput): { match: (c: CompactEvent) => boolean; since?: number; until?: number } | null {
  const f = parseFilters(eventListFilters, filters);
  return f.agentClass !== undefined ? null : { match: matchOf(f), since: f.since, until: f.until };
}

/** The fields of a stored event that matchOf looks at, in the compact form it reads. */
const compactOf = (e: HistoryEvent): CompactEvent => ({ i: e.id, t: e.time, y: e.type, v: e.v, p: e.payload, ...(e.incidentId ? { n: e.incidentId } : {}) });

/** The events the list's filters select: of its types, and with or without an incident id when withIncident says. */
function matchOf(f: z.output<typeof eventListFilters>): (c: CompactEvent) => boolean {
  const types = new Set<string>(f.type);
  return (c) => types.has(c.y) && (f.withIncident === undefined || (c.n !== undefined) === f.withIncident);
}
