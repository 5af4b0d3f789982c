import { EVENT_TYPES, RUN_KINDS, type RunKind, SERIES_TYPES } from "@agent-oncall/telemetry/contract";
import { z } from "zod";
import { eventRollups, opAmbiguities, runs } from "../schema";
import { names, selectList } from "../sql-names";
import { blockedCountOf, blockedCountStatement } from "./blocked-agents";
import { BadRequest } from "./errors";
import { type GapCount, gapCountOf, gapCountStatement } from "./event-gaps";
import { commaList, instant, parseFilters } from "./filters";
import { countIncidentsStatement, groupIncidents } from "./incidents";
import { type Capped, cappedCountStatement, cappedOf, cond, DEFAULT_CAP, rowsReadOf } from "./paging";

/**
 * The overview: capped counts from the projections, and charts from
 * event_rollups (5-minute buckets maintained by ingest), never counting over
 * the events table. Every figure counts exactly what the list it links to
 * lists: incident figures are countIncidents over the same filters the link
 * carries, and rollup figures count events, which the events list lists.
 */

const R = names(eventRollups);
const F = names(runs);
const O = names(opAmbiguities);

export const BUCKET_MS = 5 * 60_000;
const DAY_MS = 86_400_000;
/** Widest chart window: 31 days of 5-minute buckets. */
export const MAX_SERIES_MS = 31 * DAY_MS;

/** Series that add up several event types: each registry entry names the series it adds to (`series`). */
export const SERIES_ALIASES: Readonly<Record<string, readonly string[]>> = SERIES_TYPES;
export const DEFAULT_SERIES = ["chat.recovery.exhausted", "recovery", "chat.context.compacted", "op.ambiguous"] as const;

/** The event types a series adds up (an alias's, or the one type it names). */
export const seriesTypes = (name: string): readonly string[] => SERIES_ALIASES[name] ?? [name];

const floorBucket = (t: number) => Math.floor(t / BUCKET_MS) * BUCKET_MS;

/**
 * Running runs of one kind (no outcome yet), capped, and how many of them a reconciliation confirmed after
 * their last event (the agent itself said they are alive); the rest are unconfirmed: running as far as the
 * events tell. When `capped`, `confirmed` counts among the newest `cap` only.
 */
export type RunningOfKind = Capped & { confirmed: number };

export type OverviewCounts = {
  /** Running runs of every kind: the sum of runningByKind (capped when any kind is). */
  running: Capped;
  runningByKind: Record<RunKind, RunningOfKind>;
  /** Incidents open now (countIncidents { status: "open" }). */
  openIncidents: Capped;
  /** Incidents exhausted and first seen since `window.since` (countIncidents { status: "exhausted", since }). */
  exhaustions24h: Capped;
  ambiguousOps: Capped;
  /** Model tokens (input + output) recovery attempts re-spent in the last 24 h, from the model.usage rollups' amount. */
  respentTokens24h: number;
  /**
   * Agents with events that never arrived (event-gaps.ts), among the GAP_COUNT_WINDOW + 1 most recently seen
   * (`capped` when there are more agents), and how many events they miss in all.
   */
  agentsWithGaps: GapCount;
  /**
   * Agents whose events cannot reach the console (blocked-agents.ts), among the BLOCKED_COUNT_WINDOW + 1 most
   * recently asked that said so (`capped` when more did).
   */
  agentsBlocked: Capped;
  /**
   * The windows the figures cover, so their links carry exactly these: `since` (now − 24 h) bounds the incident
   * figures' first_seen; `rollupSince` is the first 5-minute bucket the rollup figures add up (up to 5 minutes
   * before `since`), through `now`.
   */
  window: { since: number; rollupSince: number; now: number };
  rowsRead: number;
};

/** The filters of the overview's incident figures: the links carry the same ones. */
export const overviewIncidentFilters = (since: number) =>
  ({
    open: { status: "open" },
    exhausted: { status: "exhausted", since },
  }) as const;

