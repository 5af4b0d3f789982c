import { z } from "zod";
import { instant, parseFilters, text } from "../read-models/filters";
import type { AgentRef } from "../read-models/owner";
import {
  agentItem,
  type HistoryEvent,
  HOUR_MS,
  hourOf,
  hourPrefix,
  ID_KINDS,
  type IdKind,
  idItem,
  idOf,
  keyMinTime,
  listStartAfter,
  mayHold,
  SLOT_MS,
  shardOf,
  shardPrefix,
} from "./layout";

/**
 * Reads of the R2 history. Every call does bounded work, stated in its limits: hours looked at, list calls
 * (Class A operations; up to 1,000 keys each, fewer with metadata: miniflare gives 100) and objects fetched (Class B). What a call covered is returned
 * with its events, so a page can say "looked from … to …" instead of implying the history is empty.
 */

export type HistoryLimits = {
  /** UTC hours one call looks at. */
  maxHours: number;
  /** List calls one call makes. */
  maxLists: number;
  /** Objects one call fetches. */
  maxObjects: number;
  /** Events one call returns. */
  maxEvents: number;
};

/** An agent's timeline: a week of hours, on one shard folder per hour (per shard count). */
export const AGENT_READ_LIMITS: HistoryLimits = { maxHours: 7 * 24, maxLists: 200, maxObjects: 100, maxEvents: 2_000 };
/**
 * The fleet-wide newest events (historyNewest): whole hour folders, newest objects first, for the hot window at most.
 * A page of 50 events fetches at most 24 objects (a batch's object per slot and shard holds many events).
 */
export const FLEET_READ_LIMITS: HistoryLimits = { maxHours: 48, maxLists: 50, maxObjects: 24, maxEvents: 201 };
/** An id lookup lists whole hours (every shard), newest first: a day by default. */
export const ID_SEARCH_LIMITS: HistoryLimits = { maxHours: 24, maxLists: 100, maxObjects: 50, maxEvents: 500 };

/**
 * The limit that stopped a read before the whole range, as facts (the console words it): list calls, objects
 * fetched or events returned reached `at`, or only `at` of the range's `of` hours were looked at.
 */
export type HistoryStop = { limit: "lists" | "objects" | "events"; at: number } | { limit: "hours"; at: number; of: number };

/** What one read looked at and what it cost. */
export type HistoryScan = {
  /** The span it fully looked at, without gaps, inside the range asked for; null when it covered nothing. */
  coveredFrom: number | null;
  coveredTo: number | null;
  /** False when a limit stopped it before the whole range: `stop` names the limit. */
  complete: boolean;
  stop: HistoryStop | null;
  hours: number;
  lists: number;
  objectsListed: number;
  objectsSkipped: number;
  objectsFetched: number;
  /** Compressed bytes fetched. */
  bytes: number;
};

export type HistoryRead = { events: HistoryEvent[]; scan: HistoryScan };

/** The shard counts a reader looks under: the current one, then any older hours were written with. */
export type ShardCounts = { shards: number; previousShards?: readonly number[] };

class OutOfBudget extends Error {
  constructor(readonly stop: HistoryStop) {
    super(`history read stopped at ${stop.at} ${stop.limit}`);
  }
}

/** A scan that has read nothing yet: covers nothing, is complete, and spent nothing. */
export function emptyScan(): HistoryScan {
  return {
    coveredFrom: null,
    coveredTo: null,
    complete: true,
    stop: null,
    hours: 0,
    lists: 0,
    objectsListed: 0,
    objectsSkipped: 0,
    objectsFetched: 0,
    bytes: 0,
  };
}

/** One call's budget and what it has spent. */
class Budget {
  readonly scan: HistoryScan = emptyScan();
  constructor(readonly limits: HistoryLimits) {}
  list() {
    if (this.scan.lists >= this.limits.maxLists) throw new OutOfBudget({ limit: "lists", at: this.limits.maxLists });
    this.scan.lists++;
  }
  fetch(n: number) {
    if (this.scan.objectsFetched + n > this.limits.maxObjects) throw new OutOfBudget({ limit: "objects", at: this.limits.maxObjects });
    this.scan.objectsFetched += n;
  }
}

/** An object worth fetching, with the time span its metadata (else its key and the slot) gives it. */
type Candidate = { key: string; min: number; max: number };

function candidate(key: string, meta: Record<string, string> | undefined): Candidate {
  const fromKey = keyMinTime(key);
  const min = Number(meta?.minTime ?? fromKey ?? Number.NaN);
  const max = Number(meta?.maxTime ?? Number.NaN);
  const lo = Number.isFinite(min) ? min : (fromKey ?? -Infinity);
  return { key, min: lo, max: Number.isFinite(max) ? max : lo + SLOT_MS - 1 };
}

