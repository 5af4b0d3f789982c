import { incidentFromHistory } from "./history/incident";
import { historySearch } from "./history/read";
import { carriesRunId, RUN_LOOKBACK_HOURS, runFromHistory } from "./history/run";
import { foldRuns } from "./history/run-fold";
import { historyTier } from "./history/tier";
import { statusFromEvents } from "./incident-facts";
import { partitionFor, type Store } from "./partitions";
import { type AlertFilterInput, listAlertDeliveries, suppressedAlertsIn } from "./read-models/alerts";
import { type AuditFilterInput, listAudit } from "./read-models/audit";
import { batchProgress } from "./read-models/bulk-batches";
import { tailRecordOf } from "./read-models/capture";
import { listDeadLetters } from "./read-models/dead-letters";
import { otherWorkerObjectsOf, unknownParentsOf } from "./read-models/facet-parents";
import type { IncidentRow } from "./read-models/incidents";
import { incidentAttempts, incidentTimeline } from "./read-models/incidents";
import {
  agentListIn,
  bulkTargetsIn,
  findAgentIn,
  gapAgentsDueIn,
  getIncidentIn,
  getSessionIn,
  getStoredRunIn,
  groupIncidentsIn,
  listAgentsIn,
  listAmbiguousOpsIn,
  listBackupsIn,
  listIncidentsIn,
  listSessionsIn,
  staleAgentsIn,
} from "./read-models/merged";
import { respentLastHourIn } from "./read-models/merged-alerts";
import { deployStormsIn, listDeploysIn, versionFiguresIn } from "./read-models/merged-deploys";
import { listEventsIn } from "./read-models/merged-events";
import {
  alarmRatesIn,
  countStuckIn,
  eventSeriesIn,
  exhaustingSoonIn,
  listStuckIn,
  overviewCountsIn,
  residentEstimateIn,
  topReasonsIn,
} from "./read-models/merged-overview";
import { knownRunOutcomes, lastReconciliation, openWorkOf, unconfirmedRunsOf } from "./read-models/open-work";
import { overviewNowIn } from "./read-models/overview-now";
import type { AgentRef } from "./read-models/owner";
import type { PageOptions } from "./read-models/paging";
import { agentNotKnown, possibleLossesIn } from "./read-models/possible-losses";
import { recoveryPauseOf } from "./read-models/recovery-pauses";
import { countAlarmLoopsIn, silentWakes } from "./read-models/residency";
import { runEvents } from "./read-models/runs";
import { endedInHistory, listRunsWithHistory, type RunsHistorySource } from "./read-models/runs-history";
import { searchIn } from "./read-models/search";
import { sessionTimeline } from "./read-models/sessions";
import { recordReconciliation } from "./reconciliations";
import { deleteView, forgetView, getView, lastViewFor, rememberView, type SaveViewInput, saveView, viewsFor } from "./views";

/**
 * The one store API pages and jobs ask (issue 35, "one store API"). Behind it: which D1 partition holds an agent's
 * rows (partitions.ts), which lists fan out over every partition and merge (read-models/merged*.ts), what the home
 * database alone keeps (audit, views, alerts, dead letters, bulk batches), and when a read falls back to, or adds
 * from, the R2 history (history/*). A caller names what it wants (an agent, a run id, a list's filters); it never
 * picks a database or a bucket.
 *
 * Built once per request (worker/store.ts consoleStoreFromEnv): `now` fixes where the hot window starts for every
 * read of that request.
 */

/** What the store is built from: the D1 databases, the R2 history bucket when bound, and the settings its reads obey. */
export type ConsoleStoreInput = {
  store: Store;
  /** The R2 history (every accepted event), when bound; without it every read is D1's alone. */
  bucket?: R2Bucket;
  /** The history's layout (HISTORY_SHARDS, HISTORY_PREVIOUS_SHARDS) and whether D1 keeps timeline segments (TIMELINE_SEGMENTS). */
  history: { shards: number; previousShards: number[]; segments?: boolean };
  hotWindowHours: number;
  /** How far ahead of now ingest accepts an event's time: reads that end "now" end this much later. */
  futureSkewMs: number;
  now?: number;
};

