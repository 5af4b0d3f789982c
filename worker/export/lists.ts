import type { ListName } from "../../console/links";
import { agentListFilters, type ConsoleStore, FLEET_COMPLETED_LIMITS, type Page, parseStuckFilters, type StuckConfig } from "../../src/store/console-store";
import { parseFilters } from "../../src/store/read-models/filters";
import type { ExportHistory, ExportPage, ExportReader } from "./stream";

/** What a list's export reads with: the store API (src/store/console-store.ts), the request's time, and the stuck rules' thresholds. */
export type ExportContext = { store: ConsoleStore; now: number; stuckConfig: StuckConfig };

/**
 * The most R2 objects one runs download reads for completed runs, over all its pages (ten fleet-wide pages' budget):
 * past it the download is cut, and says what span it covered.
 */
export const EXPORT_HISTORY_MAX_OBJECTS = 10 * FLEET_COMPLETED_LIMITS.maxObjects;

/**
 * Runs as their page lists them: with the completed ones from the R2 history (the store's runs.list), and the span the
 * pages read of it, added up page by page, within EXPORT_HISTORY_MAX_OBJECTS.
 */
function runsSource(x: ExportContext, f: ExportFilters): ExportReader {
  let history: ExportHistory | undefined;
  return async (cursor, limit) => {
    const p = await x.store.runs.list(f, { cursor: cursor ?? undefined, limit });
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
/** A keyset list: the same store read and filters as its page, page by page. */
const paged =
  <T>(read: (store: ConsoleStore, f: ExportFilters, page: { cursor?: string; limit: number }) => Promise<Page<T>>) =>
  (x: ExportContext, f: ExportFilters): ExportReader =>
  async (cursor, limit) =>
    rows(await read(x.store, f, { cursor: cursor ?? undefined, limit }));
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
    return async (cursor, limit) => rows(await x.store.agents.page(a, { cursor, limit }));
  },
  runs: runsSource,
  incidents: paged((s, f, p) => s.incidents.list(f, p)),
  sessions: paged((s, f, p) => s.sessions.list(f, p)),
  ops: paged((s, f, p) => s.ops.list(f, p)),
  events: paged((s, f, p) => s.events.list(f, p)),
  alerts: paged((s, f, p) => s.alerts.deliveries(f, p)),
  audit: paged((s, f, p) => s.audit.list(f, p)),
  backups: paged((s, f, p) => s.backups.list(f, p)),
  stuck: whole(async (x, f, cap) => {
    const limit = Math.min(cap + 1, STUCK_READ_MAX);
    const items = await x.store.stuck.list(x.now, x.stuckConfig, { ...parseStuckFilters({ rule: f.rule, agentClass: f.agentClass }), limit });
    return { items, more: items.length >= STUCK_READ_MAX };
  }),
  search: whole(async (x, f) => {
    const r = await x.store.search.hot(f.q ?? "");
    return { items: r.matches, more: r.truncated };
  }),
  bulk: whole(async (x, f) => {
    const { agentClass, incidentReason, openOnly, status, stuckRule } = f;
    const r = await x.store.bulk.targets(x.now, { agentClass, incidentReason, openOnly, status, stuckRule }, { stuckConfig: x.stuckConfig });
    return { items: r.targets, more: r.capped };
  }),
};
