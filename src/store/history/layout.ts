import type { EventRow } from "../read-models/events";
import type { AgentRef } from "../read-models/owner";
import { bloomMayHold, fnv1a } from "./bloom";

/**
 * The one owner of the R2 history's layout: object keys, the record each NDJSON line holds, and the
 * customMetadata a reader uses to skip objects. The writer (worker/ingest/history.ts), the readers and
 * retention all go through these functions.
 *
 *   history/v1/<yyyy-mm-dd>/<hh>/<shards>-<shard>/<ms into the hour of the first event, 7 digits>-<hash>.ndjson.gz
 *
 * Hours are UTC and come from the event's own time. The shard is a stable hash of (agent class, agent name)
 * mod the shard count, which is part of the path so a later change of HISTORY_SHARDS cannot misfile a read.
 * An object holds one batch's events of one shard and one SLOT_MS slot, so its events span less than a slot.
 * Within a shard, keys sort by their first event's time: a reader starts listing one slot before its range
 * (startAfter) and stops at the first key past its end, whatever the hour holds besides.
 * The hash is of the object's event ids and agents: a redelivered batch writes the same key again.
 */

export const HISTORY_PREFIX = "history/v1/";
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** The time slot one object's events fall in (a divisor of the hour): an object's events span less than this. */
export const SLOT_MS = 10 * 60_000;

/** One stored event: the console's EventRow (payload parsed), plus what the envelope carried besides. */
export type HistoryEvent = EventRow & {
  /** Schema version of the envelope. */
  v: number;
  /** The agent's own event number, when it had one. */
  seq: number | null;
  /** The incident timeline the event belongs to (as ingest derives it for D1). */
  timelineId: string | null;
  /** When the console received it. */
  receivedAt: number;
};

/**
 * Id kinds an id lookup can name; each is indexed in the objects' Bloom filters. fiberId joined later: objects
 * written before it carry no fiber items, so an id lookup misses fiber ids there (a run page with its agent reads
 * by agent instead, which every object indexes). incidentId joined later still, with the same consequence for
 * incident pages; it names the incident timeline an event belongs to (`timelineId`: the reported incident id, or
 * the one a fiber's or a turn's recovery derives), so a fiber incident's stashes and start are found too.
 */
export const ID_KINDS = ["traceId", "requestId", "taskId", "opId", "fiberId", "incidentId"] as const;
export type IdKind = (typeof ID_KINDS)[number];

/** The id of a kind an event carries (an incident's: the timeline it belongs to). */
export const idOf = (e: HistoryEvent, kind: IdKind): string | null => (kind === "incidentId" ? e.timelineId : e[kind]);

const pad = (n: number, w: number) => String(n).padStart(w, "0");

/** Start of the UTC hour holding `t`. */
export const hourOf = (t: number) => Math.floor(t / HOUR_MS) * HOUR_MS;

/** Start of the SLOT_MS slot holding `t`. */
export const slotOf = (t: number) => Math.floor(t / SLOT_MS) * SLOT_MS;

/** `history/v1/yyyy-mm-dd/` of the UTC day holding `t`. */
export function datePrefix(t: number): string {
  return `${HISTORY_PREFIX}${new Date(t).toISOString().slice(0, 10)}/`;
}

/** `history/v1/yyyy-mm-dd/hh/` of the UTC hour holding `t`. */
export function hourPrefix(t: number): string {
  return `${datePrefix(t)}${pad(new Date(t).getUTCHours(), 2)}/`;
}

/** The agent's shard among `count`: stable across isolates, releases and consoles. */
export function shardOf(agent: AgentRef, count: number): number {
  return fnv1a(`${agent.agentClass}\u0000${agent.agentName}`) % count;
}

/** The folder of one (hour, shard) under a given shard count. */
export function shardPrefix(t: number, count: number, shard: number): string {
  return `${hourPrefix(t)}${count}-${shard}/`;
}

/** The key of one object: its folder, then the first event's offset into the hour, then the content hash. */
export function objectKey(minTime: number, count: number, shard: number, hash: string): string {
  return `${shardPrefix(minTime, count, shard)}${pad(minTime - hourOf(minTime), 7)}-${hash}.ndjson.gz`;
}

/**
 * Where to start listing a shard folder for events at or after `from`: keys up to this one hold objects whose
 * first event is a whole slot or more before `from`, so all their events are before it. Undefined: from the start.
 */
export function listStartAfter(hour: number, count: number, shard: number, from: number): string | undefined {
  const offset = from - SLOT_MS - hour;
  return offset > 0 ? `${shardPrefix(hour, count, shard)}${pad(offset, 7)}` : undefined;
}

/** The first event's time, read back from a key (null for a key this layout did not write). */
export function keyMinTime(key: string): number | null {
  const m = /^history\/v1\/(\d{4}-\d{2}-\d{2})\/(\d{2})\/\d+-\d+\/(\d{7})-[0-9a-f]+\.ndjson\.gz$/.exec(key);
  if (!m) return null;
  const hour = Date.parse(`${m[1]}T${m[2]}:00:00Z`);
  return Number.isFinite(hour) ? hour + Number(m[3]) : null;
}

/** The UTC day a `history/v1/yyyy-mm-dd/` prefix names, as epoch ms (null when it is not one). */
export function prefixDay(prefix: string): number | null {
  const m = /^history\/v1\/(\d{4}-\d{2}-\d{2})\/$/.exec(prefix);
  if (!m) return null;
  const t = Date.parse(`${m[1]}T00:00:00Z`);
  return Number.isFinite(t) ? t : null;
}

/** What an object says about itself in customMetadata (all strings, as R2 stores them). */
export type HistoryMeta = {
  /** Layout version. */
  v: "1";
  /** Events in the object. */
  events: string;
  /** Earliest and latest event time, epoch ms. */
  minTime: string;
  maxTime: string;
  /** Distinct agents in the object. */
  agents: string;
  /** Bloom filter (base64) over bloomItems() of every event: the agents and the ids. */
  bloom: string;
};

/** The Bloom filter's item for an agent. */
export const agentItem = (a: AgentRef) => `agent:${a.agentClass}\u0000${a.agentName}`;
/** The Bloom filter's item for an id of a kind. */
export const idItem = (kind: IdKind, id: string) => `${kind}:${id}`;

/** The filter items one event contributes. */
export function bloomItems(e: HistoryEvent): string[] {
  const out = [agentItem(e)];
  for (const k of ID_KINDS) {
    const id = idOf(e, k);
    if (id) out.push(idItem(k, id));
  }
  return out;
}

/**
 * Whether an object may hold events in [from, to] that carry `item` (any event, for null), judged from its listing alone. An object
 * without readable metadata (written by hand, or an older layout) may hold anything: it is fetched.
 */
export function mayHold(meta: Record<string, string> | undefined, from: number, to: number, item: string | null): boolean {
  if (meta?.v !== "1") return true;
  const min = Number(meta.minTime);
  const max = Number(meta.maxTime);
  if (Number.isFinite(min) && Number.isFinite(max) && (max < from || min > to)) return false;
  return item !== null && typeof meta.bloom === "string" ? bloomMayHold(meta.bloom, item) : true;
}
