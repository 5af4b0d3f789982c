import type { AdminErrorCode, ListRunsOutput, StatusOutput } from "../../src/admin-rpc/contract";
import type { CapturePaths } from "../../src/store/console-store";
import type { EventGap, ReconciliationRow } from "../../src/store/read-models";
import type { UnknownParent } from "../../src/store/read-models/facet-parents";
import { type AgentNotKnown, NOT_KNOWN_OUTCOMES } from "../../src/store/read-models/possible-losses";
import type { RecoveryPauseView } from "../../src/store/read-models/recovery-pauses";
import { type ActionAvailability, AdminActions, AFTER_ACTION_TRIGGER, AGENT_LIVE_PANEL } from "../components/actions";
import { CapturePathsNotice } from "../components/capture-paths";
import { LivePause, RecoveryPauseState } from "../components/recovery-pause";
import { Status } from "../components/status";
import { Ago } from "../components/time";
import { ago, bytes, duration, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, agentRunHref, detailHref, LISTS, listHref, type Owner } from "../links";
import { telemetryHealthWords } from "../telemetry-words";
import { EventGapNotice } from "./agents";
import { AWAKE_PANEL } from "./awake";
import { Figure } from "./overview";

/** The agent's live state through admin RPC, or the typed error that stood in its way. */
export type LiveState = { status: StatusOutput; runs: ListRunsOutput } | { error: string; code: AdminErrorCode; kind?: string };

/** A sub-agent's direct parent: its key, and whether it has a page here (it reported events of its own). */
export type ParentAgent = { agentClass: string; agentName: string; reported: boolean };

export type RunSummary = {
  fiberId: string;
  kind: string;
  name: string;
  startedAt: number | null;
  outcome: string | null;
  lastSeen: number;
  snapshotBytes: number | null;
};

/**
 * One agent: its live state through admin RPC (status, alarm, live runs), its
 * run history from the projection, and when reconciliation last asked it.
 * Live parts refresh through htmx.
 */