const HOUR_MS = 3_600_000;

/** The console's store: see the module's comment. Each method's JSDoc says which span of R2 it reads, where it reads R2. */
export function consoleStore(input: ConsoleStoreInput) {
  const { store, bucket, history, hotWindowHours, futureSkewMs } = input;
  const now = input.now ?? Date.now();
  const tier = historyTier(bucket, { ...history, hotWindowHours, futureSkewMs }, now);
  const runsSource: RunsHistorySource | undefined = bucket ? { bucket, counts: history, now, futureSkewMs } : undefined;
  const hotStart = now - hotWindowHours * HOUR_MS;
  const part = (a: AgentRef) => partitionFor(store, a.agentClass, a.agentName);

  const agents = {
    /** The agent registry, newest listed first (every partition, merged). */
    list: (filters: { agentClass?: unknown }, page: PageOptions = {}) => listAgentsIn(store, filters, page),
    /** The /agents list as filtered (agentListFilters' output): every agent, or those with gaps, or those blocked. */
    page: (f: Parameters<typeof agentListIn>[1], page: PageOptions = {}) => agentListIn(store, f, page),
    /** One agent's registry row, or null. */
    find: (agent: AgentRef) => findAgentIn(store, agent.agentClass, agent.agentName),
    /** The last time the console asked the agent what it holds (reconciliation), and what it found. */
    lastReconciliation: (agent: AgentRef) => lastReconciliation(part(agent), agent),
    /** The agent's recovery pause, as of `at`. */
    recoveryPause: (agent: AgentRef, at = Date.now()) => recoveryPauseOf(part(agent), agent.agentClass, agent.agentName, at),
    /** The agent's runs whose end the console does not know (possible losses). */
    notKnown: (agent: AgentRef) => agentNotKnown(store, agent),
    /** Sub-agents keyed by this agent's name because the tail matched no parent to them (home database). */
    unknownParents: (agent: AgentRef) => unknownParentsOf(store.home, agent.agentClass, agent.agentName),
    /** Whether its Worker's tail carried its events: the last record of an object of it (home database, one row), or null. */
    tailRecord: (agent: AgentRef) => tailRecordOf(store.home, agent),
    /** The objects behind an agent keyed by its Worker (src/telemetry/workers.ts): where they ran, what was tried. */
    otherWorkerObjects: (agentClass: string, agentName: string, where: Parameters<typeof otherWorkerObjectsOf>[3]) =>
      otherWorkerObjectsOf(store.home, agentClass, agentName, where),
    /** Agents woken by alarms in the last hour (the fleet's, or one agent's), from the rollups. */
    alarmRates: (opts: Parameters<typeof alarmRatesIn>[1]) => alarmRatesIn(store, opts),
    /** Wakes with nothing reported (the tail handler records these in the home database). */
    silentWakes: (opts: { now?: number; limit?: number } = {}) => silentWakes(store.home, opts),
    /**
     * How long the agent was resident lately. Reads R2 when D1 keeps no timeline segments: the agent's objects over
     * the estimate's window (residency.ts).
     */
    residentEstimate: (agent: AgentRef, at = now) => residentEstimateIn(store, agent, at, tier),
  };

  const runs = {
    /**
     * A runs list. With the R2 history bound and a filter that admits completed runs, it adds the healthy completed
     * runs that left D1: for one agent, its objects over the last `hours` (COMPLETED_RUNS_HOURS, 24 by default); for
     * the fleet, a bounded read of the last hours per page (FLEET_COMPLETED_LIMITS). The page says the span it read.
     */
    list: (filters: Parameters<typeof listRunsWithHistory>[1], page: PageOptions = {}) => listRunsWithHistory(store, filters, page, runsSource),
    /** A run D1 holds (with its last-known snapshot), or null: no R2 read. */
    stored: (id: string, owner?: AgentRef) => getStoredRunIn(store, id, owner),
    /**
     * A run and a page of its events. D1 first; a run D1 no longer holds (it completed healthily, or retention deleted
     * it) is read from R2: with its agent named, the agent's objects over the hot window and RUN_LOOKBACK_HOURS (48)
     * before it, up to now; without, an id lookup of the last 24 hours, then of the 24 before the hot window. Folded with
     * ingest's mapping, one run shows as D1 would have shown it (`history`); events that fold to no single run are
     * `historyEvents`; none, `nowhere` with the span looked at (null without a bucket).
     */
    get: async (id: string, owner: AgentRef | undefined, page: PageOptions = {}) => {
      const run = await getStoredRunIn(store, id, owner);
      if (run) return { where: "hot" as const, run, events: await runEvents(part(run), run, page, tier) };
      const to = now + futureSkewMs;
      let found = bucket ? await runFromHistory(bucket, history, id, owner, to, hotWindowHours + RUN_LOOKBACK_HOURS) : null;
      if (bucket && !owner && !found?.events.length) found = await runFromHistory(bucket, history, id, owner, to - hotWindowHours * HOUR_MS);
      if (!found?.events.length) return { where: "nowhere" as const, found };
      const folded = foldRuns(found.events).filter((r) => r.fiberId === id);
      if (folded.length !== 1) return { where: "historyEvents" as const, found };
      const one = folded[0]!;
      return { where: "history" as const, run: one, found, events: await runEvents(part(one), one, page, tier) };
    },
  };

  const incidents = {
    /** Incidents for a list's filters (one agent's partition, or every partition merged). */
    list: (filters: Parameters<typeof listIncidentsIn>[1], page: PageOptions = {}) => listIncidentsIn(store, filters, page),
    /** Incident counts per group for a list's filters. */
    group: (filters: Parameters<typeof groupIncidentsIn>[1], by: Parameters<typeof groupIncidentsIn>[2]) => groupIncidentsIn(store, filters, by),
    /** An incident D1 holds, or null: no R2 read. */
    hot: (id: string, owner?: AgentRef) => getIncidentIn(store, id, owner),
    /**
     * An incident: D1 first; one retention deleted (not open, quiet past the hot window) is read from R2 before the
     * hot window's start: with its agent named, that agent's objects over INCIDENT_LOOKBACK_HOURS (48); without, an id
     * lookup of the 24 hours before it. `nowhere` carries the span looked at (null without a bucket).
     */
    get: async (id: string, owner?: AgentRef) => {
      const incident = await getIncidentIn(store, id, owner);
      if (incident) return { where: "hot" as const, incident };
      const found = bucket ? await incidentFromHistory(bucket, history, id, owner, hotStart) : null;
      if (!found?.events.length) return { where: "nowhere" as const, found };
      return { where: "history" as const, found, status: statusFromEvents(found.events) };
    },
    /** A page of the incident's timeline; before the hot window it reads the agent's R2 objects over the incident's span. */
    timeline: (incident: Parameters<typeof incidentTimeline>[1], page: PageOptions = {}) => incidentTimeline(part(incident), incident, page, tier),
    /** The incident's attempts, counted at ingest, and what each re-spent. */
    attempts: (incident: Parameters<typeof incidentAttempts>[1]) => incidentAttempts(part(incident), incident),
    /** Whether the console holds a run keyed by the incident's request id (its chat turn): one primary-key read. */
    turnRun: async (i: Pick<IncidentRow, "requestId"> & AgentRef) =>
      i.requestId ? (await getStoredRunIn(store, i.requestId, { agentClass: i.agentClass, agentName: i.agentName })) !== null : false,
  };

  const sessions = {
    /** Sessions for a list's filters (every partition, merged). */
    list: (filters: Parameters<typeof listSessionsIn>[1], page: PageOptions = {}) => listSessionsIn(store, filters, page),
    /** A session by name (its agent's partition when named), or null. */
    get: (name: string, owner?: AgentRef) => getSessionIn(store, name, owner),
    /** A page of the session's timeline; the first page also reads R2 from its first activity to the hot window's start. */
    timeline: (session: Parameters<typeof sessionTimeline>[1], page: PageOptions = {}) => sessionTimeline(part(session), session, page, tier),
  };

  /** What reconciliation reads and records: the open work it compares with the agents' answers. */
  const reconcile = {
    /** Agents with open work untouched since `before`, oldest first (every partition, merged). */
    stale: (before: number, limit: number) => staleAgentsIn(store, before, limit),
    /** Agents some of whose numbered events never arrived, due a visit (every partition, merged). */
    gapsDue: (before: number, limit: number) => gapAgentsDueIn(store, before, limit),
    /** One agent's open runs, incidents and sessions. */
    openWork: (agent: AgentRef) => openWorkOf(part(agent), agent),
    /** One agent's runs whose end awaits the agent's word (UNCONFIRMED_STAMP), at most `limit`. */
    unconfirmed: (agent: AgentRef, limit: number) => unconfirmedRunsOf(part(agent), agent, limit),
    /**
     * What the console knows of these runs' ends: D1's rows (null while open or unconfirmed), then, for ids D1 does
     * not hold, the R2 history of healthy runs that completed (COMPLETED_RUNS_HOURS back): those are not missing.
     */
    knownOutcomes: async (agent: AgentRef, ids: readonly string[]): Promise<Map<string, string | null>> => {
      const known = await knownRunOutcomes(part(agent), agent, ids);
      const absent = ids.filter((id) => !known.has(id));
      if (runsSource && absent.length) for (const [id, outcome] of await endedInHistory(runsSource, agent, absent)) known.set(id, outcome);
      return known;
    },
    /** Records that an agent was asked (its partition). */
    record: (r: Parameters<typeof recordReconciliation>[1]) => recordReconciliation(part(r), r),
  };

  return {
    agents,
    reconcile,
    runs,
    incidents,
    sessions,
    /** Ambiguous ops for a list's filters (one agent's partition when named). */
    ops: { list: (filters: Parameters<typeof listAmbiguousOpsIn>[1], page: PageOptions = {}) => listAmbiguousOpsIn(store, filters, page) },
    backups: { list: (filters: Parameters<typeof listBackupsIn>[1], page: PageOptions = {}) => listBackupsIn(store, filters, page, now) },
    events: {
      /** Events by type and time. When D1 keeps no segments, it reads the fleet's newest R2 objects (FLEET_READ_LIMITS: 48 h, 24 objects). */
      list: (filters: Parameters<typeof listEventsIn>[1], page: PageOptions = {}) => listEventsIn(store, filters, page, tier),
    },
    overview: {
      now: (at: number, recentMs: number) => overviewNowIn(store, at, recentMs),
      counts: (at: number) => overviewCountsIn(store, at),
      series: (opts: Parameters<typeof eventSeriesIn>[1]) => eventSeriesIn(store, opts),
      reasons: (opts: Parameters<typeof topReasonsIn>[1], at: number) => topReasonsIn(store, opts, at),
      stuckCount: (at: number, config: Parameters<typeof countStuckIn>[2]) => countStuckIn(store, at, config),
      exhaustingSoon: (at: number, windowMs: number, limit?: number) => exhaustingSoonIn(store, at, windowMs, limit),
      alarmLoops: (at: number) => countAlarmLoopsIn(store, at),
      possibleLosses: (opts: Parameters<typeof possibleLossesIn>[1]) => possibleLossesIn(store, opts),
    },
    deploys: {
      list: (opts: Parameters<typeof listDeploysIn>[1] = {}) => listDeploysIn(store, opts),
      figures: (versions: string[]) => versionFiguresIn(store, versions),
    },
    stuck: {
      list: (at: number, config: Parameters<typeof listStuckIn>[2], filter: Parameters<typeof listStuckIn>[3]) => listStuckIn(store, at, config, filter),
    },
    search: {
      /** Ids the hot store holds (D1 only): the search list's download. */
      hot: (input: string) => searchIn(store, input),
      /**
       * The header's search. Nothing in D1: the id may be older than the hot window, so it looks in R2 (an id lookup
       * of the last 24 hours, ID_SEARCH_LIMITS), and `history` says how far that looked; `historyRun` is an event
       * there carrying the id as a run id (a run that completed healthily left D1).
       */
      withHistory: async (input: string) => {
        const result = await searchIn(store, input);
        const found = result.matches.length === 0 && bucket ? await historySearch(bucket, { id: result.query }) : null;
        return { result, history: found, historyRun: found?.events.find((e) => carriesRunId(e, result.query)) };
      },
    },
    bulk: {
      /** The agents a bulk filter selects (every partition, merged by class and name). */
      targets: (at: number, filter: unknown, opts: Parameters<typeof bulkTargetsIn>[3] = {}) => bulkTargetsIn(store, at, filter, opts),
      /** A bulk batch's progress (home database), or null. */
      progress: (batchId: string) => batchProgress(store.home, batchId),
    },
    alerts: {
      /** The alert delivery log (home database). */
      deliveries: (filters: AlertFilterInput, page: PageOptions = {}) => listAlertDeliveries(store.home, filters, page),
      /** Alerts the hourly budgets suppressed in a window (home database). */
      suppressed: (opts: Parameters<typeof suppressedAlertsIn>[1]) => suppressedAlertsIn(store, opts),
      /** Versions whose first hour opened more incidents than the storm rule allows (the deploy-storm alert). */
      deployStorms: (at: number, config: Parameters<typeof deployStormsIn>[2]) => deployStormsIn(store, at, config),
      /** Tokens re-spent by recoveries in the last hour, per agent and per class (the budget alert). */
      respentLastHour: (at: number) => respentLastHourIn(store, at),
    },
    audit: { list: (filters: AuditFilterInput, page: PageOptions = {}) => listAudit(store.home, filters, page) },
    deadLetters: { list: (filters: Parameters<typeof listDeadLetters>[1], page: PageOptions = {}) => listDeadLetters(store.home, filters, page) },
    /** Saved views and each person's last view per list (home database). */
    views: {
      of: (email: string) => viewsFor(store.home, email),
      get: (id: string, email: string) => getView(store.home, id, email),
      last: (email: string, list: string) => lastViewFor(store.home, email, list),
      save: (v: SaveViewInput, at: number) => saveView(store.home, v, at),
      remember: (email: string, view: Parameters<typeof rememberView>[2]) => rememberView(store.home, email, view),
      forget: (email: string, list: string) => forgetView(store.home, email, list),
      delete: (id: string, who: Parameters<typeof deleteView>[2]) => deleteView(store.home, id, who),
    },
  };
}

export type ConsoleStore = ReturnType<typeof consoleStore>;

// Pure helpers and constants the pages use with what the store returns (no reads): re-exported here so a route
// imports the store API alone (scripts/rooms.ts). Filter parsers (read-models/filters.ts) and the error classes
// (read-models/errors.ts) are imported from their own modules.
export { ALERT_WINDOW_MS } from "./alerts";
export { agentListFilters } from "./read-models/agents";
export { attemptPointsOf, type IncidentBudget, incidentBudget, scoreForecast } from "./read-models/budget";
export { bulkFilter, bulkFilterQuery } from "./read-models/bulk-targets";
export type { CapturePaths } from "./read-models/capture";
export { eventGapOf } from "./read-models/event-gaps";
export { INCIDENT_GROUPS, type IncidentRow } from "./read-models/incidents";
export { NOW_SUPPRESSED_SCAN, nowWindow } from "./read-models/overview-now";
export { type AgentRef, ownerFrom } from "./read-models/owner";
export type { Page } from "./read-models/paging";
export { FLEET_COMPLETED_LIMITS } from "./read-models/runs-fleet-history";
export { parseStuckFilters, type StuckConfig } from "./read-models/stuck";
export { type SavedView, viewName, viewQuery } from "./views";
