import { ADMIN_ACTIONS, AGENT_ACTION_NAMES, inputFields, mayTake } from "../../src/admin-rpc/actions";
import {
  type Capabilities,
  type EndedRun,
  type ForceIdleOutput,
  PAUSE_DEFAULT_HOURS,
  PAUSE_MAX_HOURS,
  type RunCheck,
  type VerifiedAfter,
  type VerifiedResult,
} from "../../src/admin-rpc/contract";
import { formOf } from "../action-words";
import { afterNoticeWords, busyWords, endedRunWords, forceIdleNoticeWords } from "../admin-words";
import { withheldActionsSentence } from "../words";
import { Status } from "./status";

/** The agent page's live panel: an action's answer re-renders it from the verified after-state (out of band). */
export const AGENT_LIVE_PANEL = "agent-live";
/**
 * The event an action's answer triggers (HX-Trigger): parts of a page that show what the action changes through
 * the console's own records (run history, incident facts, session status) refresh on it, once ingest had time.
 */
export const ACTED_EVENT = "console:acted";
/** hx-trigger for such a part: a refresh 2 s after an action (its events are ingested by then; the regular polls catch up otherwise). */
export const AFTER_ACTION_TRIGGER = `${ACTED_EVENT} from:body delay:2s`;

/**
 * What the console may offer on an agent page, decided from what the agent answered:
 * - `actions`: the agent has the admin mixin (capabilities when it reported them; older mixins do not);
 * - `read_only`: it cannot take actions (no mixin, or terminated), with the one sentence saying why.
 */
export type ActionAvailability = { kind: "actions"; capabilities: Capabilities | null } | { kind: "read_only"; why: string };

/** Why there are no actions on an agent without the admin mixin: one sentence. */
export const NO_MIXIN_SENTENCE = (agentClass: string) =>
  `${agentClass} does not include the admin mixin (withAdminRpc from @agent-oncall/admin-rpc), so this page shows only what its events reported (its Worker's tail, or its telemetry package) and offers no actions.`;

/**
 * The actions this agent supports, each behind a confirmation that needs a reason. Operators only:
 * viewers see why the buttons are not there; an agent that cannot take them gets one sentence instead.
 */
export function AdminActions(props: {
  agentClass: string;
  agentName: string;
  role: "viewer" | "operator";
  availability: ActionAvailability;
  /** The page has the agent's live panel: the answer re-renders it from the verified after-state. */
  livePanel?: boolean;
}) {
  if (props.availability.kind === "read_only")
    return (
      <p class="muted actions" data-testid="read-only">
        {props.availability.why}
      </p>
    );
  // The role each action needs is ADMIN_ACTIONS'; what this person may not take is said, not offered.
  const offered = AGENT_ACTION_NAMES.filter((a) => mayTake(props.role, a));
  const withheld = AGENT_ACTION_NAMES.filter((a) => !mayTake(props.role, a));
  const notice = withheld.length ? (
    <p class="muted actions" data-testid="actions-withheld" data-actions={withheld.join(" ")}>
      {withheldActionsSentence(
        withheld.map((a) => ADMIN_ACTIONS[a].label),
        props.role,
      )}
    </p>
  ) : null;
  if (!offered.length) return notice;
  const caps = props.availability.capabilities;
  return (
    <section class="actions" id="admin-actions">
      <h2>Actions</h2>
      {notice}
      {offered.map((a) => (
        <ActionForm
          agentClass={props.agentClass}
          agentName={props.agentName}
          path={`/actions/${ADMIN_ACTIONS[a].slug}`}
          label={ADMIN_ACTIONS[a].label}
          {...formOf(a, caps)}
          // An hours field is the action's own input (its schema names it), not a setting of its form.
          hours={inputFields(a).includes("hours")}
          livePanel={props.livePanel ?? false}
        />
      ))}
      <div id="action-result" class="result" aria-live="polite" />
    </section>
  );
}

/**
 * One action behind a disclosure: a required reason, then an explicit confirm button. The disclosure is a single
 * button (one tab stop per action) that shows and hides the form; console.js toggles it for every [data-disclosure]
 * (no inline handlers under our CSP), keeping aria-expanded in step.
 */
function ActionForm(props: {
  agentClass: string;
  agentName: string;
  path: string;
  label: string;
  help: string;
  placeholder: string;
  danger?: boolean;
  /** The action lasts a number of hours the operator chooses (a recovery pause). */
  hours?: boolean;
  livePanel: boolean;
}) {
  const formId = `action-form-${props.path.split("/").pop()}`;
  return (
    <div class="action">
      <button type="button" data-disclosure aria-expanded="false" aria-controls={formId}>{`${props.label}…`}</button>
      {/* A timeout longer than the admin client's (15 s): a request that never answers still shows a message (console.js). */}
      <form
        id={formId}
        hidden
        hx-post={props.path}
        hx-target="#action-result"
        hx-swap="innerHTML"
        hx-request='{"timeout": 30000}'
        data-action-label={props.label}
      >
        <input type="hidden" name="agentClass" value={props.agentClass} />
        <input type="hidden" name="agentName" value={props.agentName} />
        {props.livePanel ? <input type="hidden" name="panel" value={AGENT_LIVE_PANEL} /> : null}
        <label>
          Reason (goes to the audit log)
          <textarea name="reason" required minlength={1} maxlength={2000} placeholder={props.placeholder} />
        </label>
        {props.hours ? (
          <label>
            For how many hours (at most {PAUSE_MAX_HOURS})
            <input type="number" name="hours" min={1} max={PAUSE_MAX_HOURS} step="any" value={String(PAUSE_DEFAULT_HOURS)} required />
          </label>
        ) : null}
        <p class="muted">{props.help}</p>
        <button class={props.danger ? "danger" : ""} type="submit">{`Confirm ${props.label.toLowerCase()}`}</button>
      </form>
    </div>
  );
}

