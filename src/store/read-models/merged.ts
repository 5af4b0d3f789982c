import type { Store } from "../partitions";
import { partitionFor } from "../partitions";
import { AGENT_IN_CLASS_ORDER, AGENT_ORDER, type AgentRow, findAgent, listAgents } from "./agents";
import { BACKUP_EXPIRY_ORDER, BACKUP_ORDER, type BackupFilterInput, type BackupRow, backupFilters, listBackups } from "./backups";
import { BLOCKED_AGENTS_ORDER, type BlockedAgentRow, blockedAgents } from "./blocked-agents";
import { BULK_COUNT_CAP, BULK_TARGET_CAP, type BulkTargets, bulkTargets } from "./bulk-targets";
import { AmbiguousOwner, type OwnedKind } from "./errors";
import { AGENT_GAPS_IN_CLASS_ORDER, AGENT_GAPS_ORDER, type AgentGapRow, agentsWithGaps } from "./event-gaps";
import { parseFilters } from "./filters";
import {
  countIncidents,
  getIncident,
  groupIncidents,
  INCIDENT_ORDER,
  type IncidentFilterInput,
  type IncidentGroupBy,
  type IncidentGroups,
  type IncidentRow,
  listIncidents,
  MAX_GROUPS,
} from "./incidents";
import { type GapAgent, gapAgentsDueForReconcile, gapAgentsDueSince, oldestFirst, staleAgentsSince } from "./open-work";
import { listAmbiguousOps, OP_ORDER, type OpFilterInput, type OpRow } from "./ops";
import type { AgentRef } from "./owner";
import { type Capped, DEFAULT_CAP, encodeCursor, type ListOrder, type Page, type PageOptions, pageLimit, type SortValue } from "./paging";
import { getStoredRun, listRuns, RUN_ORDER, type Run, type RunFilterInput, type RunWithSnapshot } from "./runs";
import { getSession, listSessions, SESSION_ORDER, type SessionFilterInput, type SessionRow } from "./sessions";
import type { StuckConfig } from "./stuck";

/**
 * Read models over a partitioned store (src/store/partitions.ts). Each read model keeps its (db, …) signature and
 * reads one database; the wrappers here give the console one answer for the whole store: agent-scoped reads go to
 * the agent's partition, keyset lists read the same page from every partition and merge by their sort key, counts
 * sum, lookups by id read each partition. With one partition each wrapper is exactly the read model on it (same
 * rows, same rows read): the wrappers are only ever more work when the store is partitioned.
 */

/** SQLite's BINARY order on TEXT (UTF-8 bytes), which is code point order; numbers numerically. */
function compareValue(a: SortValue, b: SortValue): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = String(a);
  const y = String(b);
  if (x === y) return 0;
  const xs = [...x];
  const ys = [...y];
  for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
    const d = xs[i]!.codePointAt(0)! - ys[i]!.codePointAt(0)!;
    if (d) return d;
  }
  return xs.length - ys.length;
}

/** Two sort keys in SQLite's order (compareValue per column, the first difference decides). */
export const compareKey = (a: SortValue[], b: SortValue[]) => {
  for (let i = 0; i < a.length; i++) {
    const d = compareValue(a[i]!, b[i]!);
    if (d) return d;
  }
  return 0;
};

/** The sort key in a partition's `next` cursor ([tag, ...key], paging.ts encodeCursor; the partition made it). */
function cursorKey(cursor: string): SortValue[] {
  const bin = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  return (JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)))) as SortValue[]).slice(1);
}

/**
 * Merges the same page read from every partition (same cursor, same limit). A partition's `next` says how far it
 * has answered (its last row, or where a bounded scan stopped); past the nearest such point another partition may
 * hold rows not read yet, so the merged page stops there: it takes rows in sort order up to `limit` and up to
 * that point, and its `next` is the last row taken, or that point when the page is short.
 */
export function mergePages<T>(pages: Page<T>[], list: { tag: string; keyOf: (item: T) => SortValue[]; dir: "ASC" | "DESC" }, limit: number): Page<T> {
  if (pages.length === 1) return pages[0]!;
  const { tag, keyOf } = list;
  const sign = list.dir === "DESC" ? -1 : 1;
  const order = (a: SortValue[], b: SortValue[]) => sign * compareKey(a, b);
  let frontier: SortValue[] | null = null;
  for (const p of pages) {
    if (!p.next) continue;
    const key = cursorKey(p.next);
    if (!frontier || order(key, frontier) < 0) frontier = key;
  }
  const all = pages
    .flatMap((p) => p.items.map((item) => ({ item, key: keyOf(item) })))
    .filter((x) => !frontier || order(x.key, frontier) <= 0)
    .sort((a, b) => order(a.key, b.key));
  const taken = all.slice(0, limit);
  const rowsRead = pages.reduce((n, p) => n + p.rowsRead, 0);
  const items = taken.map((x) => x.item);
  if (all.length > limit || (frontier && taken.length === limit)) return { items, next: encodeCursor(tag, taken[limit - 1]!.key), rowsRead };
  return { items, next: frontier ? encodeCursor(tag, frontier) : null, rowsRead };
}

