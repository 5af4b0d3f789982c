import { EVENT_TYPES } from "@agent-oncall/telemetry/contract";
import { Hono } from "hono";
import type { JSX } from "hono/jsx/jsx-runtime";
import type { AnyColumnSet } from "../../console/components/columns";
import { INCIDENT_COLUMN_SET } from "../../console/components/incident-table";
import { OP_COLUMN_SET } from "../../console/components/ops-table";
import type { PageContext } from "../../console/layout";
import { detailHref, LISTS } from "../../console/links";
import { DeadLettersPage } from "../../console/pages/dead-letters";
import { EventsPage } from "../../console/pages/events";
import { IncidentFacts, IncidentFromHistoryPage, IncidentPage, IncidentsLive, IncidentsPage } from "../../console/pages/incidents";
import { AUDIT_COLUMN_SET, AuditPage, BACKUP_COLUMN_SET, BackupsPage, OpsPage } from "../../console/pages/lists";
import { type OverviewData, OverviewLive, OverviewPage } from "../../console/pages/overview";
import { OverviewNowSection } from "../../console/pages/overview-now";
import { RUN_COLUMN_SET, RunFromHistoryPage, RunsPage, RunTimelinePage } from "../../console/pages/runs";
import { SESSION_COLUMN_SET, SessionPage, SessionStatusFragment, SessionsPage } from "../../console/pages/sessions";
import { incidentNotFoundWords, runNotFoundWords } from "../../console/words";
import {
  ALERT_WINDOW_MS,
  attemptPointsOf,
  type ConsoleStore,
  INCIDENT_GROUPS,
  NOW_SUPPRESSED_SCAN,
  nowWindow,
  ownerFrom,
  type Page,
  scoreForecast,
} from "../../src/store/console-store";
import { BadRequest } from "../../src/store/read-models/errors";
import { consoleConfig } from "../config";
import type { Env } from "../env";
import { askAgent } from "./availability";
import { budgetOf } from "./budget";
import { listQuery } from "./columns";
import { type ConsoleContext, type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page, problem } from "./render";
import { stuckConfigOf } from "./stuck";

/**
 * The console's read-only pages. Each reads through the store API (src/store/console-store.ts) only; filters and
 * cursors come from the URL and are validated there.
 */
export const pages = new Hono<ConsoleEnv>();

const query = (c: ConsoleContext) => c.req.query() as Record<string, string | undefined>;
const paging = (q: Record<string, string | undefined>) => ({ cursor: q.cursor, limit: q.limit });

async function overviewData(c: ConsoleContext): Promise<OverviewData> {
  const now = Date.now();
  const store = storeOf(c);
  const recentMs = consoleConfig(c.env).console.recentMs;
  const [nowData, counts, series, reasons, worst, stuck, deploys, exhausting, alarmLoops, losses] = await Promise.all([
    store.overview.now(now, recentMs),
    store.overview.counts(now),
    store.overview.series({ since: now - 86_400_000, until: now }),
    store.overview.reasons({ since: now - 86_400_000, limit: 8 }, now),
    // Open incidents only: a closed (exhausted, force idled …) incident is history, not on-call work.
    store.incidents.list({ status: "open" }, { limit: 5 }),
    store.overview.stuckCount(now, stuckConfigOf(c.env)),
    // Deploys marked on the chart: versions first seen in its window.
    store.deploys.list({ since: now - 86_400_000, until: now }),
    store.overview.exhaustingSoon(now, consoleConfig(c.env).budget.forecastWindowMs),
    store.overview.alarmLoops(now),
    // What may have been lost: runs whose end is not known, events lost on the way in (24 h), bound classes never heard from.
    store.overview.possibleLosses({ since: now - 86_400_000, boundClasses: consoleConfig(c.env).agentClasses }),
  ]);
  return {
    counts,
    series,
    reasons,
    worst: worst.items,
    stuck,
    deploys,
    exhausting,
    alarmLoops: { n: alarmLoops.n, capped: alarmLoops.capped },
    losses,
    now: nowData,
  };
}

