import type { FoundBeforeHot } from "../../src/store/history/before-hot";
import {
  type AttemptUsage,
  INCIDENT_GROUPS,
  INCIDENT_KINDS,
  INCIDENT_STATUSES,
  type IncidentAttempts,
  type IncidentGroups,
  type IncidentRow,
  type OpRow,
  type Page,
  type TimelinePage,
} from "../../src/store/read-models";
import type { ForecastScore, IncidentBudget } from "../../src/store/read-models/budget";
import type { RecoveryPauseView } from "../../src/store/read-models/recovery-pauses";
import { type ActionAvailability, AdminActions, AFTER_ACTION_TRIGGER } from "../components/actions";
import { ColumnChooser } from "../components/columns";
import { ExportLinks } from "../components/export-links";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { HistoryFacts, HistoryReadSpan, historyReadAttrs } from "../components/from-history";
import { HotSpan } from "../components/hot-span";
import { INCIDENT_COLUMN_SET, IncidentTable } from "../components/incident-table";
import { OpsTable } from "../components/ops-table";
import { ListPager } from "../components/pager";
import { ForecastScoreFacts, RecoveryBudget } from "../components/recovery-budget";
import { IncidentPauseSkips, RecoveryPauseState } from "../components/recovery-pause";
import type { ResolveAvailability } from "../components/resolve-op";
import { Status } from "../components/status";
import { Time } from "../components/time";
import { TimePresets } from "../components/time-presets";
import { PagedTimeline, Timeline } from "../components/timeline";
import { count } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, bulkForIncidentHref, detailHref, href, LISTS, listHref } from "../links";
import { incidentStatusLabel, respentAttemptsCapped } from "../words";

type Query = Record<string, string | undefined>;