/** The same keyset page from every partition, merged (mergePages). Every list merged here is newest first. */
async function fanOutPage<T>(store: Store, read: (db: D1Database) => Promise<Page<T>>, order: ListOrder<T>, page: PageOptions): Promise<Page<T>> {
  if (store.parts.length === 1) return read(store.parts[0]!);
  const limit = pageLimit(page.limit);
  return mergePages(await Promise.all(store.parts.map(read)), { ...order, dir: "DESC" }, limit);
}

/** One agent named by a filter (class and name both given): its partition alone answers. */
const agentOf = (f: { agentClass?: unknown; agentName?: unknown }): AgentRef | null =>
  typeof f.agentClass === "string" && typeof f.agentName === "string" && f.agentClass && f.agentName
    ? { agentClass: f.agentClass, agentName: f.agentName }
    : null;

/** A list filtered to one agent reads that agent's partition alone; any other filter reads every partition, merged. */
function agentOrMerged<F extends { agentClass?: unknown; agentName?: unknown }, T>(
  store: Store,
  filters: F,
  read: (db: D1Database) => Promise<Page<T>>,
  order: ListOrder<T>,
  page: PageOptions,
): Promise<Page<T>> {
  const agent = agentOf(filters);
  return agent ? read(partitionFor(store, agent.agentClass, agent.agentName)) : fanOutPage(store, read, order, page);
}

/**
 * A lookup by id across partitions: the owner's partition when named, else every partition. Found in several,
 * the same rule as findOwned (owner.ts): the one the id itself names (`claims`), or refused with who reported it.
 */
async function lookup<T extends AgentRef>(
  store: Store,
  read: (db: D1Database) => Promise<T | null>,
  what: OwnedKind,
  id: string,
  owner?: AgentRef,
  claims?: (row: T) => boolean,
): Promise<T | null> {
  if (owner) return read(partitionFor(store, owner.agentClass, owner.agentName));
  if (store.parts.length === 1) return read(store.parts[0]!);
  const settled = await Promise.allSettled(store.parts.map(read));
  const found: T[] = [];
  const candidates: AgentRef[] = [];
  let more = false;
  for (const s of settled) {
    if (s.status === "fulfilled") {
      if (s.value) found.push(s.value);
    } else if (s.reason instanceof AmbiguousOwner) {
      candidates.push(...s.reason.candidates);
      more ||= s.reason.more;
    } else throw s.reason;
  }
  if (!candidates.length && found.length <= 1) return found[0] ?? null;
  const named = claims ? found.filter(claims) : [];
  if (!candidates.length && named.length === 1) return named[0]!;
  const all = [...candidates, ...found.map((r) => ({ agentClass: r.agentClass, agentName: r.agentName }))].sort(
    (a, b) => compareValue(a.agentClass, b.agentClass) || compareValue(a.agentName, b.agentName),
  );
  throw new AmbiguousOwner(what, id, all.slice(0, 10), more || all.length > 10);
}

/** listAgents over the store. */
export function listAgentsIn(store: Store, filters: { agentClass?: unknown }, page: PageOptions = {}): Promise<Page<AgentRow>> {
  const byClass = typeof filters.agentClass === "string" && filters.agentClass !== "";
  return fanOutPage(store, (db) => listAgents(db, filters, page), byClass ? AGENT_IN_CLASS_ORDER : AGENT_ORDER, page);
}

/** findAgent in the agent's partition. */
export const findAgentIn = (store: Store, agentClass: string, agentName: string): Promise<AgentRow | null> =>
  findAgent(partitionFor(store, agentClass, agentName), agentClass, agentName);

/** listRuns over the store: one agent's runs from its partition, others merged. */
export function listRunsIn(store: Store, filters: RunFilterInput, page: PageOptions = {}): Promise<Page<Run>> {
  return agentOrMerged(store, filters, (db) => listRuns(db, filters, page), RUN_ORDER, page);
}

