import { RUN_KINDS, type RunKind } from "@agent-oncall/telemetry/contract";
import type { HistoryTier } from "../history/tier";
import type { Store } from "../partitions";
import { partitionFor } from "../partitions";
import { agents } from "../schema";
import { names } from "../sql-names";
import { addNotForecast, compareExhausting, type ExhaustingSoon, exhaustingSoon, noneNotForecast } from "./budget";
import { GAP_COUNT_WINDOW, type GapCount, HAS_GAP_SQL } from "./event-gaps";
import { parseFilters } from "./filters";
import { compareKey, groupIncidentsIn } from "./merged";
import {
  type EventSeries,
  eventSeries,
  type OverviewCounts,
  overviewCounts,
  type RunningOfKind,
  type TopReasons,
  topReasons,
  topReasonsFilters,
} from "./overview";
import { type Capped, DEFAULT_CAP, rowsReadOf } from "./paging";
import { type AgentRef, type AlarmRate, AWAKE_LIMIT, alarmRates, compareRates, type ResidentEstimate, residentEstimate } from "./residency";
import { DEFAULT_STUCK_CONFIG, finishStuck, listStuck, type StuckConfig, type StuckEntry, type StuckFilter, stuckLimit, stuckReads } from "./stuck";

/**
 * The overview's and the stuck page's reads over a partitioned store (src/store/partitions.ts): each partition
 * answers its own read, and the answers merge so that they are exactly what one database holding every partition's
 * rows would answer. Counts sum (capped again), time series sum per bucket, top-N lists re-rank from each
 * partition's exact counts, and ordered lists merge by the read model's own order. With one partition each is
 * exactly the read model on it (same answer, same rows read); with N each reads about N × what one partition reads.
 */

const A = names(agents);
const DAY_MS = 86_400_000;

/** Capped counts summed: n is capped again at `cap`; capped when any partition was or the sum passes `cap`. */
function sumCapped(counts: Capped[], cap: number): Capped {
  const n = counts.reduce((a, c) => a + c.n, 0);
  return { n: Math.min(n, cap), capped: n > cap || counts.some((c) => c.capped) };
}

/**
 * The overview's agents-with-gaps count over every partition: the newest `window` + 1 agents of the whole store (by
 * agents_listed's order: listed_at, class, name, newest first), merged from each partition's newest `window` + 1,
 * and the gaps among them. Exactly what gapCountStatement counts on one database; about N × 1,001 rows read.
 */
async function gapCountIn(store: Store, window: number): Promise<GapCount & { rowsRead: number }> {
  const sql = `SELECT ${A.listedAt} AS listedAt, ${A.agentClass} AS agentClass, ${A.agentName} AS agentName, (${HAS_GAP_SQL}) AS g,
      CASE WHEN ${HAS_GAP_SQL} THEN ${A.seqMax} - ${A.seqSeen} ELSE 0 END AS missing
    FROM ${A.$table} INDEXED BY agents_listed ORDER BY ${A.listedAt} DESC, ${A.agentClass} DESC, ${A.agentName} DESC LIMIT ?1 + 1`;
  type Row = { listedAt: number; agentClass: string; agentName: string; g: number; missing: number };
  const results = await Promise.all(store.parts.map((db) => db.prepare(sql).bind(window).all<Row>()));
  const newest = results
    .flatMap((r) => r.results)
    .sort((a, b) => -compareKey([a.listedAt, a.agentClass, a.agentName], [b.listedAt, b.agentClass, b.agentName]))
    .slice(0, window + 1);
  return {
    n: newest.reduce((s, r) => s + Number(r.g), 0),
    capped: newest.length > window,
    missingEvents: newest.reduce((s, r) => s + Number(r.missing), 0),
    rowsRead: rowsReadOf(...results),
  };
}

/**
 * overviewCounts over the store. Every count sums the partitions' capped counts (exact below the cap, "≥cap" at
 * it, as on one database); respent tokens sum; agents with gaps merge the newest agents (gapCountIn). One
 * caveat, stated where it shows: a running kind past the cap counts `confirmed` among each partition's newest
 * `cap` (then capped at `cap`), not among the whole store's newest `cap`.
 */
export async function overviewCountsIn(store: Store, now: number, cap = DEFAULT_CAP, gapWindow = GAP_COUNT_WINDOW): Promise<OverviewCounts> {
  if (store.parts.length === 1 && gapWindow === GAP_COUNT_WINDOW) return overviewCounts(store.parts[0]!, now, cap);
  const [each, gaps] = await Promise.all([Promise.all(store.parts.map((db) => overviewCounts(db, now, cap))), gapCountIn(store, gapWindow)]);
  const runningByKind = Object.fromEntries(
    RUN_KINDS.map((k) => {
      const kinds = each.map((e) => e.runningByKind[k]);
      const sum = sumCapped(kinds, cap);
      return [
        k,
        {
          ...sum,
          confirmed: Math.min(
            cap,
            kinds.reduce((a, x) => a + x.confirmed, 0),
          ),
        },
      ];
    }),
  ) as Record<RunKind, RunningOfKind>;
  const total = Object.values(runningByKind).reduce((a, k) => a + k.n, 0);
  const { rowsRead: gapRows, ...agentsWithGaps } = gaps;
  return {
    running: { n: total, capped: Object.values(runningByKind).some((k) => k.capped) },
    runningByKind,
    openIncidents: sumCapped(
      each.map((e) => e.openIncidents),
      cap,
    ),
    exhaustions24h: sumCapped(
      each.map((e) => e.exhaustions24h),
      cap,
    ),
    ambiguousOps: sumCapped(
      each.map((e) => e.ambiguousOps),
      cap,
    ),
    respentTokens24h: each.reduce((a, e) => a + e.respentTokens24h, 0),
    agentsWithGaps,
    // Each partition's count is of its own newest flagged agents: the sum is exact until one is capped, then a lower bound.
    agentsBlocked: sumCapped(
      each.map((e) => e.agentsBlocked),
      cap,
    ),
    window: each[0]!.window,
    // Each partition's own gap count is read and not used (its batch is one round trip); counted honestly.
    rowsRead: each.reduce((a, e) => a + e.rowsRead, 0) + gapRows,
  };
}