/** Incidents, filterable by kind, status, reason, agent and time, and groupable. The list refreshes by itself. */
export function IncidentsPage(props: { ctx: PageContext; query: Query; page: Page<IncidentRow>; groups: IncidentGroups | null; cols?: readonly string[] }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Incidents" active={LISTS.incidents}>
      <FilterForm action={LISTS.incidents}>
        <SelectFilter name="kind" label="kind" value={q.kind} options={INCIDENT_KINDS} />
        <SelectFilter name="status" label="status" value={q.status} options={INCIDENT_STATUSES} />
        <TextFilter name="reason" label="reason" value={q.reason} placeholder="max_attempts_exceeded" />
        <TextFilter name="agentClass" label="agent class" value={q.agentClass} />
        <TextFilter name="agentName" label="agent name" value={q.agentName} />
        <TextFilter name="version" label="version" value={q.version} />
        <TextFilter name="since" label="since" value={q.since} placeholder="1h or 2026-11-21T00:00Z" />
        <SelectFilter name="groupBy" label="group by" value={q.groupBy} options={INCIDENT_GROUPS} />
        {/* Kept through Apply: a list of incidents without a reason (the overview's "(no reason)" links here). */}
        {q.noReason ? <input type="hidden" name="noReason" value={q.noReason} /> : null}
        <ColumnChooser set={INCIDENT_COLUMN_SET} cols={props.cols ?? []} />
      </FilterForm>
      <TimePresets path={LISTS.incidents} query={q} />
      <HotSpan list="incidents" hours={props.ctx.hotWindowHours} />
      <ExportLinks list="incidents" query={q} />
      {q.reason ? (
        <p>
          <a
            data-testid="bulk-link"
            href={listHref("bulk", { incidentReason: q.reason, openOnly: q.status === "open" ? "true" : undefined, agentClass: q.agentClass })}
          >
            {`Act on every agent with ${q.status === "open" ? "an open" : "an"} incident of reason ${q.reason} (bulk force idle or trigger alarm, with a preview first)`}
          </a>
        </p>
      ) : null}
      {/* Refreshes by itself like the overview (every pollSeconds, paused while the tab is hidden: console.js), with the same filters and page. */}
      <div id="incidents-live" data-live hx-get={href("/partials/incidents", q)} hx-trigger={`every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <IncidentsLive ctx={props.ctx} query={q} page={props.page} groups={props.groups} cols={props.cols} />
      </div>
    </Layout>
  );
}

/** The refreshing part of /incidents (an htmx fragment): the groups, the list and its pager. */
export function IncidentsLive(props: { ctx: PageContext; query: Query; page: Page<IncidentRow>; groups: IncidentGroups | null; cols?: readonly string[] }) {
  const q = props.query;
  return (
    <>
      {props.groups ? (
        <section>
          <h2>
            By {q.groupBy}
            {props.groups.bounded ? ` (newest ${props.groups.scanned} incidents)` : ""}
          </h2>
          <table data-testid="incident-groups" data-group-by={q.groupBy}>
            <tbody>
              {props.groups.groups.map((g) => (
                <tr data-group={g.key}>
                  <td>
                    {q.groupBy === "agent" ? (
                      g.key
                    ) : (
                      <a
                        href={listHref("incidents", {
                          ...q,
                          groupBy: undefined,
                          cursor: undefined,
                          ...(q.groupBy === "reason" && !g.key ? { noReason: "true" } : { [q.groupBy!]: g.key }),
                        })}
                      >
                        {g.key || "(none)"}
                      </a>
                    )}
                  </td>
                  <td class="num">{count(g.n)}</td>
                  {q.groupBy === "reason" && g.key ? (
                    <td>
                      <a href={listHref("bulk", { incidentReason: g.key, openOnly: q.status === "open" ? "true" : undefined })}>act on all of these</a>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      <IncidentTable rows={props.page.items} now={props.ctx.now} testId="incidents" showFirstSeen cols={props.cols} mainList />
      <ListPager path={LISTS.incidents} query={q} page={props.page} noun="incidents" empty="No incidents match." />
    </>
  );
}

/** What the incident page offers to act on: the agent's actions, its open ambiguous ops, and where to look next. */
export type IncidentActions = {
  actions: ActionAvailability;
  resolve: ResolveAvailability;
  ops: OpRow[];
  /** Whether the agent has more open ambiguous ops than `ops` holds (the page shows the first few). */
  opsMore: boolean;
  sessionName: string | null;
  traceId: string | null;
  /** Whether a run keyed by the incident's request id (its chat turn) is in the console. */
  turnRun: boolean;
};

/**
 * One incident at its permanent address, with every event of it, and where the operator acts: force idle and
 * trigger alarm for its agent, its agent's open ambiguous ops, and links to its session, run, ops and trace.
 */
export function IncidentPage(props: {
  ctx: PageContext;
  incident: IncidentRow;
  attempts: IncidentAttempts;
  timeline: TimelinePage;
  query: Query;
  act: IncidentActions;
  /** An open incident's recovery budget (null when it is not open). */
  budget?: IncidentBudget | null;
  /** A closed chat incident's forecast, scored against its outcome (null: no forecast could be made). */
  forecastScore?: ForecastScore | null;
  /** The recovery pause an operator put on its agent, as the console recorded it (null: never paused). */
  pause?: RecoveryPauseView | null;
}) {
  const i = props.incident;
  const a = props.attempts;
  const act = props.act;
  const path = detailHref("incidents", i.incidentId);
  return (
    <Layout ctx={props.ctx} title={`Incident ${i.incidentId}`} active={LISTS.incidents}>
      <IncidentFacts ctx={props.ctx} incident={i} attempts={a} pause={props.pause ?? null} turnRun={act.turnRun} />
      {props.budget ? <RecoveryBudget budget={props.budget} /> : null}
      {props.forecastScore ? <ForecastScoreFacts score={props.forecastScore} /> : null}
      {a.respentByAttempt.length ? <RespentByAttempt rows={a.respentByAttempt} capped={a.usageCapped} /> : null}
      <nav class="related" aria-label="Related to this incident" data-testid="incident-links">
        <a href={agentHref(i)}>Agent</a>
        {act.sessionName ? (
          <a href={detailHref("sessions", act.sessionName, i)} data-testid="incident-session-link">
            Session {act.sessionName}
          </a>
        ) : null}
        {i.fiberId ? <a href={detailHref("runs", i.fiberId, i)}>Fiber</a> : null}
        {i.requestId && act.turnRun ? <a href={detailHref("runs", i.requestId, i)}>Chat turn</a> : null}
        <a
          href={listHref("ops", { agentClass: i.agentClass, agentName: i.agentName, open: "true" })}
          data-testid="incident-ops-link"
          data-open={String(act.ops.length)}
          data-more={String(act.opsMore)}
        >
          {`Ambiguous ops (${count(act.ops.length)}${act.opsMore ? "+" : ""} open)`}
        </a>
        {/* An open incident is often one of many: act on every agent its filter selects (a preview first, operators only to confirm). */}
        {i.status === "open" ? (
          <a data-testid="incident-bulk-link" href={bulkForIncidentHref({ agentClass: i.agentClass, reason: i.reason, open: true })}>
            Bulk act on this incident's agents
          </a>
        ) : null}
        {act.traceId ? (
          props.ctx.traceUrl ? (
            <a href={props.ctx.traceUrl.replace("{traceId}", encodeURIComponent(act.traceId))} rel="noopener noreferrer" target="_blank">
              Trace
            </a>
          ) : (
            <span>
              trace <span class="mono">{act.traceId}</span>
            </span>
          )
        ) : null}
      </nav>
      <AdminActions agentClass={i.agentClass} agentName={i.agentName} role={props.ctx.user.role} availability={act.actions} />
      {act.ops.length ? (
        <section data-testid="incident-ops">
          <h2>Open ambiguous ops of this agent</h2>
          <OpsTable rows={act.ops} now={props.ctx.now} role={props.ctx.user.role} testId="ops" uidPrefix="incident-op" availability={act.resolve} />
        </section>
      ) : null}
      <h2>Timeline</h2>
      <PagedTimeline page={props.timeline} path={path} query={props.query} dir="later" traceUrl={props.ctx.traceUrl} />
    </Layout>
  );
}

/**
 * An incident's facts: status, who closed it, attempts, reason, re-spent tokens, times and its run. After an action
 * on its agent they are read again (the status changes once the action's events are in) from their own fragment
 * (the facts sub-path of the incident): the whole page is not something htmx may swap in (console.js puts a whole page in as a
 * sentence, never as markup), so asking for it and selecting the facts out of it swapped in nothing.
 */
export function IncidentFacts(props: {
  ctx: PageContext;
  incident: IncidentRow;
  attempts: IncidentAttempts;
  pause: RecoveryPauseView | null;
  /** Whether the console has a run keyed by the incident's request id (its chat turn): only then is it linked as one. */
  turnRun: boolean;
}) {
  const i = props.incident;
  const a = props.attempts;
  return (
    <dl
      class="facts"
      data-testid="incident-facts"
      id="incident-facts"
      hx-get={detailHref("incidents", i.incidentId, i, "/facts")}
      hx-swap="outerHTML"
      hx-trigger={AFTER_ACTION_TRIGGER}
    >
      <dt>status</dt>
      <dd data-testid="incident-status">
        <Status value={i.status} label={incidentStatusLabel(i)} />
        {i.status !== i.sdkStatus ? (
          <span class="muted">
            {" "}
            · the SDK's last word: <code data-testid="incident-sdk-status">{i.sdkStatus}</code>
          </span>
        ) : null}
      </dd>
      {i.closedBy ? (
        <>
          <dt>{i.status === i.closedBy ? "closed by" : "also recorded"}</dt>
          <dd data-testid="incident-closed-by" data-closed-by={i.closedBy} data-reason={i.closedByReason ?? undefined}>
            {i.closedBy === "force_idled" ? "an operator's force idle" : "reconciliation (the agent no longer had it)"} at <Time t={i.closedByAt} />
            {i.closedByReason ? (
              <>
                : <q>{i.closedByReason}</q>
              </>
            ) : null}
            {i.status !== i.closedBy ? (
              <span class="muted"> (after the SDK had closed it, or before it resumed: it does not change what the SDK said)</span>
            ) : null}
          </dd>
        </>
      ) : null}
      <IncidentPauseSkips skips={a.pauseSkips} sdkStatus={i.sdkStatus} now={props.ctx.now} />
      {props.pause && props.pause.state !== "resumed" ? (
        <>
          <dt>recovery pause</dt>
          <dd>
            <RecoveryPauseState pause={props.pause} now={props.ctx.now} />
          </dd>
        </>
      ) : null}
      <dt>kind</dt>
      <dd>{i.kind}</dd>
      <dt>agent</dt>
      <dd>
        <a href={agentHref(i)}>
          {i.agentClass} · {i.agentName}
        </a>
      </dd>
      <dt>attempts</dt>
      <dd data-testid="incident-attempts">
        {count(a.counted)} counted from its events ·{" "}
        {a.reported === null
          ? "the SDK reports no attempt counter"
          : `the SDK's counter says ${count(a.reported)}${i.maxAttempts ? ` of ${count(i.maxAttempts)}` : ""}`}
        {a.reportedIsBudget && a.reported !== null ? (
          <div class="muted" data-testid="attempts-budget">
            The SDK's chat-recovery counter is its budget, not a count: it starts again at 1 whenever a recovery makes progress.
          </div>
        ) : null}
        {a.disagree ? (
          <div class="warn" data-testid="attempts-disagree">
            They disagree:{" "}
            {a.counted < a.reported! ? "the SDK counted attempts whose events never arrived" : "more attempt events arrived than the SDK counted"}.
          </div>
        ) : null}
      </dd>
      <dt>reason</dt>
      <dd data-testid="incident-reason">{i.reason ?? "—"}</dd>
      <dt>tokens re-spent</dt>
      <dd data-testid="incident-respent" data-input={String(i.respentInputTokens)} data-output={String(i.respentOutputTokens)}>
        <RespentTokens input={i.respentInputTokens} output={i.respentOutputTokens} />
      </dd>
      <dt>first seen</dt>
      <dd>
        <Time t={i.firstSeen} />
      </dd>
      <dt>last seen</dt>
      <dd>
        <Time t={i.lastSeen} />
      </dd>
      {i.confirmedAt ? (
        <>
          <dt>last confirmed recovering</dt>
          <dd>
            <Time t={i.confirmedAt} />
          </dd>
        </>
      ) : null}
      {i.fiberId ? (
        <>
          <dt>fiber</dt>
          <dd>
            <a class="mono" href={detailHref("runs", i.fiberId, i)}>
              {i.fiberId}
            </a>
          </dd>
        </>
      ) : null}
      {i.requestId ? (
        props.turnRun ? (
          <>
            <dt>chat turn</dt>
            <dd>
              <a class="mono" href={detailHref("runs", i.requestId, i)} data-testid="incident-turn">
                {i.requestId}
              </a>
            </dd>
          </>
        ) : (
          <>
            {/* No run of that id in the console (a recovery turn's id, or a turn whose start never arrived): search finds what it belongs to. */}
            <dt>request</dt>
            <dd>
              <a class="mono" href={listHref("search", { q: i.requestId })} data-testid="incident-request">
                {i.requestId}
              </a>
            </dd>
          </>
        )
      ) : null}
    </dl>
  );
}