export function AgentPage(props: {
  ctx: PageContext;
  agentClass: string;
  agentName: string;
  live: LiveState;
  availability: ActionAvailability;
  history: RunSummary[];
  /** When reconciliation last asked this agent (null: never). */
  reconciled: ReconciliationRow | null;
  /** What the agent's event numbers say: events that never arrived (event-gaps.ts). */
  gap?: EventGap;
  /** The recovery pause as the console recorded it (null: never paused). */
  pause?: RecoveryPauseView | null;
  /** Set for a sub-agent: the parent it runs under, through which the console reaches it. */
  parent?: ParentAgent | null;
  /** Its runs whose end the console does not know (possible-losses.ts agentNotKnown). */
  notKnown?: AgentNotKnown;
  /** Sub-agents keyed by this name because the console matched no parent to them, with what it tried. */
  unknownParents?: UnknownParent[];
  /** Set for an agent keyed apart by its Worker (`Class@worker`): not the one this console's binding addresses. */
  otherWorker?: OtherWorkerAgent | null;
  /** How its events reach the console: its Worker's tail, its telemetry outbox, or both. */
  capture?: CapturePaths;
}) {
  // Said once: the tail's unnumbered events are what the capture notice explains, the gap notice adds nothing.
  const gapNotice = props.gap && !(props.capture?.tail && props.gap.highest === null);
  return (
    <Layout ctx={props.ctx} title={`${props.agentClass} · ${props.agentName}`} active={LISTS.agents}>
      {props.parent ? <SubAgentOf parent={props.parent} /> : null}
      {props.unknownParents?.length ? <ParentUnknown facets={props.unknownParents} now={props.ctx.now} /> : null}
      {props.otherWorker ? <OtherWorker agent={props.otherWorker} agentName={props.agentName} now={props.ctx.now} /> : null}
      <div id={AGENT_LIVE_PANEL} data-live hx-get={agentHref(props, "/live")} hx-trigger={`every ${props.ctx.pollSeconds}s, refresh`} hx-swap="innerHTML">
        <AgentLive ctx={props.ctx} agent={props} live={props.live} />
      </div>
      {props.capture ? <CapturePathsNotice capture={props.capture} now={props.ctx.now} /> : null}
      {gapNotice && props.gap ? (
        <EventGapNotice gap={props.gap} asked={"error" in props.live ? { ok: false, reason: props.live.error } : { ok: true }} />
      ) : null}
      {props.notKnown ? <NotKnownRuns agent={props} notKnown={props.notKnown} /> : null}
      <p
        class="muted"
        data-testid="reconciled"
        data-asked-at={props.reconciled ? String(props.reconciled.askedAt) : undefined}
        data-findings={props.reconciled && !props.reconciled.error ? String(props.reconciled.findings) : undefined}
      >
        {props.reconciled
          ? props.reconciled.error
            ? `Reconciliation last asked this agent ${ago(props.reconciled.askedAt, props.ctx.now)} and got no answer: ${props.reconciled.error}`
            : `Reconciliation last asked this agent ${ago(props.reconciled.askedAt, props.ctx.now)}: ${props.reconciled.findings} ${props.reconciled.findings === 1 ? "finding" : "findings"} recorded.`
          : "error" in props.live && props.live.code === "unsupported"
            ? "Reconciliation cannot ask this agent: a run of it silent past RECONCILE_UNKNOWN_AFTER_MINUTES is shown as unknown, never running forever."
            : "Reconciliation has not asked this agent yet: what this page read now is compared with the console's runs after it loads."}
      </p>
      {/* The console's record of a recovery pause: read again 2 s after an action (its event is in by then). */}
      <div id="agent-pause" hx-get={agentHref(props, "/pause")} hx-trigger={`every ${props.ctx.pollSeconds}s, ${AFTER_ACTION_TRIGGER}`} hx-swap="innerHTML">
        <RecoveryPauseState pause={props.pause ?? null} now={props.ctx.now} />
      </div>
      <AdminActions agentClass={props.agentClass} agentName={props.agentName} role={props.ctx.user.role} availability={props.availability} livePanel />
      <h2 id={AWAKE_PANEL}>Why is this agent awake</h2>
      {/* Loaded after the page: a second visit to the agent, so the page itself is not slower. */}
      <div id="agent-awake" hx-get={agentHref(props, "/awake")} hx-trigger="load" hx-swap="innerHTML">
        <p class="muted">Asking the agent what keeps it resident…</p>
      </div>
      <h2>Run history</h2>
      {/* The console's own records of the runs: refreshed like the live panel, and 2 s after an action (its events are in by then). */}
      <div
        id="agent-history"
        data-live
        hx-get={agentHref(props, "/history")}
        hx-trigger={`every ${props.ctx.pollSeconds}s, refresh, ${AFTER_ACTION_TRIGGER}`}
        hx-swap="innerHTML"
      >
        <RunHistory ctx={props.ctx} agentClass={props.agentClass} agentName={props.agentName} history={props.history} />
      </div>
      <p>
        <a href={listHref("runs", { agentClass: props.agentClass, agentName: props.agentName })}>All runs of this agent »</a>
      </p>
    </Layout>
  );
}

/** How the runs list names each not-known outcome. */
const NOT_KNOWN_LABEL = { unknown: "shown as unknown", ended_unreported: "ended, not reported" } as const;

/**
 * The agent's possible losses, as the overview counts them for the fleet: its runs whose end the console does not
 * know, each count linking to exactly those runs.
 */
