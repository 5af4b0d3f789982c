import { ALERT_PRIORITY, ALERT_WINDOW_MS, type AlertKind, kindsOfPriority } from "../alerts";
import { alertDeliveries, eventRollups } from "../schema";
import { names } from "../sql-names";
import { ATTEMPT_EVENT_TYPES, countIncidentsStatement } from "./incidents";
import { BUCKET_MS, type EventSeries } from "./overview";
import { type Capped, rowsReadOf } from "./paging";

/**
 * The overview's first screen: "is anything burning now, and what". Everything here is a bounded read, so the
 * first screen stays cheap however busy the fleet is:
 * - the recent figures and the last hour's chart come from event_rollups (5-minute buckets), one index range per
 *   event type over at most a couple of dozen buckets, never from the events or incidents;
 * - the 24 h exhaustions beside them are a capped incident count (NOW_CAP + 1 index rows at most);
 * - the alert banner reads the newest NOW_ALERT_SCAN deliveries of the last hour, and deploy storms (the alert a
 *   wave of exhaustions must not hide) through their own key range.
 */

const R = names(eventRollups);
const A = names(alertDeliveries);

/** The first screen's 24 h count stops here ("≥100"): its list has every row. */
export const NOW_CAP = 100;
/** Alert deliveries of the last hour the banner reads at most (newest first); past it the banner says "at least". */
export const NOW_ALERT_SCAN = 100;
/** Deliveries of the last hour the banner reads at most of each high-priority kind (storms, exhaustion waves, telemetry). */
const HIGH_SCAN = 20;
/** The kinds read through their own key range, so no flood of lower kinds can push them out of the banner. */
const HIGH_KINDS = kindsOfPriority("high");
/** The chart of the first screen: at least the last hour, in 5-minute buckets. */
const HOUR_BUCKETS = 12;

/** A figure of the first screen: the events of `types` counted over the recent window, the one before it, and the chart's window. */
export const NOW_FIGURES = [
  // A chat recovery's exhaustion, and a session turn's (session.error: its runtime gave up; incident-lifecycle.ts).
  { key: "exhausted", label: "Exhaustions", types: ["chat.recovery.exhausted", "session.error"], burns: true },
  { key: "ambiguous", label: "Ops reported ambiguous", types: ["op.ambiguous"], burns: true },
  { key: "detected", label: "Recoveries started", types: ["chat.recovery.detected", "fiber.recovery.detected"], burns: false },
  // Every event type that is one recovery attempt (the lifecycle's "attempt" step), as the incidents count them.
  { key: "attempts", label: "Recovery attempts", types: ATTEMPT_EVENT_TYPES, burns: false },
] as const;
export type NowFigureKey = (typeof NOW_FIGURES)[number]["key"];

export type NowFigure = {
  key: NowFigureKey;
  label: string;
  types: readonly string[];
  /** A person is needed when it is above 0 (exhaustions, ambiguous ops); the others are context. */
  burns: boolean;
  recent: number;
  previous: number;
  /** Over the chart's window (`window.chartSince` to now). */
  chart: number;
};

/** Alerts of one kind raised in the last hour (distinct alerts, every channel's delivery counted once). */
export type ActiveAlertKind = {
  kind: AlertKind;
  n: number;
  /** More deliveries than the banner reads: `n` is at least. */
  capped: boolean;
  /** Of them, how many no channel delivered (rate limited, or failed after every retry). */
  undelivered: number;
  newest: { summary: string; at: number; agentClass: string; agentName: string; subjectId: string };
};

export type OverviewNow = {
  /**
   * `recentSince`: the first bucket of the recent window (whole buckets up to now, the current one included);
   * `previousSince` to `recentSince - 1`: the window before it, as long; `chartSince`: the chart's first bucket.
   */
  window: { recentMs: number; recentSince: number; previousSince: number; chartSince: number; since24h: number; now: number };
  figures: NowFigure[];
  /** Every figure that burns is 0 in the recent window: the only time the overview may say "quiet". */
  quiet: boolean;
  /** The chart of the recent hour: each figure (by label) per 5-minute bucket from `chartSince`. */
  chart: EventSeries;
  /** Incidents exhausted and first seen in the last 24 h, capped at NOW_CAP (the incidents list's own count). */
  exhaustions24h: Capped;
  /** Alerts of the last hour by kind, storms and exhaustion waves first (BANNER_RANK). */
  alerts: ActiveAlertKind[];
  rowsRead: number;
};

