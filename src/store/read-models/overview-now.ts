import { ALERT_PRIORITY, ALERT_WINDOW_MS, type AlertKind, kindsOfPriority } from "../alerts";
import type { Store } from "../partitions";
import { alertDeliveries, eventRollups, incidents, opAmbiguities } from "../schema";
import { names } from "../sql-names";
import { ATTEMPT_EVENT_TYPES } from "./incidents";
import { BUCKET_MS, type EventSeries } from "./overview";
import { type Capped, rowsReadOf } from "./paging";

/**
 * The overview's first screen: "is anything burning now, and what". Everything here is a bounded read, so the
 * first screen stays cheap however busy the fleet is:
 * - the recent figures and the last hour's chart come from event_rollups (5-minute buckets), one index range per
 *   event type over at most a couple of dozen buckets, never from the events or incidents;
 * - the 24 h exhaustions beside them are a capped incident count (NOW_CAP + 1 index rows at most);
 * - the alert banner reads the newest NOW_ALERT_SCAN deliveries of the last hour, and deploy storms (the alert a
 *   wave of exhaustions must not hide) through their own key range;
 * - what burns (the classes of the incidents that exhausted in the recent window) comes from the same capped scan
 *   as the 24 h exhaustions;
 * - a recent window shorter than one rollup bucket (OVERVIEW_RECENT_MINUTES under 5) cannot be counted from the
 *   rollups: its burning figures then count incidents that exhausted in it and ambiguous ops (capped), and the context
 *   figures are not counted for it (their last hour still is).
 */

const R = names(eventRollups);
const A = names(alertDeliveries);
const I = names(incidents);
const O = names(opAmbiguities);

/** The first screen's 24 h count stops here ("≥100"): its list has every row. */
export const NOW_CAP = 100;
/** Alert deliveries of the last hour the banner reads at most (newest first); past it the banner says "at least". */
export const NOW_ALERT_SCAN = 100;
/** Suppressed (rate limited) deliveries of the last hour the first screen reads at most; past it, "at least". */
export const NOW_SUPPRESSED_SCAN = 100;
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
  /**
   * What `recent` and `previous` count: the figure's events (from the rollups), or, in a window shorter than a
   * rollup bucket, incidents of the last 24 h that exhausted in it (status_at) or ambiguous ops last seen in it
   * (each capped at NOW_CAP);
   * null when that window has no exact source for the figure (both are then 0 and not shown).
   */
  counts: "events" | "incidents" | "ops" | null;
  recent: number;
  previous: number;
  /** The count stopped at NOW_CAP (only incident and op counts are capped). */
  recentCapped: boolean;
  previousCapped: boolean;
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
  /** What burns: the agent classes of the incidents (first seen in the last 24 h) that exhausted in the recent window, most first. */
  burning: BurningClasses;
  rowsRead: number;
};

/** Classes by exhausted incidents, counted over the newest NOW_CAP + 1 of the window (`capped`: there were more). */
export type BurningClasses = { classes: { agentClass: string; n: number }[]; capped: boolean };

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

/**
 * The windows of the first screen at `now`. In whole 5-minute buckets (rollups cannot split one), the current one
 * included; a window shorter than a bucket (`fine`) is exact instead: [now - recentMs, now] and the one before it.
 */