/** The overview's first screen alone (its own refresh): bounded reads only, whatever the fleet's size. */
async function overviewNowData(c: ConsoleContext) {
  const now = Date.now();
  const store = storeOf(c);
  const recentMs = consoleConfig(c.env).console.recentMs;
  const [nowData, deploys, suppressed] = await Promise.all([
    store.overview.now(now, recentMs),
    store.deploys.list({ since: nowWindow(now, recentMs).chartSince, until: now }),
    // Alerts the hourly budgets suppressed in the banner's hour: a bounded read of the rate-limited deliveries.
    store.alerts.suppressed({ since: now - ALERT_WINDOW_MS, limit: NOW_SUPPRESSED_SCAN }),
  ]);
  return { now: nowData, deploys, suppressed };
}

/**
 * A list page: filters and cursor from the URL through the read model (which validates them), and the columns
 * `cols=` picks from the list's declaration; JSON for Accept: application/json, else the rendered page.
 */
function listRoute<T>(
  path: string,
  set: AnyColumnSet | null,
  read: (store: ConsoleStore, filters: Record<string, string | undefined>, page: { cursor?: string; limit?: string }) => Promise<Page<T>>,
  render: (ctx: PageContext, q: Record<string, string | undefined>, list: Page<T>, cols: string[], env: Env) => JSX.Element,
) {
  pages.get(path, async (c) => {
    const { q, cols } = listQuery(c, set);
    const list = await read(storeOf(c), q, paging(q));
    if (wantsJson(c)) return c.json(list);
    return page(c, render(pageContext(c), q, list, cols, c.env));
  });
}

pages.get("/", async (c) => {
  // The overview's numbers as JSON, for scripts (`npm run cli -- verify`) and alerting: every figure at once.
  if (wantsJson(c)) return c.json(await overviewData(c));
  // The page itself reads only its first screen (bounded); the 24 h part loads as its own fragment (/partials/overview).
  const data = await overviewNowData(c);
  return page(c, <OverviewPage ctx={pageContext(c)} now={data.now} deploys={data.deploys} suppressed={data.suppressed} />);
});
pages.get("/partials/overview", async (c) => c.html(<OverviewLive ctx={pageContext(c)} data={await overviewData(c)} />));
pages.get("/partials/overview-now", async (c) => {
  const data = await overviewNowData(c);
  if (wantsJson(c)) return c.json(data);
  return c.html(<OverviewNowSection ctx={pageContext(c)} now={data.now} deploys={data.deploys} suppressed={data.suppressed} />);
});

/** Dead letters by kind of loss and time (the overview's possible losses link here); they live in the home database. */
listRoute(
  LISTS.deadLetters,
  null,
  (store, q, p) => store.deadLetters.list(q, p),
  (ctx, q, list) => <DeadLettersPage ctx={ctx} query={q} page={list} />,
);

/** The incidents list and its groups for the URL's filters (validated by the read models), and the columns to show. */
async function incidentsOf(c: ConsoleContext) {
  const { q, cols } = listQuery(c, INCIDENT_COLUMN_SET);
  if (q.groupBy && !(INCIDENT_GROUPS as readonly string[]).includes(q.groupBy)) throw new BadRequest(`groupBy must be one of ${INCIDENT_GROUPS.join(", ")}`);
  const store = storeOf(c);
  const [list, groups] = await Promise.all([store.incidents.list(q, paging(q)), q.groupBy ? store.incidents.group(q, q.groupBy as never) : null]);
  return { q, list, groups, cols };
}

pages.get("/incidents", async (c) => {
  const { q, list, groups, cols } = await incidentsOf(c);
  if (wantsJson(c)) return c.json(list);
  return page(c, <IncidentsPage ctx={pageContext(c)} query={q} page={list} groups={groups} cols={cols} />);
});
/** The refreshing part of /incidents, for the same filters (the page polls it). */
pages.get("/partials/incidents", async (c) => {
  const { q, list, groups, cols } = await incidentsOf(c);
  return c.html(<IncidentsLive ctx={pageContext(c)} query={q} page={list} groups={groups} cols={cols} />);
});

/**
 * Events by type and time: what the overview's chart and rollup figures count. A page without a type (the way in
 * from the address bar, and the filter form's Clear) asks for one; a JSON caller without one gets the read model's 400.
 */
pages.get("/events", async (c) => {
  const { q } = listQuery(c, null);
  if (!q.type?.trim() && !wantsJson(c)) return page(c, <EventsPage ctx={pageContext(c)} query={q} page={null} types={EVENT_TYPES} />);
  const list = await storeOf(c).events.list(q, paging(q));
  if (wantsJson(c)) return c.json(list);
  return page(c, <EventsPage ctx={pageContext(c)} query={q} page={list} types={EVENT_TYPES} />);
});

