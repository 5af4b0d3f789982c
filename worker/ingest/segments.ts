import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { type CompactEvent, MAX_SEGMENT_SPAN_MS } from "../../src/store/read-models/segments";
import { eventSegments } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

/**
 * How a batch's events become segments of the hot timeline (schema.eventSegments), and the one rule that says
 * whether an event is stored already (rollups and `sum` columns count only events that are not).
 *
 * Each event gets a key `k`: its seq, or for an event without one a negative number derived from its id
 * (`alt`, which every event has). JS cuts each agent's numbered events into chunks (contiguous seqs, at most
 * MAX_SEGMENT_SPAN_MS of event time, MAX_SEGMENT_EVENTS, MAX_SEGMENT_BYTES); SQL then drops the events already
 * stored and groups the rest of each chunk into maximal contiguous runs, one segment each, in the same
 * transaction as the checks, so segments of one agent never overlap.
 */

/** Events per segment at most, and body bytes: a row stays far below D1's 2 MB, and a timeline reads small rows. */
export const MAX_SEGMENT_EVENTS = 200;
export const MAX_SEGMENT_BYTES = 200_000;

/** A negative key from an event id: below every real seq (>= 1), so an unnumbered event's segment never overlaps a numbered run. */
export function idKey(id: string): number {
  // Two independent 32-bit FNV-1a style hashes make 52 bits: a collision between two ids of one agent is ~2^-52.
  let h1 = 0x811c9dc5,
    h2 = 0x9747b28c;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  const hi = (h1 >>> 0) & 0xfffff; // 20 bits
  return -(hi * 2 ** 32 + (h2 >>> 0)) - 1;
}

/** The compact form of an event (segments.ts CompactEvent): null fields left out. */
export function compactEvent(e: TelemetryEvent, timelineId: string | null): CompactEvent {
  const c = e.corr;
  const out: CompactEvent = { i: e.id, t: e.time, y: e.type, v: e.v, p: e.payload };
  if (e.seq !== undefined) out.q = e.seq;
  const set = (k: keyof CompactEvent, v: string | null | undefined) => {
    if (v !== undefined && v !== null) (out as Record<string, unknown>)[k] = v;
  };
  set("f", c.fiberId);
  set("n", c.incidentId);
  set("r", c.requestId);
  set("o", c.opId);
  set("s", c.sessionName);
  set("k", c.taskId);
  set("l", timelineId);
  set("x", c.traceId);
  set("z", c.spanId);
  return out;
}

/** What the stored test and the segment insert need of one event. */
export type SegmentKey = { agent_class: string; agent_name: string; id: string; k: number; alt: number };
/** One event as the segment insert reads it: its key, chunk, time and compact form. */
export type SegmentRow = SegmentKey & { ch: number; t: number; ra: number; e: CompactEvent };

/**
 * Keys and chunks for a batch's events (distinct ids). An event whose seq another id of the batch took first
 * (numbering restarted) is keyed by its id, like an unnumbered one.
 */
export function segmentRows(events: { e: TelemetryEvent; compact: CompactEvent }[], receivedAt: number): SegmentRow[] {
  const byAgent = new Map<string, SegmentRow[]>();
  const out: SegmentRow[] = [];
  let ch = 0;
  for (const { e, compact } of events) {
    const alt = idKey(e.id);
    const row: SegmentRow = {
      agent_class: e.source.agentClass,
      agent_name: e.source.agentName,
      id: e.id,
      k: e.seq ?? alt,
      alt,
      ch: 0,
      t: e.time,
      ra: receivedAt,
      e: compact,
    };
    out.push(row);
    if (e.seq === undefined) {
      row.ch = ++ch;
      continue;
    }
    const key = JSON.stringify([row.agent_class, row.agent_name]);
    const list = byAgent.get(key) ?? [];
    list.push(row);
    byAgent.set(key, list);
  }
  for (const list of byAgent.values()) {
    list.sort((a, b) => a.k - b.k);
    let prev: SegmentRow | null = null;
    let lo = 0,
      hi = 0,
      n = 0,
      bytes = 0;
    for (const r of list) {
      if (prev && r.k === prev.k) {
        // The same number under another id: a restart's event, kept by its id.
        r.k = r.alt;
        r.ch = ++ch;
        continue;
      }
      const size = JSON.stringify(r.e).length;
      const fits =
        prev &&
        r.k === prev.k + 1 &&
        Math.max(hi, r.t) - Math.min(lo, r.t) <= MAX_SEGMENT_SPAN_MS &&
        n < MAX_SEGMENT_EVENTS &&
        bytes + size <= MAX_SEGMENT_BYTES;
      if (!fits) {
        ch++;
        lo = hi = r.t;
        n = 0;
        bytes = 0;
      }
      r.ch = ch;
      lo = Math.min(lo, r.t);
      hi = Math.max(hi, r.t);
      n++;
      bytes += size;
      prev = r;
    }
  }
  return out;
}