/** Running runs of one kind, newest first, at most cap + 1 index rows, with the confirmed ones among them. */
function runningOfKindStatement(db: D1Database, kind: RunKind, cap: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT COUNT(*) AS n, COALESCE(SUM(c), 0) AS confirmed FROM (
         SELECT (${F.confirmedAt} IS NOT NULL AND ${F.confirmedAt} >= ${F.lastSeen}) AS c FROM ${F.$table} INDEXED BY runs_kind_outcome
         WHERE ${F.kind} = ? AND ${F.outcome} IS NULL ORDER BY ${F.firstSeen} DESC LIMIT ?)`,
    )
    .bind(kind, cap + 1);
}

/**
 * The overview's numbers, each capped at `cap` (render "≥cap" when
 * capped): running runs by kind (a closed run never counts: only rows without an outcome do), open
 * incidents and incidents exhausted in the last 24 h (countIncidents, the list's own filters), open ambiguous
 * ops, and tokens re-spent (model.usage rollups of the buckets from the one holding now − 24 h to now: up to
 * 5 minutes more than 24 h, at most 289 rows). Each running count reads at most cap + 1 rows; the incident
 * counts see countIncidents. Agents with gaps scans at most GAP_COUNT_WINDOW + 1 agents (no index serves it;
 * see event-gaps.ts); blocked agents at most BLOCKED_COUNT_WINDOW + 1 flagged ones (blocked-agents.ts).
 */
export async function overviewCounts(db: D1Database, now: number, cap = DEFAULT_CAP): Promise<OverviewCounts> {
  const since = now - DAY_MS;
  const rollupSince = floorBucket(since);
  const inc = overviewIncidentFilters(since);
  const open = countIncidentsStatement(db, inc.open, cap);
  const exhausted = countIncidentsStatement(db, inc.exhausted, cap);
  // One round trip: a D1 batch.
  const results = (await db.batch([
    ...RUN_KINDS.map((k) => runningOfKindStatement(db, k, cap)),
    open.statement,
    cappedCountStatement(db, `${O.$table} INDEXED BY op_ambiguities_open`, [cond(`${O.resolutionAt} IS NULL`)], cap),
    exhausted.statement,
    // Only usage that carried an incident id has an amount (rows.ts): what recovery re-spent. At most 289 rows.
    db
      .prepare(
        `SELECT COALESCE(SUM(${R.amount}), 0) AS n FROM ${R.$table} INDEXED BY event_rollups_type WHERE ${R.type} = 'model.usage' AND ${R.bucket} >= ? AND ${R.bucket} <= ?`,
      )
      .bind(rollupSince, now),
    gapCountStatement(db),
    blockedCountStatement(db),
  ])) as D1Result<{ n: number; confirmed?: number; scanned?: number }>[];
  const kinds = results.slice(0, RUN_KINDS.length);
  const [openR, ambiguous, ex, respent, gaps, blocked] = results.slice(RUN_KINDS.length) as [
    D1Result<{ n: number; scanned: number }>,
    D1Result<{ n: number }>,
    D1Result<{ n: number; scanned: number }>,
    D1Result<{ n: number }>,
    D1Result<{ n: number; missing: number; scanned: number }>,
    D1Result<{ n: number; scanned: number }>,
  ];
  const runningByKind = Object.fromEntries(
    RUN_KINDS.map((k, i) => [k, { ...cappedOf(kinds[i]!, cap), confirmed: Math.min(Number(kinds[i]!.results[0]?.confirmed ?? 0), cap) }]),
  ) as Record<RunKind, RunningOfKind>;
  const total = Object.values(runningByKind).reduce((a, k) => a + k.n, 0);
  return {
    running: { n: total, capped: Object.values(runningByKind).some((k) => k.capped) },
    runningByKind,
    openIncidents: open.read(openR),
    exhaustions24h: exhausted.read(ex),
    ambiguousOps: cappedOf(ambiguous, cap),
    respentTokens24h: Number(respent.results[0]?.n ?? 0),
    agentsWithGaps: gapCountOf(gaps),
    agentsBlocked: blockedCountOf(blocked, cap),
    window: { since, rollupSince, now },
    rowsRead: rowsReadOf(...kinds, openR, ambiguous, ex, respent, gaps, blocked),
  };
}

const seriesName = z.string().refine((s) => s in SERIES_ALIASES || (EVENT_TYPES as string[]).includes(s), {
  error: (iss) => `unknown series ${JSON.stringify(iss.input)}: use an event type (e.g. chat.recovery.exhausted) or ${Object.keys(SERIES_ALIASES).join(", ")}`,
});

/** Chart query: since / until (epoch ms or ISO; default the last 24 h), series names (event types or aliases; a comma list from a URL works). */
export const seriesFilters = z.object({
  since: instant("since"),
  until: instant("until"),
  types: commaList(
    z
      .array(seriesName, { error: "types must be a list of series names" })
      .min(1, { error: "types must name at least one series" })
      .max(20, { error: "types may name at most 20 series" })
      .optional(),
  ),
});

export type EventSeries = { buckets: number[]; series: Record<string, number[]>; rowsRead: number };

/**
 * Counts per 5-minute bucket for each series, from event_rollups. `buckets`
 * are bucket start times (every bucket in the window, zeros included); each
 * series has one count per bucket. Reads one event_rollups_type range per
 * event type: at most buckets × distinct reasons rows per type.
 */
export async function eventSeries(db: D1Database, opts: { since?: unknown; until?: unknown; types?: unknown } = {}, now = Date.now()): Promise<EventSeries> {
  const f = parseFilters(seriesFilters, opts);
  const until = f.until ?? now;
  const since = f.since ?? until - DAY_MS;
  if (since > until) throw new BadRequest("since must not be later than until");
  if (until - since > MAX_SERIES_MS) throw new BadRequest("the chart window is longer than 31 days; narrow since / until");
  const names = f.types ?? [...DEFAULT_SERIES];
  const first = floorBucket(since);
  const buckets: number[] = [];
  for (let b = first; b <= until; b += BUCKET_MS) buckets.push(b);
  const series: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, buckets.map(() => 0)]));
  const typesOf = seriesTypes;
  const types = [...new Set(names.flatMap(typesOf))];
  const r = await db
    .prepare(
      `SELECT ${selectList(eventRollups, ["bucket", "type"])}, SUM(${R.n}) AS n FROM ${R.$table} INDEXED BY event_rollups_type
       WHERE ${R.type} IN (${types.map(() => "?").join(", ")}) AND ${R.bucket} >= ? AND ${R.bucket} <= ? GROUP BY ${R.type}, ${R.bucket}`,
    )
    .bind(...types, first, until)
    .all<{ bucket: number; type: string; n: number }>();
  for (const row of r.results) {
    const i = (row.bucket - first) / BUCKET_MS;
    for (const name of names) if (typesOf(name).includes(row.type)) series[name]![i] = (series[name]![i] ?? 0) + Number(row.n);
  }
  return { buckets, series, rowsRead: rowsReadOf(r) };
}

export const topReasonsFilters = z.object({
  since: instant("since"),
  limit: z.preprocess(
    (v) => (v === undefined || v === null || v === "" ? undefined : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v),
    z
      .number({ error: "limit must be a whole number from 1 to 100" })
      .int({ error: "limit must be a whole number from 1 to 100" })
      .min(1, { error: "limit must be a whole number from 1 to 100" })
      .max(100, { error: "limit must be a whole number from 1 to 100" })
      .optional(),
  ),
});

export type TopReasons = {
  /** Largest first; `reason` '' is "no reason" (list them with noReason=true). */
  reasons: { reason: string; n: number }[];
  /** The filters each entry's count used, but the reason: its link adds `reason` (or `noReason`). */
  filters: { status: "exhausted"; since: number };
  /** More exhausted incidents than the group scan covers (GROUP_BOUND): the counts cover the newest only. */
  bounded: boolean;
  rowsRead: number;
};

/**
 * The most frequent reasons of the incidents exhausted since `since` (default the last 24 h; first_seen, as the
 * incident list filters), chat recoveries and session turns alike: groupIncidents over the same filters the
 * list uses, so each entry's count is the number of rows its link lists. `limit` default 10, at most 100.
 * Reads at most 2 × GROUP_BOUND rows (the scan and the GROUP BY's b-tree).
 */
export async function topReasons(db: D1Database, opts: { since?: unknown; limit?: unknown } = {}, now = Date.now()): Promise<TopReasons> {
  const f = parseFilters(topReasonsFilters, opts);
  const filters = { status: "exhausted" as const, since: f.since ?? now - DAY_MS };
  const g = await groupIncidents(db, filters, "reason");
  return { reasons: g.groups.slice(0, f.limit ?? 10).map((x) => ({ reason: x.key, n: x.n })), filters, bounded: g.bounded, rowsRead: g.rowsRead };
}