pages.get("/incidents/:incidentId", async (c) => {
  const id = c.req.param("incidentId");
  const q = query(c);
  const store = storeOf(c);
  // D1 first; retention may have deleted it (incidents not open leave D1 after the hot window): the R2 history may still have it.
  const got = await store.incidents.get(id, ownerFrom(q));
  if (got.where === "nowhere") return problem(c, 404, incidentNotFoundWords(id, got.found));
  if (got.where === "history") {
    const { found, status } = got;
    if (wantsJson(c)) return c.json({ incident: null, history: { ...found, status } });
    const { retention } = consoleConfig(c.env);
    return page(c, <IncidentFromHistoryPage ctx={pageContext(c)} id={id} found={found} status={status} hotWindowHours={retention.hotWindowHours} />);
  }
  const { incident } = got;
  const owner = { agentClass: incident.agentClass, agentName: incident.agentName };
  const [timeline, attempts] = await Promise.all([store.incidents.timeline(incident, paging(q)), store.incidents.attempts(incident)]);
  // An open incident's budget: the agent's own record where it can be read (a read, allowed to viewers).
  const budget = incident.status === "open" ? await budgetOf(c, incident) : null;
  // A closed chat incident's forecast against what happened, replayed from the attempts on this timeline page.
  const forecastScore = scoreForecast(incident, attemptPointsOf(timeline.items));
  if (wantsJson(c)) return c.json({ incident, attempts, timeline, budget, forecastScore });
  // Where the operator acts: what the agent can do now, its open ambiguous ops, and its session.
  const sessionName = timeline.items.find((e) => e.sessionName)?.sessionName ?? null;
  const [can, ops, session, pause, turnRun] = await Promise.all([
    askAgent(c, incident.agentClass, incident.agentName),
    store.ops.list({ ...owner, open: true }, { limit: 20 }),
    sessionName ? Promise.resolve({ sessionName }) : store.sessions.get(incident.agentName, owner),
    store.agents.recoveryPause(owner, Date.now()),
    store.incidents.turnRun(incident),
  ]);
  return page(
    c,
    <IncidentPage
      ctx={pageContext(c)}
      incident={incident}
      attempts={attempts}
      timeline={timeline}
      query={q}
      budget={budget}
      forecastScore={forecastScore}
      pause={pause}
      act={{
        actions: can.actions,
        resolve: can.resolve,
        ops: ops.items,
        opsMore: ops.next !== null,
        sessionName: session?.sessionName ?? null,
        traceId: timeline.items.find((e) => e.traceId)?.traceId ?? null,
        turnRun,
      }}
    />,
  );
});

/** An incident's facts (an htmx fragment): what its page reads again after an action on its agent. */
pages.get("/incidents/:incidentId/facts", async (c) => {
  const store = storeOf(c);
  const incident = await store.incidents.hot(c.req.param("incidentId"), ownerFrom(query(c)));
  // Gone from the hot store since the page was drawn: a sentence where the facts were (the page itself has the history).
  if (!incident) return problem(c, 404, "This incident is no longer in the hot store: reload the page for what its history holds.");
  const [attempts, pause, turnRun] = await Promise.all([
    store.incidents.attempts(incident),
    store.agents.recoveryPause(incident, Date.now()),
    store.incidents.turnRun(incident),
  ]);
  return c.html(<IncidentFacts ctx={pageContext(c)} incident={incident} attempts={attempts} pause={pause} turnRun={turnRun} />);
});

// Runs of every kind were "fibers" before Tasks and chat turns joined them: old links and bookmarks keep working.
pages.get("/fibers", (c) => c.redirect(`${LISTS.runs}${new URL(c.req.url).search}`, 301));
pages.get("/fibers/:runId", (c) => c.redirect(`${detailHref("runs", c.req.param("runId"))}${new URL(c.req.url).search}`, 301));

// Runs lists add the ones that completed healthily (they left D1) from the R2 history: an agent's, or the fleet's over
// a stated span (`hours`), a bounded read per page (runs-history.ts, runs-fleet-history.ts).
listRoute(
  "/runs",
  RUN_COLUMN_SET,
  (store, q, p) => store.runs.list(q, p),
  (ctx, q, list, cols) => <RunsPage ctx={ctx} query={q} page={list} cols={cols} />,
);