/** getStoredRun: the owner's partition, or every partition's point read. */
export const getStoredRunIn = (store: Store, runId: string, owner?: AgentRef): Promise<RunWithSnapshot | null> =>
  lookup(store, (db) => getStoredRun(db, runId, owner), "run", runId, owner);

/** listIncidents over the store: one agent's incidents from its partition, others merged. */
export function listIncidentsIn(store: Store, filters: IncidentFilterInput, page: PageOptions = {}): Promise<Page<IncidentRow>> {
  return agentOrMerged(store, filters, (db) => listIncidents(db, filters, page), INCIDENT_ORDER, page);
}

/** countIncidents over the store: the partitions' capped counts summed, capped again. */
export async function countIncidentsIn(store: Store, filters: IncidentFilterInput, cap = DEFAULT_CAP): Promise<Capped & { rowsRead: number }> {
  if (store.parts.length === 1) return countIncidents(store.parts[0]!, filters, cap);
  const counts = await Promise.all(store.parts.map((db) => countIncidents(db, filters, cap)));
  const n = counts.reduce((a, c) => a + c.n, 0);
  return { n: Math.min(n, cap), capped: n > cap || counts.some((c) => c.capped), rowsRead: counts.reduce((a, c) => a + c.rowsRead, 0) };
}

/** getIncident: the owner's partition, or every partition's (a derived id names its agent: fiber:Class/name/…). */
export const getIncidentIn = (store: Store, id: string, owner?: AgentRef): Promise<IncidentRow | null> =>
  lookup(
    store,
    (db) => getIncident(db, id, owner),
    "incident",
    id,
    owner,
    (r) => r.kind !== "chat" && id.startsWith(`${r.kind}:${r.agentClass}/${r.agentName}/`),
  );

/** listSessions over the store, merged. */
export const listSessionsIn = (store: Store, filters: SessionFilterInput, page: PageOptions = {}): Promise<Page<SessionRow>> =>
  fanOutPage(store, (db) => listSessions(db, filters, page), SESSION_ORDER, page);

/** getSession: the owner's partition, or every partition's. */
export const getSessionIn = (store: Store, name: string, owner?: AgentRef): Promise<SessionRow | null> =>
  lookup(store, (db) => getSession(db, name, owner), "session", name, owner);

/** listAmbiguousOps over the store: one agent's from its partition, others merged. */
export function listAmbiguousOpsIn(store: Store, filters: OpFilterInput, page: PageOptions = {}): Promise<Page<OpRow>> {
  return agentOrMerged(store, filters, (db) => listAmbiguousOps(db, filters, page), OP_ORDER, page);
}

/**
 * groupIncidents over the store: each partition's counts per group, summed. Exact while no partition is bounded
 * (each scans at most GROUP_BOUND of its newest incidents, so a bounded merge counts up to N × that many, newest
 * per partition, and says `bounded`) and no partition has more than MAX_GROUPS groups.
 */
export async function groupIncidentsIn(store: Store, filters: IncidentFilterInput, by: IncidentGroupBy): Promise<IncidentGroups> {
  if (store.parts.length === 1) return groupIncidents(store.parts[0]!, filters, by);
  const agent = agentOf(filters);
  if (agent) return groupIncidents(partitionFor(store, agent.agentClass, agent.agentName), filters, by);
  const each = await Promise.all(store.parts.map((db) => groupIncidents(db, filters, by)));
  const sums = new Map<string, number>();
  for (const g of each.flatMap((e) => e.groups)) sums.set(g.key, (sums.get(g.key) ?? 0) + g.n);
  const groups = [...sums]
    .map(([key, n]) => ({ key, n }))
    .sort((a, b) => b.n - a.n || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, MAX_GROUPS);
  return {
    groups,
    scanned: each.reduce((a, e) => a + e.scanned, 0),
    bounded: each.some((e) => e.bounded),
    rowsRead: each.reduce((a, e) => a + e.rowsRead, 0),
  };
}

/** listBackups over the store, merged (newest activity first, or by expiry with the `expired` filter). */
export function listBackupsIn(store: Store, filters: BackupFilterInput, page: PageOptions = {}, now = Date.now()): Promise<Page<BackupRow>> {
  const byExpiry = parseFilters(backupFilters, filters).expired !== undefined;
  return fanOutPage(store, (db) => listBackups(db, filters, page, now), byExpiry ? BACKUP_EXPIRY_ORDER : BACKUP_ORDER, page);
}

/**
 * agentsWithGaps over the store: the same page from every partition, merged newest first. Each partition scans at
 * most SCAN_BUDGET agents per page, so a merged page reads up to N × that, and stops where the nearest partition's
 * scan stopped (mergePages).
 */
