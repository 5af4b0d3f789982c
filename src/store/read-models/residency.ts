import { ALARM_COALESCE_MS, ALARM_EVENT } from "@agent-oncall/telemetry/contract";
import type { HistoryTier } from "../history/tier";
import type { Store } from "../partitions";
import { agents, eventRollups, eventSegments, runs, silentWakes as silentWakesTable, tailObjects } from "../schema";
import { names } from "../sql-names";
import { BUCKET_MS } from "./overview";
import { type Capped, rowsReadOf } from "./paging";

/**
 * Why agents stay awake, from what ingest keeps: alarm firings (`schedule.executed`) roll up per agent and
 * 5-minute bucket in event_rollups (dim = the agent), and the agents row keeps the first and last firing; the
 * hot timeline's segments give when the agent was seen active. Facts only: words live in console/.
 */

const R = names(eventRollups);
const A = names(agents);
const F = names(runs);
const S = names(eventSegments);
const W = names(silentWakesTable);
const O = names(tailObjects);

/** The event a schedule's callback firing is reported as: the registry entry marked `alarmFiring`. */
export { ALARM_EVENT };

/** The rollup dimension of an agent's alarm firings (ingest writes it, this file reads it back). */
export function alarmDim(agentClass: string, agentName: string): string {
  return JSON.stringify([agentClass, agentName]);
}

/** The window an alarm rate is measured over. */
export const RATE_WINDOW_MS = 3_600_000;
/** Firings in the window from which an alarm "keeps firing": fewer could be one schedule doing its job. */
export const LOOP_MIN_FIRINGS = 3;
/** How long an agent may hold its alarm firings before it ships them as one count (the telemetry's window). */
export const FIRINGS_REPORT_WINDOW_MS = ALARM_COALESCE_MS;
/**
 * A loop counts as still firing while its last reported firing is within this many periods (and at least a minute)
 * of now; for a loop faster than ALARM_COALESCE_MS, within that window more, since the agent reports its firings
 * at most once per window (src/telemetry/alarm-firings.ts).
 */
const STILL_FIRING_PERIODS = 3;
/** At most this many agents in the awake list. */
export const AWAKE_LIMIT = 100;

export type AgentRef = { agentClass: string; agentName: string };

/**
 * One agent's alarm firings over the window. `perHour` is measured between firings when the loop began inside the
 * window ((firings − 1) / (last − first)), else as firings over the window; `windowFrom` says where it starts.
 * From the outbox, firings arrive as counts (an event stands for every firing since the callback's previous one, the
 * last at its time), so `firings` up to `lastAt` are exact; past the window's edges the count is off by at most one
 * window's worth of firings (ALARM_COALESCE_MS of a rate window of an hour). From the tail, each `schedule:execute`
 * the SDK published is one event: nothing is held in the agent, so an eviction between firings loses none.
 * `idle`: no run of the agent is open or was seen in the window. `loop`: it keeps firing (≥ LOOP_MIN_FIRINGS,
 * last firing within a few periods) with nothing to do (idle).
 */
export type AlarmRate = AgentRef & {
  firings: number;
  windowFrom: number;
  perHour: number;
  firstAt: number | null;
  lastAt: number | null;
  idle: boolean;
  loop: boolean;
};

type RateRow = { agentClass: string; agentName: string; n: number; firstAt: number | null; lastAt: number | null; busy: number };