function NotKnownRuns(props: { agent: Owner; notKnown: AgentNotKnown }) {
  const { runs, capped, scanned } = props.notKnown;
  const total = NOT_KNOWN_OUTCOMES.reduce((a, o) => a + runs[o], 0);
  const among = capped ? ` among its newest ${scanned} runs` : "";
  if (total === 0)
    return (
      <p class="muted" data-testid="agent-not-known" data-runs="0">
        No run of this agent the console keeps has an end it does not know{among}.
      </p>
    );
  return (
    <p class="notice" data-testid="agent-not-known" data-runs={String(total)}>
      <strong>Possible losses: {total === 1 ? "1 run" : `${total} runs`} of this agent</strong>
      {among} have an end the console does not know:{" "}
      {NOT_KNOWN_OUTCOMES.filter((o) => runs[o] > 0).map((o, i) => (
        <>
          {i ? ", " : ""}
          <Figure
            href={listHref("runs", { agentClass: props.agent.agentClass, agentName: props.agent.agentName, outcome: o })}
            value={{ n: runs[o], capped }}
            testId={`agent-not-known-${o}`}
          >
            {String(runs[o])}
          </Figure>{" "}
          {NOT_KNOWN_LABEL[o]}
        </>
      ))}
      . Their end events never reached the console; what the agent did is not claimed here.
    </p>
  );
}

/** A sub-agent's line: whose it is, with a link to the parent where the console has its page. */
function SubAgentOf(props: { parent: ParentAgent }) {
  const p = props.parent;
  const name = `${p.agentClass} "${p.agentName}"`;
  return (
    <p data-testid="sub-agent-of">
      A sub-agent of {p.reported ? <a href={agentHref(p)}>{name}</a> : name}
      {`${p.reported ? "" : " (which has reported no events of its own, so it has no page here)"}: the console reads it and acts on it through its parent.`}
    </p>
  );
}

/**
 * Sub-agents of unknown parent: their Worker publishes no ancestry and no parent the console knows has their object
 * id, so their events are kept under their own name, where same-named sub-agents of other parents meet.
 */
function ParentUnknown(props: { facets: UnknownParent[]; now: number }) {
  const [first] = props.facets;
  return (
    <p class="notice" data-testid="parent-unknown" data-objects={String(props.facets.length)}>
      <strong>Parent unknown.</strong> Events of this agent come from{" "}
      {props.facets.length === 1 ? "a Durable Object" : `${props.facets.length} Durable Objects`} whose parent the console could not find (last tried{" "}
      {ago(first!.checkedAt, props.now)}). {first!.why} Until it is found, its events are kept under its own name, so same-named sub-agents of different parents
      are shown here as one agent.
    </p>
  );
}

/** An agent keyed apart by its Worker: its class, the Worker (null: not named), and the objects behind it. */
export type OtherWorkerAgent = {
  agentClass: string;
  worker: string | null;
  objectPrefix: string | null;
  /** Whether the console binds the class (AGENT_CLASSES): else no Worker of it is one the console acts on. */
  bound: boolean;
  objects: UnknownParent[];
};

/**
 * Why an agent keyed `Class@worker` is not the one of that class and name the console acts on, and that the two are
 * kept apart (src/telemetry/workers.ts). Its actions are refused by the admin client, which says the same.
 */