/** eventSeries over the store: the same buckets from every partition, summed per bucket and series. */
export async function eventSeriesIn(store: Store, opts: { since?: unknown; until?: unknown; types?: unknown } = {}, now = Date.now()): Promise<EventSeries> {
  if (store.parts.length === 1) return eventSeries(store.parts[0]!, opts, now);
  const each = await Promise.all(store.parts.map((db) => eventSeries(db, opts, now)));
  const first = each[0]!;
  const series = Object.fromEntries(
    Object.keys(first.series).map((name) => [name, first.buckets.map((_, i) => each.reduce((a, e) => a + e.series[name]![i]!, 0))]),
  );
  return { buckets: first.buckets, series, rowsRead: each.reduce((a, e) => a + e.rowsRead, 0) };
}

/**
 * topReasons over the store: the reasons of the same incidents (exhausted since `since`) counted in every
 * partition (groupIncidentsIn: exact per-partition counts, summed), re-ranked, then the top `limit`.
 */
export async function topReasonsIn(store: Store, opts: { since?: unknown; limit?: unknown } = {}, now = Date.now()): Promise<TopReasons> {
  if (store.parts.length === 1) return topReasons(store.parts[0]!, opts, now);
  const f = parseFilters(topReasonsFilters, opts);
  const filters = { status: "exhausted" as const, since: f.since ?? now - DAY_MS };
  const g = await groupIncidentsIn(store, filters, "reason");
  return { reasons: g.groups.slice(0, f.limit ?? 10).map((x) => ({ reason: x.key, n: x.n })), filters, bounded: g.bounded, rowsRead: g.rowsRead };
}

/**
 * listStuck over the store. Each of listStuck's statements reads at most `limit` findings in its index's order; the
 * partitions' findings of each statement merge by that order and are cut at `limit` (what the statement gives on
 * one database), then finishStuck sorts them as the list does. Reads about N × what one partition reads.
 */
export async function listStuckIn(store: Store, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, filter: StuckFilter = {}): Promise<StuckEntry[]> {
  if (store.parts.length === 1) return listStuck(store.parts[0]!, now, config, filter);
  const limit = stuckLimit(filter);
  const each = await Promise.all(store.parts.map((db) => stuckReads(db, now, config, filter)));
  const reads = (each[0] ?? []).map((_, i) =>
    each
      .flatMap((p) => p[i]!)
      .sort((a, b) => -compareKey(a.key, b.key))
      .slice(0, limit),
  );
  return finishStuck(reads, limit);
}

/** countStuck over the store: the merged findings, up to `cap` (exact: each partition's count is capped at `cap` too). */
export async function countStuckIn(store: Store, now: number, config: StuckConfig = DEFAULT_STUCK_CONFIG, cap = 200): Promise<Capped> {
  const found = await listStuckIn(store, now, config, { limit: cap });
  return { n: found.length, capped: found.length >= cap };
}

/**
 * exhaustingSoon over the store: each partition's soonest `limit` (its own candidates are complete unless it is
 * `bounded`), merged soonest first and cut at `limit`.
 */
export async function exhaustingSoonIn(store: Store, now: number, windowMs: number, limit = 20): Promise<ExhaustingSoon> {
  if (store.parts.length === 1) return exhaustingSoon(store.parts[0]!, now, windowMs, limit);
  const each = await Promise.all(store.parts.map((db) => exhaustingSoon(db, now, windowMs, limit)));
  const items = each.flatMap((e) => e.items).sort(compareExhausting);
  return {
    items: items.slice(0, limit),
    windowMs,
    notForecast: each.map((e) => e.notForecast).reduce(addNotForecast, noneNotForecast()),
    bounded: each.some((e) => e.bounded),
    rowsRead: each.reduce((a, e) => a + e.rowsRead, 0),
  };
}

/**
 * alarmRates over the store: one agent's from its partition; else each partition's fastest `limit` (an agent's
 * rollups, row and runs all live in its partition, so each rate is exact), merged fastest first and cut at `limit`.
 */
export async function alarmRatesIn(
  store: Store,
  opts: { now?: number; agent?: AgentRef; loopsOnly?: boolean; limit?: number } = {},
): Promise<{ items: AlarmRate[]; rowsRead: number }> {
  if (opts.agent) return alarmRates(partitionFor(store, opts.agent.agentClass, opts.agent.agentName), opts);
  if (store.parts.length === 1) return alarmRates(store.parts[0]!, opts);
  const now = opts.now ?? Date.now();
  const each = await Promise.all(store.parts.map((db) => alarmRates(db, { ...opts, now })));
  const items = each
    .flatMap((e) => e.items)
    .sort(compareRates)
    .slice(0, opts.limit ?? AWAKE_LIMIT);
  return { items, rowsRead: each.reduce((a, e) => a + e.rowsRead, 0) };
}

/** residentEstimate from the agent's partition (its timeline segments live there). */
export const residentEstimateIn = (store: Store, agent: AgentRef, now = Date.now(), history?: HistoryTier): Promise<ResidentEstimate> =>
  residentEstimate(partitionFor(store, agent.agentClass, agent.agentName), agent, now, history);
