import type { ListName } from "../../console/links";
import {
  agentListFilters,
  agentsWithGaps,
  bulkTargets,
  listAgents,
  listAmbiguousOps,
  listAudit,
  listBackups,
  listEvents,
  listIncidents,
  listRuns,
  listSessions,
  listStuck,
  parseStuckFilters,
  search,
} from "../../src/store/read-models";
import { listAlertDeliveries } from "../../src/store/read-models/alerts";
import { parseFilters } from "../../src/store/read-models/filters";
import type { Page } from "../../src/store/read-models/paging";
import type { StuckConfig } from "../../src/store/read-models/stuck";
import type { ExportPage, ExportReader } from "./stream";

/** What a list's export reads with: the console's D1, the request's time, and the stuck rules' thresholds. */
export type ExportContext = { db: D1Database; now: number; stuckConfig: StuckConfig };
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
/** A keyset list: the same read model and filters as its page, page by page. */
const paged =
  <T>(read: (db: D1Database, f: ExportFilters, page: { cursor?: string; limit: number }) => Promise<Page<T>>) =>
  (x: ExportContext, f: ExportFilters): ExportReader =>
  async (cursor, limit) =>
    rows(await read(x.db, f, { cursor: cursor ?? undefined, limit }));
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
  // With gaps=true the page lists exactly the agents with missing events: so does the download.
  agents: (x, f) => {
    const a = parseFilters(agentListFilters, f);
    return async (cursor, limit) =>
      rows(
        a.gaps
          ? await agentsWithGaps(x.db, { agentClass: a.agentClass, limit, after: cursor ?? undefined })
          : await listAgents(x.db, { agentClass: a.agentClass }, { cursor, limit }),
      );
  },
  runs: paged(listRuns),
  incidents: paged(listIncidents),
  sessions: paged(listSessions),
  ops: paged(listAmbiguousOps),
  events: paged(listEvents),
  alerts: paged(listAlertDeliveries),
  audit: paged(listAudit),
  backups: (x, f) => async (cursor, limit) => rows(await listBackups(x.db, f, { cursor, limit }, x.now)),
  stuck: whole(async (x, f, cap) => {
    const limit = Math.min(cap + 1, STUCK_READ_MAX);
    const items = await listStuck(x.db, x.now, x.stuckConfig, { ...parseStuckFilters({ rule: f.rule, agentClass: f.agentClass }), limit });
    return { items, more: items.length >= STUCK_READ_MAX };
  }),
  search: whole(async (x, f) => {
    const r = await search(x.db, f.q ?? "");
    return { items: r.matches, more: r.truncated };
  }),
  bulk: whole(async (x, f) => {
    const { agentClass, incidentReason, openOnly, status, stuckRule } = f;
    const r = await bulkTargets(x.db, x.now, { agentClass, incidentReason, openOnly, status, stuckRule }, { stuckConfig: x.stuckConfig });
    return { items: r.targets, more: r.capped };
  }),
};