function OtherWorker(props: { agent: OtherWorkerAgent; agentName: string; now: number }) {
  const { agentClass, worker, objects } = props.agent;
  const [first] = objects;
  const bound = (
    <a href={agentHref({ agentClass, agentName: props.agentName })}>
      {agentClass} "{props.agentName}"
    </a>
  );
  const tried = first?.why ? ` ${first.why} (Last tried ${ago(first.checkedAt, props.now)}.)` : "";
  if (!props.agent.bound)
    return (
      <p class="notice" data-testid="other-worker" data-worker={worker ?? ""}>
        <strong>
          {agentClass} of the Worker "{worker}".
        </strong>{" "}
        The console binds no {agentClass} (AGENT_CLASSES), so it cannot act on it; agents of a class it does not bind are keyed by the Worker the trace item
        names, so two Workers' same-named agents never merge.{tried}
      </p>
    );
  return worker ? (
    <p class="notice" data-testid="other-worker" data-worker={worker}>
      <strong>Not the {agentClass} this console acts on.</strong> This console's binding for {agentClass} points at another Worker: this agent's events come
      from the Worker "{worker}", from a Durable Object whose id is not the one that binding gives the name "{props.agentName}", nor that of a sub-agent of an
      agent the console knows (if "{worker}" is the Worker the binding addresses, it is a sub-agent whose parent the console has not found). Its events are kept
      apart from {bound}, and the console neither asks it nor acts on it.{tried}
    </p>
  ) : (
    <p class="notice" data-testid="other-worker" data-worker="">
      <strong>Parent unknown, or another Worker's agent.</strong> This agent's events come from a Durable Object whose id is not the one this console's binding
      for {agentClass} gives the name "{props.agentName}", nor that of a sub-agent of an agent the console knows. The trace item names no Worker (local dev), so
      the console cannot tell a sub-agent whose parent it has not found from an agent of a Worker its binding does not point at. Its events are kept apart from{" "}
      {bound}, one agent per Durable Object, and the console neither asks it nor acts on it.{tried}
    </p>
  );
}