function rateOf(r: RateRow, now: number, from: number): AlarmRate {
  const firings = Number(r.n);
  const startedInside = r.firstAt !== null && r.firstAt >= from;
  const windowFrom = startedInside ? r.firstAt! : from;
  const perHour =
    startedInside && r.lastAt !== null && firings > 1 && r.lastAt > r.firstAt!
      ? ((firings - 1) / (r.lastAt - r.firstAt!)) * 3_600_000
      : (firings / Math.max(1, now - windowFrom)) * 3_600_000;
  const periodMs = perHour > 0 ? 3_600_000 / perHour : Number.POSITIVE_INFINITY;
  const slack = Math.max(60_000, STILL_FIRING_PERIODS * periodMs) + (periodMs < ALARM_COALESCE_MS ? ALARM_COALESCE_MS : 0);
  const stillFiring = r.lastAt !== null && now - r.lastAt <= slack;
  const idle = Number(r.busy) === 0;
  return {
    agentClass: r.agentClass,
    agentName: r.agentName,
    firings,
    windowFrom,
    perHour,
    firstAt: r.firstAt,
    lastAt: r.lastAt,
    idle,
    loop: idle && stillFiring && firings >= LOOP_MIN_FIRINGS,
  };
}

/**
 * Alarm rates of every agent whose alarm fired in the last hour (or of one agent), fastest first. Reads the
 * rollup rows of the window (one per agent and 5-minute bucket, through event_rollups_type), each agent's row by
 * its key, and whether a run of it is open or was seen in the window (runs_agent, stopping at the first).
 */
export async function alarmRates(
  db: D1Database,
  opts: { now?: number; agent?: AgentRef; loopsOnly?: boolean; limit?: number } = {},
): Promise<{ items: AlarmRate[]; rowsRead: number }> {
  const now = opts.now ?? Date.now();
  const from = Math.floor((now - RATE_WINDOW_MS) / BUCKET_MS) * BUCKET_MS;
  const dim = opts.agent ? alarmDim(opts.agent.agentClass, opts.agent.agentName) : null;
  const r = await db
    .prepare(
      `WITH fired AS (
         SELECT ${R.dim} AS dim, SUM(${R.n}) AS n FROM ${R.$table} INDEXED BY event_rollups_type
         WHERE ${R.type} = ?1 AND ${R.bucket} >= ?2 ${dim === null ? "" : `AND ${R.dim} = ?3`} GROUP BY ${R.dim}
       )
       SELECT a.${A.agentClass} AS agentClass, a.${A.agentName} AS agentName, fired.n AS n,
              a.${A.alarmFirstAt} AS firstAt, a.${A.alarmLastAt} AS lastAt,
              EXISTS (SELECT 1 FROM ${F.$table} INDEXED BY runs_agent WHERE ${F.agentClass} = a.${A.agentClass} AND ${F.agentName} = a.${A.agentName}
                      AND (${F.outcome} IS NULL OR ${F.lastSeen} >= ?2)) AS busy
       FROM fired JOIN ${A.$table} a ON a.${A.agentClass} = fired.dim ->> '$[0]' AND a.${A.agentName} = fired.dim ->> '$[1]'`,
    )
    .bind(ALARM_EVENT, from, ...(dim === null ? [] : [dim]))
    .all<RateRow>();
  const items = r.results
    .map((row) => rateOf(row, now, from))
    .filter((x) => !opts.loopsOnly || x.loop)
    .sort(compareRates)
    .slice(0, opts.limit ?? AWAKE_LIMIT);
  return { items, rowsRead: rowsReadOf(r) };
}

/** The awake list's order: fastest first, ties by agent (merged-overview.ts merges partitions by it too). */
export const compareRates = (a: AlarmRate, b: AlarmRate): number =>
  b.perHour - a.perHour || a.agentClass.localeCompare(b.agentClass) || a.agentName.localeCompare(b.agentName);

/**
 * How many agents are flagged as alarm loops now (the overview's card; /awake?resident=idle lists them), counted up
 * to the awake list's length (`capped` when it is reached). Reads what alarmRates reads.
 */
async function countAlarmLoops(db: D1Database, now = Date.now()): Promise<{ n: number; capped: boolean; rowsRead: number }> {
  const { items, rowsRead } = await alarmRates(db, { now, loopsOnly: true });
  return { n: items.length, capped: items.length >= AWAKE_LIMIT, rowsRead };
}

