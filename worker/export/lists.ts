import type { ListName } from "../../console/links";
import type { HistoryTier } from "../../src/store/history/tier";
import type { Store } from "../../src/store/partitions";
import { agentListFilters, listAudit, parseStuckFilters, searchIn } from "../../src/store/read-models";
import { listAlertDeliveries } from "../../src/store/read-models/alerts";
import { parseFilters } from "../../src/store/read-models/filters";
import { agentListIn, bulkTargetsIn, listAmbiguousOpsIn, listBackupsIn, listIncidentsIn, listSessionsIn } from "../../src/store/read-models/merged";
import { listEventsIn } from "../../src/store/read-models/merged-events";
import { listStuckIn } from "../../src/store/read-models/merged-overview";
import type { Page } from "../../src/store/read-models/paging";
import { FLEET_COMPLETED_LIMITS } from "../../src/store/read-models/runs-fleet-history";
import { listRunsWithHistory, type RunsHistorySource } from "../../src/store/read-models/runs-history";
import type { StuckConfig } from "../../src/store/read-models/stuck";
import type { ExportHistory, ExportPage, ExportReader } from "./stream";

/** What a list's export reads with: the console's store (every partition), the request's time, and the stuck rules' thresholds. */
/** `history`: the R2 tier (events are read there when D1 keeps no event bodies); `runsHistory`: where runs lists read completed runs. */
export type ExportContext = { store: Store; now: number; stuckConfig: StuckConfig; history?: HistoryTier; runsHistory?: RunsHistorySource };

/**
 * The most R2 objects one runs download reads for completed runs, over all its pages (ten fleet-wide pages' budget):
 * past it the download is cut, and says what span it covered.
 */
export const EXPORT_HISTORY_MAX_OBJECTS = 10 * FLEET_COMPLETED_LIMITS.maxObjects;

/**
 * Runs as their page lists them: with the completed ones from the R2 history (listRunsWithHistory), and the span the
 * pages read of it, added up page by page, within EXPORT_HISTORY_MAX_OBJECTS.
 */
function runsSource(x: ExportContext, f: ExportFilters): ExportReader {
  let history: ExportHistory | undefined;
  return async (cursor, limit) => {
    const p = await listRunsWithHistory(x.store, f, { cursor: cursor ?? undefined, limit }, x.runsHistory);
    const h = p.completedFromHistory;
    if (!h) return rows(p);
    const s = h.scan;
    const lowest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
    history = {
      from: h.from,
      to: history?.to ?? h.to,
      coveredFrom: lowest(history?.coveredFrom ?? null, s.coveredFrom),
      coveredTo: history ? history.coveredTo : s.coveredTo,
      // The span is read to its start when the page that reached it did (a fleet list pages down to it; an agent's reads it whole).
      complete: s.complete,
      objects: (history?.objects ?? 0) + s.objectsFetched,
    };
    const spent = history.objects >= EXPORT_HISTORY_MAX_OBJECTS && p.next !== null;
    return { ...rows(p), history, ...(spent ? { more: true } : {}) };
  };
}
/** The URL's filters, exactly as the list's page gets them (the read model validates them). */
export type ExportFilters = Record<string, string | undefined>;

/** The lists a download can be made of: every list page (the overview is not a list). */
export const EXPORT_LISTS = [
  "agents",
  "runs",
  "incidents",
  "stuck",
  "sessions",
  "ops",
  "events",
  "alerts",
  "audit",
  "bulk",
  "search",
  "backups",
] as const satisfies readonly ListName[];
export type ExportList = (typeof EXPORT_LISTS)[number];

const rows = <T>(p: Page<T>): ExportPage => ({ items: p.items as Record<string, unknown>[], next: p.next });
/** A keyset list: the same read model and filters as its page, page by page (over the store, or one database). */
const paged =
  <T>(read: (store: Store, f: ExportFilters, page: { cursor?: string; limit: number }) => Promise<Page<T>>) =>
  (x: ExportContext, f: ExportFilters): ExportReader =>
  async (cursor, limit) =>
    rows(await read(x.store, f, { cursor: cursor ?? undefined, limit }));
/** A list whose rows are the home database's alone (audit, alert deliveries: not partitioned by agent). */
const home =
  <T>(read: (db: D1Database, f: ExportFilters, page: { cursor?: string; limit: number }) => Promise<Page<T>>) =>
  (store: Store, f: ExportFilters, page: { cursor?: string; limit: number }) =>
    read(store.home, f, page);
/** A list that is read whole (bounded by its read model): one page; `more` when the read model stopped short. */
const whole =
  (read: (x: ExportContext, f: ExportFilters, cap: number) => Promise<{ items: unknown[]; more: boolean }>) =>
  (x: ExportContext, f: ExportFilters, cap: number): ExportReader =>
  async () => {
    const r = await read(x, f, cap);
    return { items: r.items as Record<string, unknown>[], next: null, more: r.more };
  };

/** The most findings the stuck read model lists in one read (src/store/read-models/stuck.ts). */
const STUCK_READ_MAX = 500;

/** Per list, how its export reads it: the read model its page uses, with the page's filters. */
export const EXPORT_SOURCES: Record<ExportList, (x: ExportContext, f: ExportFilters, cap: number) => ExportReader> = {
  // With gaps=true (blocked=true) the page lists exactly the agents with missing events (whose events cannot reach
  // the console): so does the download.
  agents: (x, f) => {
    const a = parseFilters(agentListFilters, f);
    return async (cursor, limit) => rows(await agentListIn(x.store, a, { cursor, limit }));
  },
  runs: runsSource,
  incidents: paged(listIncidentsIn),
  sessions: paged(listSessionsIn),
  ops: paged(listAmbiguousOpsIn),
  events: (x, f) => async (cursor, limit) => rows(await listEventsIn(x.store, f, { cursor: cursor ?? undefined, limit }, x.history)),
  alerts: paged(home(listAlertDeliveries)),
  audit: paged(home(listAudit)),
  backups: (x, f) => async (cursor, limit) => rows(await listBackupsIn(x.store, f, { cursor, limit }, x.now)),
  stuck: whole(async (x, f, cap) => {
    const limit = Math.min(cap + 1, STUCK_READ_MAX);
    const items = await listStuckIn(x.store, x.now, x.stuckConfig, { ...parseStuckFilters({ rule: f.rule, agentClass: f.agentClass }), limit });
    return { items, more: items.length >= STUCK_READ_MAX };
  }),
  search: whole(async (x, f) => {
    const r = await searchIn(x.store, f.q ?? "");
    return { items: r.matches, more: r.truncated };
  }),
  bulk: whole(async (x, f) => {
    const { agentClass, incidentReason, openOnly, status, stuckRule } = f;
    const r = await bulkTargetsIn(x.store, x.now, { agentClass, incidentReason, openOnly, status, stuckRule }, { stuckConfig: x.stuckConfig });
    return { items: r.targets, more: r.capped };
  }),
};