/**
 * The banner's order: what says "the fleet is failing" before what says "one thing needs a look". Exhaustive over
 * ALERT_KINDS, so a new kind takes a place here or the typecheck fails.
 */
const BANNER_RANK: Record<AlertKind, number> = {
  deploy_storm: 0,
  exhaustion_wave: 1,
  exhausted: 2,
  exhaust_soon: 3,
  respent: 4,
  stuck: 5,
  alarm_loop: 6,
  ambiguous_op: 7,
  telemetry: 8,
};
const priorityOf = (kind: string) => BANNER_RANK[kind as AlertKind] ?? Object.keys(BANNER_RANK).length;

/** The windows of the first screen at `now`, in whole 5-minute buckets (rollups cannot split one). */
export function nowWindow(now: number, recentMs: number) {
  const current = Math.floor(now / BUCKET_MS) * BUCKET_MS;
  const k = Math.max(1, Math.ceil(recentMs / BUCKET_MS));
  const recentSince = current - (k - 1) * BUCKET_MS;
  const previousSince = recentSince - k * BUCKET_MS;
  const chartSince = Math.min(previousSince, current - (HOUR_BUCKETS - 1) * BUCKET_MS);
  return { recentMs, recentSince, previousSince, chartSince, since24h: now - 86_400_000, now };
}

export type RollupRow = { type: string; bucket: number; n: number };
export type AlertRow = {
  alertKey: string;
  kind: string;
  summary: string;
  status: string;
  createdAt: number;
  agentClass: string;
  agentName: string;
  subjectId: string;
};

const ROLLUP_TYPES = [...new Set(NOW_FIGURES.flatMap((f) => f.types))];

/** The rollup rows of the chart's window, summed per type and bucket: one event_rollups_type range per type. */
export function nowRollupsStatement(db: D1Database, w: ReturnType<typeof nowWindow>): D1PreparedStatement {
  return db
    .prepare(
      `SELECT ${R.type} AS type, ${R.bucket} AS bucket, SUM(${R.n}) AS n FROM ${R.$table} INDEXED BY event_rollups_type
       WHERE ${R.type} IN (${ROLLUP_TYPES.map(() => "?").join(", ")}) AND ${R.bucket} >= ? AND ${R.bucket} <= ? GROUP BY ${R.type}, ${R.bucket}`,
    )
    .bind(...ROLLUP_TYPES, w.chartSince, w.now);
}

const ALERT_COLS = `${A.alertKey} AS alertKey, ${A.kind} AS kind, ${A.summary} AS summary, ${A.status} AS status, ${A.createdAt} AS createdAt,
  ${A.agentClass} AS agentClass, ${A.agentName} AS agentName, ${A.subjectId} AS subjectId`;

/**
 * The banner's two reads (home database): the newest NOW_ALERT_SCAN + 1 deliveries of the last hour, and the
 * high-priority kinds' deliveries of the last hour by their key ranges (keys are JSON arrays that start with the
 * kind: worker/alerts), so a storm or an exhaustion wave raised before a thousand exhaustion alerts still shows.
 * `+created_at` keeps the key ranges the path.
 */
export function nowAlertStatements(db: D1Database, now: number): D1PreparedStatement[] {
  const since = now - ALERT_WINDOW_MS;
  return [
    db
      .prepare(`SELECT ${ALERT_COLS} FROM ${A.$table} INDEXED BY alert_deliveries_created WHERE ${A.createdAt} >= ? ORDER BY ${A.createdAt} DESC LIMIT ?`)
      .bind(since, NOW_ALERT_SCAN + 1),
    db
      .prepare(
        `SELECT ${ALERT_COLS} FROM ${A.$table} WHERE (${HIGH_KINDS.map(() => `(${A.alertKey} > ? AND ${A.alertKey} < ?)`).join(" OR ")}) AND +${A.createdAt} >= ? LIMIT ?`,
      )
      .bind(...HIGH_KINDS.flatMap((k) => [`["${k}",`, `["${k}";`]), since, HIGH_SCAN * HIGH_KINDS.length),
  ];
}