/** The agent's recent runs as the console recorded them (an htmx fragment too). */
export function RunHistory(props: { ctx: PageContext; agentClass: string; agentName: string; history: RunSummary[] }) {
  return (
    <table data-testid="run-history">
      <thead>
        <tr>
          <th>run</th>
          <th>kind</th>
          <th>name</th>
          <th>started</th>
          <th>outcome</th>
          <th class="num">last snapshot</th>
        </tr>
      </thead>
      <tbody>
        {props.history.map((f) => (
          <tr data-run={f.fiberId} data-outcome={f.outcome ?? "running"}>
            <td>
              <a class="mono" href={detailHref("runs", f.fiberId, props)}>
                {f.fiberId}
              </a>
            </td>
            <td>{f.kind}</td>
            <td>{f.name}</td>
            <td>
              <Ago t={f.startedAt} now={props.ctx.now} />
            </td>
            <td>
              <Status value={f.outcome ?? "running"} />
            </td>
            <td class="num">{bytes(f.snapshotBytes)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The agent's telemetry pipeline as it counts it: whether its events reach the console at all. */
function LiveTelemetry(props: { health: StatusOutput["telemetry"]; now: number }) {
  const { tone, sentence } = telemetryHealthWords(props.health, props.now);
  const cls = tone === "bad" ? "error-message" : tone === "warn" ? "warn" : tone === "unknown" ? "muted" : undefined;
  return (
    <dd data-testid="live-telemetry" data-tone={tone} class={cls}>
      {sentence}
    </dd>
  );
}

/** The live part: derived status, next alarm, live runs of every kind, schedules and chat-recovery records. */
export function AgentLive(props: { ctx: PageContext; agent: Owner; live: LiveState }) {
  if ("error" in props.live) {
    // No mixin: why there is no live state (and no action) is the page's read-only sentence, said once (below).
    if (props.live.code === "unsupported")
      return (
        <p class="muted" data-testid="live-unsupported">
          No live state: this agent cannot be asked (see below).
        </p>
      );
    return (
      <p class="error-message" data-testid="live-error">
        Live state unavailable: {props.live.error}
      </p>
    );
  }
  const { status, runs } = props.live;
  const runHref = (id: string) => agentRunHref(props.agent, id);
  return (
    <>
      <dl class="facts">
        <dt>status</dt>
        <dd data-testid="agent-status" data-status={status.status}>
          <Status value={status.status} />
        </dd>
        <dt>telemetry</dt>
        <LiveTelemetry health={status.telemetry} now={props.ctx.now} />
        <dt>next alarm</dt>
        <dd>{status.nextAlarm ? `${iso(status.nextAlarm)} (${duration(status.nextAlarm - props.ctx.now)} from now)` : "none"}</dd>
        <dt>schedules</dt>
        <dd>{status.pendingScheduleCount}</dd>
        <dt>recovery pause</dt>
        <LivePause pause={status.recoveryPause} now={props.ctx.now} />
        <dt>chat recovery records</dt>
        <dd>
          {status.chatRecoveryIncidents.length
            ? status.chatRecoveryIncidents.map((i) => (
                <div>
                  <Status value={i.status} /> attempt {i.attempt ?? "?"} {i.reason ?? ""}
                </div>
              ))
            : "none"}
        </dd>
      </dl>
      <h2>Live runs</h2>
      {runs.runs.length ? (
        <table data-testid="live-runs">
          <thead>
            <tr>
              <th>run</th>
              <th>kind</th>
              <th>name</th>
              <th>age</th>
              <th class="num">snapshot</th>
            </tr>
          </thead>
          <tbody>
            {runs.runs.map((r) => (
              <tr>
                <td>
                  <a class="mono" href={runHref(r.id)}>
                    {r.id}
                  </a>
                </td>
                <td>{r.kind}</td>
                <td>{r.name}</td>
                <td>{duration(r.ageMs)}</td>
                <td class="num">{bytes(r.snapshotBytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted" data-testid="no-live-runs">
          No live runFiber rows.
        </p>
      )}
      {runs.inMemory.length ? (
        <>
          <h2>Running in memory without a row</h2>
          <p class="muted">
            Force idle removed their rows (so nothing recovers them) but could not stop them: they run until they return or the agent is evicted.
          </p>
          <table data-testid="in-memory-runs">
            <thead>
              <tr>
                <th>run</th>
                <th>kind</th>
              </tr>
            </thead>
            <tbody>
              {runs.inMemory.map((r) => (
                <tr data-run={r.id} data-kind={r.kind}>
                  <td class="mono">{r.id}</td>
                  <td>{r.kind}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      {runs.tasks.length ? (
        <>
          <h2>Tasks runs</h2>
          <table data-testid="live-tasks">
            <thead>
              <tr>
                <th>run</th>
                <th>kind</th>
                <th>definition</th>
                <th>state</th>
                <th>current step</th>
                <th>attempt</th>
                <th>created</th>
              </tr>
            </thead>
            <tbody>
              {runs.tasks.map((t) => (
                <tr data-run={t.runId} data-state={t.state}>
                  <td>
                    <a class="mono" href={runHref(t.runId)}>
                      {t.runId}
                    </a>
                  </td>
                  <td>
                    {t.kind}
                    {t.requestId ? <div class="muted mono">{t.requestId}</div> : null}
                  </td>
                  <td>{t.definition}</td>
                  <td>
                    <Status value={t.state} />
                    {t.wakeAt ? <div class="muted">wakes {iso(t.wakeAt)}</div> : null}
                  </td>
                  <td>{t.currentStep ?? t.statusMessage ?? "—"}</td>
                  <td>{t.attempt ?? "—"}</td>
                  <td>{ago(t.createdAt, props.ctx.now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      {runs.managedFibers.length ? (
        <>
          <h2>Managed fibers</h2>
          <table data-testid="managed-fibers">
            <thead>
              <tr>
                <th>fiber</th>
                <th>name</th>
                <th>status</th>
                <th>created</th>
                <th class="num">snapshot</th>
              </tr>
            </thead>
            <tbody>
              {runs.managedFibers.map((f) => (
                <tr data-run={f.fiberId} data-name={f.name} data-status={f.status}>
                  <td>
                    <a class="mono" href={runHref(f.fiberId)}>
                      {f.fiberId}
                    </a>
                  </td>
                  <td>{f.name}</td>
                  <td>
                    <Status value={f.status} />
                  </td>
                  <td>{ago(f.createdAt, props.ctx.now)}</td>
                  <td class="num">{bytes(f.snapshotBytes)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </>
  );
}