/** countAlarmLoops over the store: an agent's alarm rollups and row live in its partition, so the counts sum, capped again at the awake list's length. */
export async function countAlarmLoopsIn(store: Store, now = Date.now()): Promise<Capped & { rowsRead: number }> {
  if (store.parts.length === 1) return countAlarmLoops(store.parts[0]!, now);
  const each = await Promise.all(store.parts.map((db) => countAlarmLoops(db, now)));
  const n = Math.min(
    AWAKE_LIMIT,
    each.reduce((a, e) => a + e.n, 0),
  );
  return { n, capped: n >= AWAKE_LIMIT, rowsRead: each.reduce((a, e) => a + e.rowsRead, 0) };
}

/** Eviction of an idle Durable Object: after about 70 to 140 s without a request, alarm or open connection (the SDK's keepAlive docs). */
export const IDLE_EVICTION_MS = { low: 70_000, high: 140_000 } as const;
const DAY_MS = 86_400_000;
/** Segments read at most for one estimate (a segment spans at most a minute of one agent's events). */
const SEGMENTS_READ = 5_000;

/**
 * An estimate of how long the agent was resident over the 24 h before `now`: the union of its activity, each
 * segment of its hot timeline (events at most a minute apart) held awake until idle eviction after it. `lowMs`
 * assumes eviction after 70 s, `highMs` after 140 s; the truth lies between for what sent events. Residency
 * nothing reports (keepAlive heartbeats, open connections, RPCs without events) is not seen, so both can be low;
 * `capped` says the segments read hit their cap (the estimate covers `from` onward only).
 */
export type ResidentEstimate = { from: number; to: number; lowMs: number; highMs: number; segments: number; capped: boolean; rowsRead: number };

export async function residentEstimate(db: D1Database, agent: AgentRef, now = Date.now(), history?: HistoryTier): Promise<ResidentEstimate> {
  const since = now - DAY_MS;
  if (history && !history.segments) return residentFromHistory(history, agent, since, now);
  const r = await db
    .prepare(
      `SELECT ${S.timeFrom} AS f, ${S.timeTo} AS t FROM ${S.$table} INDEXED BY event_segments_agent_time
       WHERE ${S.agentClass} = ?1 AND ${S.agentName} = ?2 AND ${S.timeTo} >= ?3 ORDER BY ${S.timeTo} DESC LIMIT ${SEGMENTS_READ}`,
    )
    .bind(agent.agentClass, agent.agentName, since)
    .all<{ f: number; t: number }>();
  const spans = r.results.map((x) => ({ f: Math.max(since, Number(x.f)), t: Math.min(now, Number(x.t)) })).sort((a, b) => a.f - b.f);
  const capped = r.results.length >= SEGMENTS_READ;
  return estimateOf(spans, capped ? spans[0]!.f : since, now, capped, rowsReadOf(r));
}

/**
 * residentEstimate from the R2 history, for when D1 keeps no event bodies (TIMELINE_SEGMENTS off): the agent's events
 * of the 24 h, newest first, each a point of activity held awake until eviction after it (a segment's events were at
 * most a minute apart, closer than either eviction, so the union is the same). At most AGENT_READ_LIMITS' objects
 * (100) and events (2,000): past them the estimate covers from the oldest instant read (`capped`). No D1 rows.
 */
async function residentFromHistory(history: HistoryTier, agent: AgentRef, since: number, now: number): Promise<ResidentEstimate> {
  const r = await history.agentEvents({ agent, from: since, to: now, dir: "DESC" });
  const spans = r.events.map((e) => ({ f: Math.max(since, e.time), t: Math.min(now, e.time) })).sort((a, b) => a.f - b.f);
  const capped = !r.scan.complete;
  return estimateOf(spans, capped ? (r.scan.coveredFrom ?? now) : since, now, capped, 0);
}