/** What the incident's recovery re-spent on the model: total, then input and output. */
function RespentTokens(props: { input: number; output: number }) {
  const total = props.input + props.output;
  if (total === 0) return <span class="muted">none reported (the agent reports model usage through telemetry.usage)</span>;
  return (
    <>
      <strong data-testid="respent-total">{count(total)}</strong> tokens · {count(props.input)} input · {count(props.output)} output
    </>
  );
}

/** Tokens per recovery attempt, from the model.usage events on the incident's timeline. */
function RespentByAttempt(props: { rows: AttemptUsage[]; capped: boolean }) {
  return (
    <section>
      <h2>Tokens re-spent per attempt</h2>
      {props.capped ? (
        <p class="muted" data-testid="respent-by-attempt-capped">
          {respentAttemptsCapped(props.rows.length)}
        </p>
      ) : null}
      <table data-testid="respent-by-attempt">
        <thead>
          <tr>
            <th>attempt</th>
            <th class="num">model calls</th>
            <th class="num">input</th>
            <th class="num">output</th>
            <th class="num">total</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr>
              <td>{r.attempt === null ? "(not told)" : r.attempt}</td>
              <td class="num">{count(r.calls)}</td>
              <td class="num">{count(r.inputTokens)}</td>
              <td class="num">{count(r.outputTokens)}</td>
              <td class="num">{count(r.inputTokens + r.outputTokens)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/**
 * An incident the hot store no longer holds: incidents that are not open leave D1 once their last activity is older
 * than the hot window. What the R2 history has of its timeline, the status its events say, and how far that read
 * looked. No actions: the incident is closed, and its agent's page has what is live.
 */
export function IncidentFromHistoryPage(props: {
  ctx: PageContext;
  id: string;
  found: FoundBeforeHot;
  /** The shown status its events say (the same derivation as the hot store's). */
  status: string;
  hotWindowHours: number;
}) {
  const { id, found } = props;
  return (
    <Layout ctx={props.ctx} title={`Incident ${id}`} active={LISTS.incidents}>
      <section data-testid="incident-from-history" {...historyReadAttrs(found)} data-status={props.status}>
        <p>
          This incident has left the hot store: incidents that are not open stay there {props.hotWindowHours} hours after their last activity. The timeline
          below is what the R2 history holds of it, <HistoryReadSpan found={found} />.
        </p>
        <dl class="facts">
          <dt>incident</dt>
          <dd class="mono">{id}</dd>
          <dt>status</dt>
          <dd data-testid="incident-status">
            <Status value={props.status} /> <span class="muted">(as its events say)</span>
          </dd>
          <HistoryFacts found={found} />
        </dl>
      </section>
      <h2>Timeline</h2>
      <Timeline events={found.events} traceUrl={props.ctx.traceUrl} />
    </Layout>
  );
}