export function agentsWithGapsIn(
  store: Store,
  opts: { limit?: number | string | null; after?: string | null; agentClass?: unknown } = {},
): Promise<Page<AgentGapRow>> {
  const byClass = typeof opts.agentClass === "string" && opts.agentClass !== "";
  return fanOutPage(store, (db) => agentsWithGaps(db, opts), byClass ? AGENT_GAPS_IN_CLASS_ORDER : AGENT_GAPS_ORDER, { cursor: opts.after, limit: opts.limit });
}

/**
 * blockedAgents over the store: the same page from every partition, merged newest ask first. Each partition scans at
 * most SCAN_BUDGET flagged agents per page, and the merged page stops where the nearest partition's scan stopped.
 */
export function blockedAgentsIn(
  store: Store,
  opts: { limit?: number | string | null; after?: string | null; agentClass?: unknown } = {},
): Promise<Page<BlockedAgentRow>> {
  return fanOutPage(store, (db) => blockedAgents(db, opts), BLOCKED_AGENTS_ORDER, { cursor: opts.after, limit: opts.limit });
}

/**
 * The /agents list as filtered (agentListFilters' output), over the store: with `blocked`, the agents whose events
 * cannot reach the console; with `gaps`, those with events missing; else every agent. Its page and its download read it.
 */
export function agentListIn(
  store: Store,
  f: { agentClass?: string | undefined; gaps?: boolean | undefined; blocked?: boolean | undefined },
  page: PageOptions = {},
): Promise<Page<AgentRow> | Page<BlockedAgentRow>> {
  const opts = { agentClass: f.agentClass, limit: page.limit, after: page.cursor };
  if (f.blocked) return blockedAgentsIn(store, opts);
  if (f.gaps) return agentsWithGapsIn(store, opts);
  return listAgentsIn(store, { agentClass: f.agentClass }, page);
}

/**
 * staleAgents over the store: each partition's oldest `limit` (an agent's open work and its reconciliations live in
 * its partition), merged oldest first and cut at `limit`: each agent once. Each partition scans `scan` rows per
 * source, so a pass reads up to N × that.
 */
export async function staleAgentsIn(store: Store, before: number, limit: number, scan = limit * 10): Promise<AgentRef[]> {
  const each = await Promise.all(store.parts.map((db) => staleAgentsSince(db, before, limit, scan)));
  return each
    .flat()
    .sort(oldestFirst)
    .slice(0, limit)
    .map(({ agentClass, agentName }) => ({ agentClass, agentName }));
}

/**
 * gapAgentsDueForReconcile over the store: each partition's most recently active `limit`, merged most recent first
 * (ties by agent) and cut at `limit`. Each partition looks at its `scan` most recently active agents.
 */
export async function gapAgentsDueIn(store: Store, before: number, limit: number, scan = limit * 50): Promise<GapAgent[]> {
  if (store.parts.length === 1) return gapAgentsDueForReconcile(store.parts[0]!, before, limit, scan);
  const each = await Promise.all(store.parts.map((db) => gapAgentsDueSince(db, before, limit, scan)));
  return each
    .flat()
    .sort((a, b) => b.t - a.t || compareKey([a.agentClass, a.agentName], [b.agentClass, b.agentName]))
    .slice(0, limit)
    .map(({ agentClass, agentName, missing }) => ({ agentClass, agentName, missing }));
}

/**
 * bulkTargets over the store: every partition selects its own agents (an agent's incidents, runs, sessions and
 * stuck findings all live in its partition), merged by class and name (the selection's order) and cut at `cap`;
 * the totals sum (counted up to BULK_COUNT_CAP). Reads N × what one partition reads.
 */
export async function bulkTargetsIn(store: Store, now: number, input: unknown, opts: { cap?: number; stuckConfig?: StuckConfig } = {}): Promise<BulkTargets> {
  if (store.parts.length === 1) return bulkTargets(store.parts[0]!, now, input, opts);
  const each = await Promise.all(store.parts.map((db) => bulkTargets(db, now, input, opts)));
  const targets = each
    .flatMap((e) => e.targets)
    .sort((a, b) => compareKey([a.agentClass, a.agentName], [b.agentClass, b.agentName]))
    .slice(0, opts.cap ?? BULK_TARGET_CAP);
  const total = Math.min(
    BULK_COUNT_CAP,
    each.reduce((a, e) => a + e.total, 0),
  );
  return { targets, total, capped: total > targets.length, filter: each[0]!.filter };
}