export function nowWindow(now: number, recentMs: number) {
  const current = Math.floor(now / BUCKET_MS) * BUCKET_MS;
  const hourSince = current - (HOUR_BUCKETS - 1) * BUCKET_MS;
  if (recentMs < BUCKET_MS) {
    const recentSince = now - recentMs;
    return { recentMs, fine: true, recentSince, previousSince: recentSince - recentMs, chartSince: hourSince, since24h: now - 86_400_000, now };
  }
  const k = Math.ceil(recentMs / BUCKET_MS);
  const recentSince = current - (k - 1) * BUCKET_MS;
  const previousSince = recentSince - k * BUCKET_MS;
  const chartSince = Math.min(previousSince, hourSince);
  return { recentMs, fine: false, recentSince, previousSince, chartSince, since24h: now - 86_400_000, now };
}
export type NowWindow = ReturnType<typeof nowWindow>;

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
export function nowRollupsStatement(db: D1Database, w: NowWindow): D1PreparedStatement {
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
export function nowFiguresOf(rows: RollupRow[], w: NowWindow): { figures: NowFigure[]; chart: EventSeries } {
  const buckets: number[] = [];
  for (let b = w.chartSince; b <= w.now; b += BUCKET_MS) buckets.push(b);
  const series: Record<string, number[]> = Object.fromEntries(NOW_FIGURES.map((f) => [f.label, buckets.map(() => 0)]));
  const figures: NowFigure[] = NOW_FIGURES.map((f) => ({
    key: f.key,
    label: f.label,
    types: f.types,
    burns: f.burns,
    counts: w.fine ? null : "events",
    recent: 0,
    previous: 0,
    recentCapped: false,
    previousCapped: false,
    chart: 0,
  }));
  for (const row of rows) {
    const n = Number(row.n);
    const b = Number(row.bucket);
    const i = (b - w.chartSince) / BUCKET_MS;
    for (const f of figures) {
      if (!f.types.includes(row.type)) continue;
      f.chart += n;
      // A fine window lies inside a bucket: the rollups feed only the chart then.
      if (!w.fine && b >= w.recentSince) f.recent += n;
      else if (!w.fine && b >= w.previousSince) f.previous += n;
      series[f.label]![i] = (series[f.label]![i] ?? 0) + n;
    }
  }
  return { figures, chart: { buckets, series, rowsRead: 0 } };
}

/** What one database answers for the first screen. `fine`: the exact counts of a window shorter than a bucket. */
export type NowPart = {
  rollups: RollupRow[];
  exhaustions24h: Capped;
  burning: BurningClasses;
  fine: { exhausted: [Capped, Capped]; ambiguous: [Capped, Capped] } | null;
  chartRows: number;
  rowsRead: number;
};

/** A scanned entry: its time in its index (first_seen, last_seen), and for incidents its status_at and class. */
type ScanRow = { t: number; s?: number; agentClass?: string };

/**
 * The entries of a newest-first scan of at most NOW_CAP + 1 rows whose `at` is from `from` (through `to` when
 * given), capped. `ordered`: the scan is by `at` itself, so a full scan that stopped before reaching `from` may have
 * missed some; otherwise (status_at within a first_seen scan) any full scan may have.
 */
function windowCount(rows: ScanRow[], at: (r: ScanRow) => number, from: number, to: number | undefined, ordered: boolean): Capped {
  const n = rows.filter((r) => at(r) >= from && (to === undefined || at(r) <= to)).length;
  const full = rows.length > NOW_CAP && (!ordered || at(rows[rows.length - 1]!) >= from);
  return { n: Math.min(n, NOW_CAP), capped: n > NOW_CAP || full };
}
const byTime = (r: ScanRow) => r.t;
const byStatusTime = (r: ScanRow) => r.s ?? 0;

/**
 * One database's statements for the first screen (one batch) and how to read their results: the rollups of the
 * chart's window; the newest NOW_CAP + 1 exhausted incidents of the last 24 h (incidents_status alone: status,
 * first_seen, …, agent_class, and each one's status_at), which give the capped 24 h count, the classes that exhausted
 * (status_at) in the recent window and, in a fine window, its exact counts of incidents exhausted in it; and in a fine window the newest NOW_CAP + 1 ambiguous ops of its two windows.
 */
export function nowPartStatements(db: D1Database, w: NowWindow): { statements: D1PreparedStatement[]; read: (results: D1Result[]) => NowPart } {
  const exhausted = db
    .prepare(
      `SELECT ${I.firstSeen} AS t, ${I.statusAt} AS s, ${I.agentClass} AS agentClass FROM ${I.$table} INDEXED BY incidents_status
       WHERE ${I.status} = 'exhausted' AND ${I.firstSeen} >= ? ORDER BY ${I.firstSeen} DESC LIMIT ?`,
    )
    .bind(w.since24h, NOW_CAP + 1);
  const ops = db
    .prepare(`SELECT ${O.lastSeen} AS t FROM ${O.$table} INDEXED BY op_ambiguities_last_seen WHERE ${O.lastSeen} >= ? ORDER BY ${O.lastSeen} DESC LIMIT ?`)
    .bind(w.previousSince, NOW_CAP + 1);
  const statements = [nowRollupsStatement(db, w), exhausted, ...(w.fine ? [ops] : [])];
  return {
    statements,
    read: (results) => {
      const [rollups, ex, op] = results as [D1Result<RollupRow>, D1Result<ScanRow>, D1Result<ScanRow>?];
      const rows = ex.results.map((r) => ({ t: Number(r.t), s: Number(r.s), agentClass: String(r.agentClass) }));
      // What burns: the incidents of the scan that exhausted (status_at) in the recent window, by class.
      const byClass = new Map<string, number>();
      for (const r of rows.slice(0, NOW_CAP)) if (r.s >= w.recentSince) byClass.set(r.agentClass, (byClass.get(r.agentClass) ?? 0) + 1);
      const recent = windowCount(rows, byStatusTime, w.recentSince, undefined, false);
      const opRows = op ? op.results.map((r) => ({ t: Number(r.t) })) : [];
      return {
        rollups: rollups.results,
        exhaustions24h: { n: Math.min(rows.length, NOW_CAP), capped: rows.length > NOW_CAP },
        burning: { classes: [...byClass].map(([agentClass, n]) => ({ agentClass, n })), capped: recent.capped },
        fine: w.fine
          ? {
              exhausted: [recent, windowCount(rows, byStatusTime, w.previousSince, w.recentSince - 1, false)],
              ambiguous: [windowCount(opRows, byTime, w.recentSince, undefined, true), windowCount(opRows, byTime, w.previousSince, w.recentSince - 1, true)],
            }
          : null,
        chartRows: rowsReadOf(rollups),
        rowsRead: rowsReadOf(...results),
      };
    },
  };
}

/** Capped counts summed, capped again at NOW_CAP. */
const sumCapped = (cs: Capped[]): Capped => {
  const n = cs.reduce((a, c) => a + c.n, 0);
  return { n: Math.min(n, NOW_CAP), capped: n > NOW_CAP || cs.some((c) => c.capped) };
};

/** The first screen from each database's part (one, or every partition's) and the home database's alert reads. */
export function overviewNowOf(parts: NowPart[], alerts: [D1Result<AlertRow>, D1Result<AlertRow>], w: NowWindow): OverviewNow {
  const { figures, chart } = nowFiguresOf(
    parts.flatMap((p) => p.rollups),
    w,
  );
  if (w.fine) {
    for (const f of figures) {
      if (f.key !== "exhausted" && f.key !== "ambiguous") continue;
      const [recent, previous] = [0, 1].map((k) => sumCapped(parts.map((p) => p.fine![f.key as "exhausted" | "ambiguous"][k]!)));
      Object.assign(f, {
        counts: f.key === "exhausted" ? "incidents" : "ops",
        recent: recent!.n,
        recentCapped: recent!.capped,
        previous: previous!.n,
        previousCapped: previous!.capped,
      });
    }
  }
  const classes = new Map<string, number>();
  for (const p of parts) for (const c of p.burning.classes) classes.set(c.agentClass, (classes.get(c.agentClass) ?? 0) + c.n);
  return {
    window: w,
    figures,
    quiet: figures.every((f) => !f.burns || f.recent === 0),
    chart: { ...chart, rowsRead: parts.reduce((a, p) => a + p.chartRows, 0) },
    exhaustions24h: sumCapped(parts.map((p) => p.exhaustions24h)),
    alerts: activeAlertsOf(alerts[0], alerts[1]),
    burning: {
      classes: [...classes].map(([agentClass, n]) => ({ agentClass, n })).sort((a, b) => b.n - a.n || a.agentClass.localeCompare(b.agentClass)),
      capped: parts.some((p) => p.burning.capped),
    },
    rowsRead: parts.reduce((a, p) => a + p.rowsRead, 0) + rowsReadOf(...alerts),
  };
}

/**
 * The first screen on one database: its part and the alert banner in one batch. Reads about (types × buckets ×
 * reasons) rollup rows, at most NOW_CAP + 1 incident index rows (and as many ops in a fine window) and
 * NOW_ALERT_SCAN + 1 + HIGH_SCAN per high-priority kind delivery rows: a few hundred on a busy store
 * (test/worker/routes/overview-now.test.ts).
 */
async function overviewNow(db: D1Database, now: number, recentMs: number): Promise<OverviewNow> {
  const w = nowWindow(now, recentMs);
  const part = nowPartStatements(db, w);
  const results = await db.batch([...part.statements, ...nowAlertStatements(db, now)]);
  const k = part.statements.length;
  return overviewNowOf([part.read(results.slice(0, k))], results.slice(k) as [D1Result<AlertRow>, D1Result<AlertRow>], w);
}

/**
 * overviewNow over the store: each partition's rollup rows and capped 24 h exhaustions (one batch each), summed;
 * the alert banner from the home database, where alerts live. About N × one partition's rollup rows.
 */
export async function overviewNowIn(store: Store, now: number, recentMs: number): Promise<OverviewNow> {
  if (store.parts.length === 1) return overviewNow(store.parts[0]!, now, recentMs);
  const w = nowWindow(now, recentMs);
  const [parts, alerts] = await Promise.all([
    Promise.all(
      store.parts.map(async (db) => {
        const part = nowPartStatements(db, w);
        return part.read(await db.batch(part.statements));
      }),
    ),
    store.home.batch(nowAlertStatements(store.home, now)) as Promise<[D1Result<AlertRow>, D1Result<AlertRow>]>,
  ]);
  return overviewNowOf(parts, alerts, w);
}
