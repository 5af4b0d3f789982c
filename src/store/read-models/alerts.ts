import { z } from "zod";
import { ALERT_KINDS, ALERT_STATUSES, type AlertRecord, type AlertStatus } from "../alerts";
import { alertDeliveries } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { oneOf, parseFilters } from "./filters";
import { type AccessPath, choosePath, cond, keysetPage, type Page, type PageOptions } from "./paging";

/** The alert delivery log, read side (src/store/alerts.ts writes it). Newest first: created_at, key, channel DESC. */

export { ALERT_KINDS, ALERT_STATUSES };

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