/** What the console read back after an action, for the result. */
export type VerifiedView = { result: VerifiedResult; after: VerifiedAfter };

const NOW_WORDS: Record<RunCheck["now"], string> = { running: "still running", pending: "still open", stopped: "stopped" };
const SOURCE_WORDS: Record<RunCheck["source"], string> = {
  "tasks.get": "tasks.get says",
  inspectFiber: "inspectFiber says",
  inspectSubmission: "its submission says",
  cf_agents_runs: "its run row says",
  in_memory: "its callback runs in memory; the SDK says",
  none: "no record of it remains",
};

/** One run as read back: what it is now, and which SDK API said so. */
function nowOf(c: RunCheck | undefined): string {
  if (!c) return "not read back";
  return c.source === "none" ? `${NOW_WORDS[c.now]} (${SOURCE_WORDS.none})` : `${NOW_WORDS[c.now]} (${SOURCE_WORDS[c.source]} ${c.sdkState})`;
}

/** Force idle's runs: what it did to each, and what is true of each now. */
function EndedRuns(props: { ended: EndedRun[]; checks: RunCheck[] | null }) {
  const byId = new Map((props.checks ?? []).map((c) => [c.id, c]));
  return (
    <ul data-testid="force-idle-runs">
      {props.ended.map((r) => {
        const c = byId.get(r.ref ?? r.runId);
        const now = props.checks ? (c?.now ?? "unknown") : r.stopped ? "stopped" : "running";
        return (
          <li data-run={r.runId} data-kind={r.kind} data-stopped={String(r.stopped)} data-now={now} data-why={r.why}>
            {r.kind} <span class="mono">{r.runId}</span>
            {r.name ? ` (${r.name})` : ""}: {r.stopped ? "stopped" : "NOT stopped"} — {endedRunWords(r)}
            {props.checks ? (
              <>
                {" "}
                · <strong>now: {nowOf(c)}</strong>
              </>
            ) : null}
          </li>
        );
      })}
    </ul>
  );
}

/** The after-state the console read back: status, what runs now, and the sentence when work still runs. */
function AfterState(props: { v: VerifiedView; now: number }) {
  const a = props.v.after;
  const notice = afterNoticeWords(a.notice, a);
  return (
    <div data-testid="after-state" data-result={props.v.result} data-verified={String(a.verified)}>
      {notice && a.notice ? (
        <p class={props.v.result === "ok" ? "muted" : "error-message"} data-testid="action-notice" data-code={a.notice.code}>
          {notice}
        </p>
      ) : null}
      {a.verified ? (
        <p class="muted">
          Read back from the agent after the action: <Status value={a.status} />
          {a.busy.length ? <> · running now: {a.busy.map((b) => busyWords(b, props.now)).join("; ")}</> : " · nothing runs"}
        </p>
      ) : null}
    </div>
  );
}

/**
 * The inline result of an action (an htmx fragment). Every value is text, escaped by the renderer. A verified
 * action (force idle, trigger alarm) shows what the agent, read back afterwards, says now, run by run.
 */
export function ActionResult(props: {
  ok: boolean;
  /** The action (ADMIN_ACTIONS' name) that ran, for checks: data-action. */
  action?: string;
  /** A refusal's code (the JSON body's error.code), for checks: data-code. */
  code?: string;
  title: string;
  detail: string;
  auditHref?: string;
  forceIdle?: ForceIdleOutput;
  verified?: VerifiedView;
  now?: number;
}) {
  const f = props.forceIdle;
  const v = props.verified;
  const fNotice = f ? forceIdleNoticeWords(f) : null;
  return (
    <div class={`result ${props.ok ? "ok" : "bad"}`} data-testid="action-result" data-ok={String(props.ok)} data-action={props.action} data-code={props.code}>
      <strong>{props.title}</strong> {props.detail} {props.auditHref ? <a href={props.auditHref}>See the audit log</a> : null}
      {/* The action's own sentence (e.g. the agent is being evicted), unless the read-back has a truer one. */}
      {fNotice && !v?.after.notice ? (
        <p
          class={f?.evicted ? "warn" : "error-message"}
          data-testid="force-idle-notice"
          data-cause={f?.notice && typeof f.notice === "object" ? f.notice.cause : undefined}
        >
          {fNotice}
        </p>
      ) : null}
      {v ? <AfterState v={v} now={props.now ?? v.after.readAt} /> : null}
      {f?.ended.length ? <EndedRuns ended={f.ended} checks={v?.after.verified ? v.after.checks : null} /> : null}
    </div>
  );
}