/** The banner from its two reads: distinct alerts by kind, the newest of each, storms and exhaustion waves first. */
export function activeAlertsOf(newest: D1Result<AlertRow>, storms: D1Result<AlertRow>): ActiveAlertKind[] {
  const scanCapped = newest.results.length > NOW_ALERT_SCAN;
  const rows = [...newest.results.slice(0, NOW_ALERT_SCAN), ...storms.results];
  const byKey = new Map<string, { row: AlertRow; delivered: boolean }>();
  for (const r of rows) {
    const seen = byKey.get(r.alertKey);
    const delivered = r.status === "sent" || r.status === "queued";
    if (!seen) byKey.set(r.alertKey, { row: r, delivered });
    else seen.delivered ||= delivered;
  }
  const kinds = new Map<string, ActiveAlertKind>();
  for (const { row, delivered } of byKey.values()) {
    const k = kinds.get(row.kind);
    const newest = { summary: row.summary, at: Number(row.createdAt), agentClass: row.agentClass, agentName: row.agentName, subjectId: row.subjectId };
    if (!k) {
      kinds.set(row.kind, {
        kind: row.kind as AlertKind,
        n: 1,
        // High-priority kinds are read through their own ranges; every other kind may have more beyond the scan.
        capped: ALERT_PRIORITY[row.kind as AlertKind] !== "high" && scanCapped,
        undelivered: delivered ? 0 : 1,
        newest,
      });
    } else {
      k.n++;
      if (!delivered) k.undelivered++;
      if (newest.at > k.newest.at) k.newest = newest;
    }
  }
  return [...kinds.values()].sort((a, b) => priorityOf(a.kind) - priorityOf(b.kind) || b.newest.at - a.newest.at);
}

/** Sums the rollup rows (of one database or of every partition) into the figures and the chart's series. */
export function nowFiguresOf(rows: RollupRow[], w: ReturnType<typeof nowWindow>): { figures: NowFigure[]; chart: EventSeries } {
  const buckets: number[] = [];
  for (let b = w.chartSince; b <= w.now; b += BUCKET_MS) buckets.push(b);
  const series: Record<string, number[]> = Object.fromEntries(NOW_FIGURES.map((f) => [f.label, buckets.map(() => 0)]));
  const figures: NowFigure[] = NOW_FIGURES.map((f) => ({ key: f.key, label: f.label, types: f.types, burns: f.burns, recent: 0, previous: 0, chart: 0 }));
  for (const row of rows) {
    const n = Number(row.n);
    const b = Number(row.bucket);
    const i = (b - w.chartSince) / BUCKET_MS;
    for (const f of figures) {
      if (!f.types.includes(row.type)) continue;
      f.chart += n;
      if (b >= w.recentSince) f.recent += n;
      else if (b >= w.previousSince) f.previous += n;
      series[f.label]![i] = (series[f.label]![i] ?? 0) + n;
    }
  }
  return { figures, chart: { buckets, series, rowsRead: 0 } };
}

/**
 * The first screen on one database: rollups, the capped 24 h exhaustions and the alert banner in one batch.
 * Reads about (types × buckets × reasons) rollup rows, at most NOW_CAP + 1 incident index rows and
 * NOW_ALERT_SCAN + 1 + HIGH_SCAN per high-priority kind delivery rows: a few hundred on a busy store (test/worker/routes/overview-now.test.ts).
 */
export async function overviewNow(db: D1Database, now: number, recentMs: number): Promise<OverviewNow> {
  const w = nowWindow(now, recentMs);
  const exhausted = countIncidentsStatement(db, { status: "exhausted", since: w.since24h }, NOW_CAP);
  const [rollups, ex, newest, storms] = (await db.batch([nowRollupsStatement(db, w), exhausted.statement, ...nowAlertStatements(db, now)])) as [
    D1Result<RollupRow>,
    D1Result<{ n: number; scanned: number }>,
    D1Result<AlertRow>,
    D1Result<AlertRow>,
  ];
  const { figures, chart } = nowFiguresOf(rollups.results, w);
  return {
    window: w,
    figures,
    quiet: figures.every((f) => !f.burns || f.recent === 0),
    chart: { ...chart, rowsRead: rowsReadOf(rollups) },
    exhaustions24h: exhausted.read(ex),
    alerts: activeAlertsOf(newest, storms),
    rowsRead: rowsReadOf(rollups, ex, newest, storms),
  };
}