/**
 * Keys under a prefix whose objects may hold `item` in [from, to], judged from the listing's metadata. Under one
 * shard folder (`oneShard`) keys sort by their first event's time: listing starts after `startAfter` (one slot
 * before `from`) and stops at the first key past `to`.
 */
async function candidates(
  bucket: R2Bucket,
  prefix: string,
  from: number,
  to: number,
  items: readonly string[] | null,
  budget: Budget,
  oneShard: boolean,
  startAfter?: string,
): Promise<Candidate[]> {
  const out: Candidate[] = [];
  let cursor: string | undefined;
  for (;;) {
    budget.list();
    const page = await bucket.list({ prefix, include: ["customMetadata"], ...(cursor ? { cursor } : startAfter ? { startAfter } : {}) });
    for (const o of page.objects) {
      budget.scan.objectsListed++;
      const min = keyMinTime(o.key);
      // Nothing after this key in the folder can start before `to` either.
      if (oneShard && min !== null && min > to) return out;
      // Without items, any object whose span overlaps [from, to] (mayHold of a null item: time only).
      if (items === null ? mayHold(o.customMetadata, from, to, null) : items.some((item) => mayHold(o.customMetadata, from, to, item)))
        out.push(candidate(o.key, o.customMetadata));
      else budget.scan.objectsSkipped++;
    }
    if (!page.truncated) return out;
    cursor = page.cursor;
  }
}

function isRecord(v: unknown): v is HistoryEvent {
  const r = v as HistoryEvent;
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.id === "string" &&
    typeof r.time === "number" &&
    typeof r.agentClass === "string" &&
    typeof r.agentName === "string" &&
    typeof r.type === "string"
  );
}

/** The events of objects, decompressed; a line that does not parse is skipped (an object is never half-trusted for more). */
async function fetchEvents(bucket: R2Bucket, keys: string[], budget: Budget): Promise<HistoryEvent[]> {
  budget.fetch(keys.length);
  const out: HistoryEvent[] = [];
  // A few at a time: enough to hide R2 latency, few enough for the Worker's connection limit (6).
  for (let i = 0; i < keys.length; i += 6) {
    const texts = await Promise.all(
      keys.slice(i, i + 6).map(async (key) => {
        const obj = await bucket.get(key);
        // Deleted by retention between the listing and now: nothing to read.
        if (!obj) return "";
        budget.scan.bytes += obj.size;
        return new Response(obj.body.pipeThrough(new DecompressionStream("gzip"))).text();
      }),
    );
    for (const t of texts)
      for (const line of t.split("\n")) {
        if (!line) continue;
        try {
          const v: unknown = JSON.parse(line);
          if (isRecord(v)) out.push(v);
        } catch {
          // A torn line: the rest of the object still reads.
        }
      }
  }
  return out;
}

/** The hours of [from, to] in reading order, at most `max` (the rest are reported as not covered). */
function hoursOf(from: number, to: number, dir: "ASC" | "DESC", max: number): { hours: number[]; all: number } {
  const first = hourOf(from);
  const last = hourOf(to);
  const all = Math.floor((last - first) / HOUR_MS) + 1;
  const n = Math.min(all, max);
  return { hours: Array.from({ length: n }, (_, i) => (dir === "ASC" ? first + i * HOUR_MS : last - i * HOUR_MS)), all };
}

const byTime = (dir: "ASC" | "DESC") => (a: HistoryEvent, b: HistoryEvent) => {
  const c = a.time - b.time || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return dir === "ASC" ? c : -c;
};

/** What reading one hour found; `cut` when a limit stopped it inside the hour, with the part it fully covered. */
type HourRead = { events: HistoryEvent[]; cut?: { from: number; to: number; stop: HistoryStop } };

/**
 * Reads hour by hour in `dir` order, widening the covered span as it goes. A limit stops it: between hours, or
 * inside one when the hour says which part it covered. Only events inside the covered span are returned, so the
 * span has no gaps: a page can continue from its edge.
 */