/** A residency estimate from an agent's active spans (D1 segments or R2 events), read from `from` to `now`. */
function estimateOf(spans: { f: number; t: number }[], from: number, now: number, capped: boolean, rowsRead: number): ResidentEstimate {
  return {
    from,
    to: now,
    lowMs: unionMs(spans, IDLE_EVICTION_MS.low, now),
    highMs: unionMs(spans, IDLE_EVICTION_MS.high, now),
    segments: spans.length,
    capped,
    rowsRead,
  };
}

/** The length of the union of [f, t + tail] (cut at `end`), for spans sorted by start. */
export function unionMs(spans: readonly { f: number; t: number }[], tail: number, end: number): number {
  let total = 0;
  let lo = -1;
  let hi = -1;
  for (const s of spans) {
    const a = s.f;
    const b = Math.min(end, s.t + tail);
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else hi = Math.max(hi, b);
  }
  if (hi > lo) total += hi - lo;
  return total;
}

/**
 * A Durable Object woken by its alarm with nothing published by the SDK, over the rate window: what an agent kept
 * awake by `keepAlive()` alone looks like from the tail (the SDK publishes nothing for keepAlive; its heartbeat is
 * an alarm, every 30 s by default). The SDK's own housekeeping alarms look the same, so this says "woken, nothing
 * reported", not "keepAlive". `agentName` is the name the object's own SDK messages gave, null when it never
 * published one (a trace item carries the object's id and class, never its name). `worker` is '' in local dev.
 */
export type SilentWakeRate = {
  worker: string;
  objectId: string;
  agentClass: string | null;
  agentName: string | null;
  wakes: number;
  firstAt: number;
  lastAt: number;
  /** Wakes per hour between the first and the last in the window; null with a single wake. */
  perHour: number | null;
};

type WakeRow = {
  worker: string;
  objectId: string;
  entry: string | null;
  agentClass: string | null;
  agentName: string | null;
  n: number;
  firstAt: number;
  lastAt: number;
};

/**
 * Objects woken by alarms that published nothing in the last hour, most wakes first (home database, where the
 * tail handler writes them). Reads the window's wake rows through silent_wakes_at, one per wake: bounded by the
 * wakes of the hour (120 per object kept alive at the SDK's default 30 s heartbeat).
 */
export async function silentWakes(db: D1Database, opts: { now?: number; limit?: number } = {}): Promise<{ items: SilentWakeRate[]; rowsRead: number }> {
  const now = opts.now ?? Date.now();
  const r = await db
    .prepare(
      `SELECT w.${W.worker} AS worker, w.${W.objectId} AS objectId, MAX(w.${W.agentClass}) AS entry, COUNT(*) AS n,
              MIN(w.${W.at}) AS firstAt, MAX(w.${W.at}) AS lastAt, o.${O.agentClass} AS agentClass, o.${O.agentName} AS agentName
       FROM ${W.$table} w INDEXED BY silent_wakes_at
       LEFT JOIN ${O.$table} o ON o.${O.worker} = w.${W.worker} AND o.${O.objectId} = w.${W.objectId}
       WHERE w.${W.at} >= ?1 AND w.${W.at} <= ?2
       GROUP BY w.${W.worker}, w.${W.objectId} ORDER BY n DESC, w.${W.objectId} LIMIT ?3`,
    )
    .bind(now - RATE_WINDOW_MS, now, opts.limit ?? AWAKE_LIMIT)
    .all<WakeRow>();
  const items = r.results.map((x): SilentWakeRate => {
    const wakes = Number(x.n);
    const span = Number(x.lastAt) - Number(x.firstAt);
    return {
      worker: x.worker,
      objectId: x.objectId,
      agentClass: x.agentClass ?? x.entry,
      agentName: x.agentName,
      wakes,
      firstAt: Number(x.firstAt),
      lastAt: Number(x.lastAt),
      perHour: wakes > 1 && span > 0 ? ((wakes - 1) / span) * 3_600_000 : null,
    };
  });
  return { items, rowsRead: rowsReadOf(r) };
}