/** The key a sum column's per-event amounts are filed under (merge.ts sumOnce): the event's stored-test inputs. */
export const sumKey = (k: SegmentKey) => JSON.stringify([k.k, k.alt, k.id]);

const S = names(eventSegments);

/** The segment of agent (c, a) that would hold key k: the one with the largest seq_from <= k (one seek of the primary key). */
const covering = (c: string, a: string, k: string, what: string) =>
  `(SELECT ${what} FROM ${S.$table} g WHERE g.${S.agentClass} = ${c} AND g.${S.agentName} = ${a} AND g.${S.seqFrom} <= ${k} ORDER BY g.${S.seqFrom} DESC LIMIT 1)`;

/**
 * SQL true when the event (agent c/a, key k, id key alt, id) is stored: the segment covering k holds its id at
 * k - seq_from, or (a numbered event whose number another id took) its own id-keyed segment holds it.
 */
export function storedSql(c: string, a: string, k: string, alt: string, id: string): string {
  const at = `g.${S.body} ->> ('$[' || (${k} - g.${S.seqFrom}) || '].i')`;
  return `(COALESCE(${covering(c, a, k, `g.${S.seqTo} >= ${k} AND ${at} = ${id}`)}, 0)
 OR (${k} <> ${alt} AND COALESCE(${covering(c, a, alt, `g.${S.seqFrom} = ${alt} AND g.${S.body} ->> '$[0].i' = ${id}`)}, 0)))`;
}

const J = (f: string) => `j.value ->> '$.${f}'`;

/**
 * Inserts the batch's segments (?1: JSON array of SegmentRow). Events already stored are
 * dropped; an event whose key another stored event covers (numbering restarted) takes its id key; the rest
 * of each chunk becomes maximal runs of contiguous keys (key - row_number is constant along a run). Segments are
 * inserted in order of their newest event, so rowid order (the fleet-wide "newest" reads) follows event time
 * within a batch and arrival across batches.
 */
export const SEGMENTS_SQL = `INSERT INTO ${S.$table} (${S.agentClass}, ${S.agentName}, ${S.seqFrom}, ${S.seqTo}, ${S.timeFrom}, ${S.timeTo}, ${S.n}, ${S.receivedAt}, ${S.body})
SELECT c, a, MIN(key), MAX(key), MIN(t), MAX(t), COUNT(*), MAX(ra), json_group_array(json(e) ORDER BY key) FROM (
  SELECT c, a, ch, key, t, ra, e, key - (CASE WHEN key < 0 THEN 0 ELSE ROW_NUMBER() OVER (PARTITION BY c, a, ch, key < 0 ORDER BY key) END) AS run FROM (
    SELECT c, a, ch, t, ra, e, CASE WHEN covered THEN alt ELSE k END AS key FROM (
      SELECT ${J("agent_class")} AS c, ${J("agent_name")} AS a, ${J("ch")} AS ch, ${J("t")} AS t, ${J("ra")} AS ra, j.value -> '$.e' AS e,
        ${J("k")} AS k, ${J("alt")} AS alt, ${J("id")} AS id,
        COALESCE(${covering(J("agent_class"), J("agent_name"), J("k"), `g.${S.seqTo} >= ${J("k")}`)}, 0) AS covered,
        ${storedSql(J("agent_class"), J("agent_name"), J("k"), J("alt"), J("id"))} AS stored
      FROM json_each(?1) j
    ) WHERE NOT stored
  )
) WHERE true GROUP BY c, a, ch, run ORDER BY MAX(t), MIN(e ->> '$.i')
ON CONFLICT DO NOTHING`;