async function scanHours(
  from: number,
  to: number,
  dir: "ASC" | "DESC",
  limits: HistoryLimits,
  readHour: (hour: number, budget: Budget) => Promise<HourRead>,
): Promise<HistoryRead> {
  const budget = new Budget(limits);
  const scan = budget.scan;
  const seen = new Set<string>();
  const events: HistoryEvent[] = [];
  if (!(to >= from)) return { events, scan };
  const { hours, all } = hoursOf(from, to, dir, limits.maxHours);
  const cover = (lo: number, hi: number) => {
    if (lo > hi) return;
    scan.coveredFrom = scan.coveredFrom === null ? lo : Math.min(scan.coveredFrom, lo);
    scan.coveredTo = scan.coveredTo === null ? hi : Math.max(scan.coveredTo, hi);
  };
  const stop = (why: HistoryStop) => {
    scan.complete = false;
    scan.stop = why;
  };
  for (const hour of hours) {
    let got: HourRead;
    try {
      got = await readHour(hour, budget);
    } catch (e) {
      if (!(e instanceof OutOfBudget)) throw e;
      stop(e.stop);
      break;
    }
    let lo = Math.max(from, hour, got.cut?.from ?? -Infinity);
    let hi = Math.min(to, hour + HOUR_MS - 1, got.cut?.to ?? Infinity);
    const fresh = got.events
      .filter((e) => {
        // A redelivery split differently can store an event in two objects: one copy is returned.
        const k = JSON.stringify([e.agentClass, e.agentName, e.id]);
        if (seen.has(k) || e.time < lo || e.time > hi) return false;
        seen.add(k);
        return true;
      })
      .sort(byTime(dir));
    let why: HistoryStop | null = got.cut?.stop ?? null;
    const room = limits.maxEvents - events.length;
    if (fresh.length > room) {
      // Keep whole instants: the first event left out bounds the span, and its time-mates go too.
      const edge = fresh[room]!.time;
      fresh.splice(0, fresh.length, ...fresh.filter((e) => (dir === "ASC" ? e.time < edge : e.time > edge)));
      if (dir === "ASC") hi = edge - 1;
      else lo = edge + 1;
      why = { limit: "events", at: limits.maxEvents };
    }
    events.push(...fresh);
    scan.hours++;
    cover(lo, hi);
    if (why) {
      stop(why);
      break;
    }
  }
  if (scan.complete && all > hours.length) stop({ limit: "hours", at: limits.maxHours, of: all });
  events.sort(byTime(dir));
  return { events, scan };
}

export type HistoryEventsQuery = {
  agent: AgentRef;
  /** Inclusive epoch-ms bounds on the events' own time. */
  from: number;
  to: number;
  /** Which of the agent's events to return (a run's, an incident's…); all of them when absent. */
  match?: (e: HistoryEvent) => boolean;
  /** ASC (default) reads from `from` onward; DESC from `to` back. Decides which end a limit cuts off. */
  dir?: "ASC" | "DESC";
  limits?: Partial<HistoryLimits>;
};

/**
 * One agent's events in [from, to] that `match`, in `dir` order. Per hour it lists the agent's shard folder
 * (one per shard count in `counts`) from one slot before `from` to the first key past `to`, and fetches only
 * objects whose time span overlaps and whose Bloom filter may hold the agent. At most AGENT_READ_LIMITS (or `limits`): hours, list calls, objects, events.
 */
export async function historyEvents(bucket: R2Bucket, counts: ShardCounts, q: HistoryEventsQuery): Promise<HistoryRead> {
  const limits = { ...AGENT_READ_LIMITS, ...q.limits };
  const item = agentItem(q.agent);
  const shardCounts = [counts.shards, ...(counts.previousShards ?? []).filter((n) => n !== counts.shards)];
  const dir = q.dir ?? "ASC";
  const mine = (e: HistoryEvent) => e.agentClass === q.agent.agentClass && e.agentName === q.agent.agentName && (q.match?.(e) ?? true);
  return scanHours(q.from, q.to, dir, limits, async (hour, budget) => {
    const keys: Candidate[] = [];
    for (const n of shardCounts) {
      const shard = shardOf(q.agent, n);
      keys.push(...(await candidates(bucket, shardPrefix(hour, n, shard), q.from, q.to, [item], budget, true, listStartAfter(hour, n, shard, q.from))));
    }
    const room = limits.maxObjects - budget.scan.objectsFetched;
    if (keys.length <= room)
      return {
        events: (
          await fetchEvents(
            bucket,
            keys.map((k) => k.key),
            budget,
          )
        ).filter(mine),
      };
    // More objects than the budget: read the end the direction starts from, and say how far that covers: up to
    // the earliest event of an unread object (ASC), or from just after the latest one (DESC).
    const order = [...keys].sort((a, b) => (dir === "ASC" ? a.min - b.min || a.max - b.max : b.max - a.max || b.min - a.min));
    const take = order.slice(0, room);
    const left = order.slice(room);
    const events = (
      await fetchEvents(
        bucket,
        take.map((k) => k.key),
        budget,
      )
    ).filter(mine);
    const stop: HistoryStop = { limit: "objects", at: limits.maxObjects };
    return dir === "ASC"
      ? { events, cut: { from: -Infinity, to: Math.min(...left.map((k) => k.min)) - 1, stop } }
      : { events, cut: { from: Math.max(...left.map((k) => k.max)) + 1, to: Infinity, stop } };
  });
}