pages.get("/runs/:fiberId", async (c) => {
  const id = c.req.param("fiberId");
  const q = query(c);
  // D1 first; a run that completed healthily left D1 when it ended, and retention deletes the rest after the hot
  // window: the store reads those from the R2 history (src/store/console-store.ts runs.get says which span).
  const got = await storeOf(c).runs.get(id, ownerFrom(q), paging(q));
  if (got.where === "hot") {
    if (wantsJson(c)) return c.json({ run: got.run, events: got.events });
    return page(c, <RunTimelinePage ctx={pageContext(c)} fiber={got.run} events={got.events} query={q} />);
  }
  if (got.where === "nowhere") return problem(c, 404, runNotFoundWords(id, got.found));
  const { found } = got;
  // Folded with ingest's own mapping: one run (the id under one agent) shows as D1 would have shown it.
  if (got.where === "history") {
    const read = { from: found.from, to: found.to, scan: found.scan };
    if (wantsJson(c)) return c.json({ run: got.run, events: got.events, readFrom: "history", history: read });
    return page(c, <RunTimelinePage ctx={pageContext(c)} fiber={got.run} events={got.events} query={q} fromHistory={found} />);
  }
  if (wantsJson(c)) return c.json({ run: null, history: found });
  return page(c, <RunFromHistoryPage ctx={pageContext(c)} id={id} found={found} hotWindowHours={consoleConfig(c.env).retention.hotWindowHours} />);
});

listRoute(
  "/sessions",
  SESSION_COLUMN_SET,
  (store, q, p) => store.sessions.list(q, p),
  (ctx, q, list, cols) => <SessionsPage ctx={ctx} query={q} page={list} cols={cols} />,
);

pages.get("/sessions/:name", async (c) => {
  const name = c.req.param("name");
  const q = query(c);
  const store = storeOf(c);
  const session = await store.sessions.get(name, ownerFrom(q));
  if (!session) return problem(c, 404, `No session named "${name}" has reported to this console.`);
  const owner = { agentClass: session.agentClass, agentName: session.agentName };
  const [timeline, ops, can] = await Promise.all([
    store.sessions.timeline(session, paging(q)),
    store.ops.list({ ...owner, sessionName: session.sessionName, open: true }, { limit: 20 }),
    askAgent(c, session.agentClass, session.agentName),
  ]);
  if (wantsJson(c)) return c.json({ session, timeline, ops: ops.items });
  return page(c, <SessionPage ctx={pageContext(c)} session={session} timeline={timeline} query={q} ops={ops.items} can={can} />);
});

pages.get("/sessions/:name/status", async (c) => {
  const session = await storeOf(c).sessions.get(c.req.param("name"), ownerFrom(query(c)));
  if (!session) return problem(c, 404, "No such session.");
  return c.html(<SessionStatusFragment status={session.status} />);
});

listRoute(
  "/backups",
  BACKUP_COLUMN_SET,
  (s, q, p) => s.backups.list(q, p),
  (ctx, q, list, cols) => <BackupsPage ctx={ctx} query={q} page={list} cols={cols} />,
);

listRoute(
  "/audit",
  AUDIT_COLUMN_SET,
  (s, q, p) => s.audit.list(q, p),
  (ctx, q, list, cols) => <AuditPage ctx={ctx} query={q} page={list} cols={cols} />,
);

/**
 * Resolved ops the /ops page shows under the open ones: with a full page of open ops (51 rows read), the page stays
 * within 60 rows read (8 + 1).
 */
const RECENTLY_RESOLVED = 8;

/** Ambiguous ops. In HTML without an `open` filter: the open ones (paged) first, then the latest resolved. JSON is the plain list. */
pages.get("/ops", async (c) => {
  const { q, cols } = listQuery(c, OP_COLUMN_SET);
  const store = storeOf(c);
  if (wantsJson(c)) return c.json(await store.ops.list(q, paging(q)));
  const split = q.open === undefined || q.open === "";
  const [list, resolved] = await Promise.all([
    store.ops.list(split ? { ...q, open: "true" } : q, paging(q)),
    split && !q.cursor ? store.ops.list({ ...q, open: "false" }, { limit: RECENTLY_RESOLVED }) : null,
  ]);
  return page(c, <OpsPage ctx={pageContext(c)} query={q} page={list} resolved={resolved ? resolved.items : null} cols={cols} />);
});

/** The agent registry, for the CLI. */
pages.get("/api/agents", async (c) => {
  const q = query(c);
  return c.json(await storeOf(c).agents.list(q, paging(q)));
});
