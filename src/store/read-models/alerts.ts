import { z } from "zod";
import { ALERT_KINDS, ALERT_PRIORITY, ALERT_STATUSES, type AlertKind, type AlertPriority, type AlertRecord, type AlertStatus } from "../alerts";
import type { Store } from "../partitions";
import { alertDeliveries } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { oneOf, parseFilters } from "./filters";
import { type AccessPath, choosePath, cond, keysetPage, type Page, type PageOptions } from "./paging";

/** The alert delivery log, read side (src/store/alerts.ts writes it). Newest first: created_at, key, channel DESC. */

export { ALERT_KINDS, ALERT_PRIORITY, ALERT_STATUSES };

export const alertFilters = z.object({
  status: oneOf("status", ALERT_STATUSES),
  kind: oneOf("kind", ALERT_KINDS),
});
export type AlertFilterInput = { [K in keyof z.output<typeof alertFilters>]?: unknown };

/** One delivery: the alert as recorded, and how sending it went. */
export type AlertDeliveryRow = AlertRecord & {
  status: AlertStatus;
  attempts: number;
  httpStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
};

const A = names(alertDeliveries);
const SELECT = selectList(alertDeliveries, [
  "alertKey",
  "channel",
  "kind",
  "agentClass",
  "agentName",
  "subjectId",
  "summary",
  "status",
  "attempts",
  "httpStatus",
  "lastError",
  "createdAt",
  "updatedAt",
]);

/** A status filter is an index equality; kind is tested per row within the scan budget. */
const PATHS: AccessPath<ColumnKey<typeof alertDeliveries>>[] = [
  { index: "alert_deliveries_status", cols: ["status"] },
  { index: "alert_deliveries_created", cols: [] },
];

/** Lists alert deliveries, newest first, O(page) rows per page. */
export async function listAlertDeliveries(db: D1Database, filters: AlertFilterInput, page: PageOptions = {}): Promise<Page<AlertDeliveryRow>> {
  const f = parseFilters(alertFilters, filters);
  const p = choosePath(PATHS, {
    status: f.status === undefined ? undefined : cond(`${A.status} = ?`, f.status),
    kind: f.kind === undefined ? undefined : cond(`${A.kind} = ?`, f.kind),
  });
  return keysetPage<AlertDeliveryRow>(
    db,
    {
      tag: "alerts",
      table: A.$table,
      index: p.index,
      select: SELECT,
      order: [A.createdAt, A.alertKey, A.channel],
      types: ["number", "string", "string"],
      dir: "DESC",
      where: p.where,
      residual: p.residual,
      keyOf: (r) => [r.createdAt, r.alertKey, r.channel],
    },
    page,
  );
}

/** Alerts a budget suppressed since a time: how many alerts (and deliveries: one per channel), by kind, most first. */
export type SuppressedAlerts = {
  since: number;
  until: number | null;
  alerts: number;
  deliveries: number;
  byKind: { kind: AlertKind; priority: AlertPriority; alerts: number; deliveries: number }[];
  /** More were suppressed than the read counted (`limit` deliveries): the figures are lower bounds. */
  capped: boolean;
};

/** The most deliveries suppressedAlerts reads by default: a bound on what the count can cost. */
export const SUPPRESSED_READ_LIMIT = 1000;

/** The window of a suppressed count: after `since`, up to `until` (none: no end), and the most deliveries to read. */
export type SuppressedWindow = { since: number; until?: number; limit?: number };

/**
 * Counts the alerts rate limited in a window (every suppressed alert has its rate_limited row): at most `limit`
 * deliveries, newest first, over the status index, so the read costs O(min(suppressed, limit)) rows.
 */
export async function suppressedAlerts(db: D1Database, opts: SuppressedWindow): Promise<SuppressedAlerts> {
  const limit = Math.max(1, Math.min(opts.limit ?? SUPPRESSED_READ_LIMIT, 10_000));
  const { results } = await db
    .prepare(
      `SELECT ${A.kind} AS kind, COUNT(DISTINCT ${A.alertKey}) AS alerts, COUNT(*) AS deliveries FROM (
         SELECT ${A.kind}, ${A.alertKey} FROM ${A.$table} INDEXED BY alert_deliveries_status
         WHERE ${A.status} = 'rate_limited' AND ${A.createdAt} > ?1 AND ${A.createdAt} <= ?3 ORDER BY ${A.createdAt} DESC LIMIT ?2
       ) GROUP BY ${A.kind}`,
    )
    .bind(opts.since, limit, opts.until ?? Number.MAX_SAFE_INTEGER)
    .all<{ kind: AlertKind; alerts: number; deliveries: number }>();
  const byKind = results
    .map((r) => ({ kind: r.kind, priority: ALERT_PRIORITY[r.kind] ?? "normal", alerts: r.alerts, deliveries: r.deliveries }))
    .sort((a, b) => b.alerts - a.alerts || a.kind.localeCompare(b.kind));
  const deliveries = byKind.reduce((n, k) => n + k.deliveries, 0);
  return { since: opts.since, until: opts.until ?? null, alerts: byKind.reduce((n, k) => n + k.alerts, 0), deliveries, byKind, capped: deliveries >= limit };
}

/** suppressedAlerts over the store: alert deliveries live in its home database. */
export const suppressedAlertsIn = (store: Store, opts: SuppressedWindow): Promise<SuppressedAlerts> => suppressedAlerts(store.home, opts);