/** What an id lookup may name: one id kind, or `id` for any of them. */
const LOOKUP_KINDS = [...ID_KINDS, "id"] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];

/** An id lookup: exactly one id, and an optional window (default: the 24 UTC hours ending with `to`'s, `to` defaulting to now). */
export const historySearchInput = z
  .object({
    traceId: text("traceId"),
    requestId: text("requestId"),
    taskId: text("taskId"),
    opId: text("opId"),
    fiberId: text("fiberId"),
    incidentId: text("incidentId"),
    /** Any of the six: an id pasted into the search box, whatever it names. */
    id: text("id"),
    from: instant("from"),
    to: instant("to"),
  })
  .superRefine((q, ctx) => {
    const named = LOOKUP_KINDS.filter((k) => q[k] !== undefined);
    if (named.length !== 1)
      ctx.addIssue({ code: "custom", message: `name exactly one of ${LOOKUP_KINDS.join(", ")} to look up (got ${named.length ? named.join(", ") : "none"})` });
    if (q.from !== undefined && q.to !== undefined && q.from > q.to) ctx.addIssue({ code: "custom", message: "from must not be after to" });
  });
export type HistorySearchInput = { [K in keyof z.input<typeof historySearchInput>]?: unknown };

/**
 * Events of any agent carrying one id (of the kind named, or of any kind for `id`), newest first. Per hour (newest first) it lists the whole hour folder,
 * every shard, and fetches only objects whose Bloom filter may hold the id. The window defaults to the 24 UTC
 * hours ending with `to`'s; at most ID_SEARCH_LIMITS (or `limits`). Throws BadRequest (a 400) for a malformed query.
 */
export async function historySearch(
  bucket: R2Bucket,
  input: HistorySearchInput,
  opts: { now?: number; limits?: Partial<HistoryLimits> } = {},
): Promise<HistoryRead & { kind: LookupKind; id: string }> {
  const q = parseFilters(historySearchInput, input);
  const kind = LOOKUP_KINDS.find((k) => q[k] !== undefined)!;
  const id = q[kind]!;
  const kinds: readonly IdKind[] = kind === "id" ? ID_KINDS : [kind];
  const limits = { ...ID_SEARCH_LIMITS, ...opts.limits };
  const to = q.to ?? opts.now ?? Date.now();
  // Whole hours: the 24 ending with `to`'s own, so the default window is exactly the default hour limit.
  const from = q.from ?? hourOf(to) - 23 * HOUR_MS;
  const items = kinds.map((k) => idItem(k, id));
  const read = await scanHours(from, to, "DESC", limits, async (hour, budget) => {
    const keys = await candidates(bucket, hourPrefix(hour), from, to, items, budget, false);
    return {
      events: (
        await fetchEvents(
          bucket,
          keys.map((k) => k.key),
          budget,
        )
      ).filter((e) => kinds.some((k) => idOf(e, k) === id)),
    };
  });
  return { ...read, kind, id };
}

/**
 * The newest events of the whole fleet in [from, to] that `match`, newest first. Per hour (newest first) it lists the
 * whole hour folder (every shard) and fetches the objects whose span overlaps, newest first; when an hour holds more
 * than the objects left in the budget, it reads the newest and says from where it covered (scan.coveredFrom). At
 * most FLEET_READ_LIMITS (or `limits`): 48 hours, 50 list calls, 24 objects, 201 events.
 */
export async function historyNewest(
  bucket: R2Bucket,
  q: { from: number; to: number; match: (e: HistoryEvent) => boolean; limits?: Partial<HistoryLimits> },
): Promise<HistoryRead> {
  const limits = { ...FLEET_READ_LIMITS, ...q.limits };
  return scanHours(q.from, q.to, "DESC", limits, async (hour, budget) => {
    const keys = await candidates(bucket, hourPrefix(hour), q.from, q.to, null, budget, false);
    const room = limits.maxObjects - budget.scan.objectsFetched;
    const order = [...keys].sort((a, b) => b.max - a.max || b.min - a.min);
    const take = order.slice(0, room);
    const left = order.slice(room);
    const events = (
      await fetchEvents(
        bucket,
        take.map((k) => k.key),
        budget,
      )
    ).filter(q.match);
    if (!left.length) return { events };
    return { events, cut: { from: Math.max(...left.map((k) => k.max)) + 1, to: Infinity, stop: { limit: "objects", at: limits.maxObjects } } };
  });
}
