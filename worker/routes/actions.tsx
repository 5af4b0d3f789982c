import { type Context, Hono } from "hono";
import { z } from "zod";
import { adminErrorWords, afterNoticeWords, endedRunWords, forceIdleIncidentsWords, forceIdleNoticeWords } from "../../console/admin-words";
import { ACTED_EVENT, ActionResult, AGENT_LIVE_PANEL } from "../../console/components/actions";
import { listHref } from "../../console/links";
import { AgentLive } from "../../console/pages/agent";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, type AdminActionName, inputFields } from "../../src/admin-rpc/actions";
import type {
  AdminResult,
  PauseRecoveryOutput,
  ResolveOpOutput,
  ResumeRecoveryOutput,
  VerifiedForceIdleOutput,
  VerifiedTriggerAlarmOutput,
} from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import { respondRefusal } from "../http/refusal";
import { ADMIN_ERROR_STATUS as STATUS } from "./admin-error-status";
import { type ConsoleEnv, isHtmx, pageContext, wantsJson } from "./context";

/** The target of every action; the action's own fields are read by its input schema (ADMIN_ACTIONS[…].input). */
const actionForm = z.object({
  agentClass: z.string({ error: "which agent? agentClass is missing" }).trim().min(1, "which agent? agentClass is missing"),
  agentName: z.string({ error: "which agent? agentName is missing" }).trim().min(1, "which agent? agentName is missing"),
});

/**
 * The action's input from a form: exactly the fields its schema names (never the target, CSRF or anything
 * else sent), as text. An empty optional field is "not given"; a missing reason stays "" so the client's
 * validation says a reason is required.
 */
function actionInputOf(action: AdminActionName, body: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of inputFields(action)) {
    const v = body[field];
    if (field === "reason") input.reason = typeof v === "string" ? v : "";
    else if (typeof v === "string" && v.trim() !== "") input[field] = v;
    else if (v !== undefined && typeof v !== "string") input[field] = v; // a file or a repeated field: the schema refuses it in words
  }
  return input;
}

const RESOLVED_AS: Record<ResolveOpOutput["resolution"], string> = {
  verified_ran: "it ran",
  verified_not_ran: "it did not run",
  rerun: "it was re-run with its idempotency key",
};

/** The form fields, or null for a body that cannot be read as a form (e.g. multipart without its boundary): the caller's error, not ours. */
async function readForm(c: Context<ConsoleEnv>): Promise<Record<string, unknown> | null> {
  try {
    return await c.req.parseBody();
  } catch {
    return null;
  }
}

const UNREADABLE_FORM = "the request body could not be read as a form: send application/x-www-form-urlencoded, or multipart/form-data with its boundary";

/** What the agent is, as the console read it back after the action (the result's after-state says so), or could not. */
const readBack = (after: VerifiedForceIdleOutput["after"]) =>
  after.verified ? `The agent is now ${after.status}.` : `The agent reported itself ${after.status}, but the console could not read it back.`;

/** What the operator reads after an action that answered: from what was read back, not what was attempted. */
type Done = {
  title: string;
  detail: string;
  /** Only what the read-back confirmed is a plain success: partial is said in the warning colour. */
  clean: boolean;
  /** The verified answer of an action that changes what runs (it re-renders the agent's live panel). */
  verified?: VerifiedForceIdleOutput | VerifiedTriggerAlarmOutput;
  forceIdle?: VerifiedForceIdleOutput;
};

/** Each action's answer, in words (exhaustive: a new action says what its answer means, or the typecheck fails). */
export const DONE: Record<AdminActionName, (label: string, value: unknown) => Done> = {
  resolve_op: (label, value) => {
    const v = value as ResolveOpOutput;
    const ref = v.resultRef ? ` Result: ${v.resultRef}.` : "";
    return {
      clean: true,
      title: `${label} done.`,
      detail: `Op ${v.opId} (${v.after.kind}) is recorded as resolved: ${RESOLVED_AS[v.resolution]}. The agent's ledger says ${v.before.status} → ${v.after.status}.${ref}`,
    };
  },
  force_idle: (label, value) => {
    const v = value as VerifiedForceIdleOutput;
    const said = { clean: v.result !== "partial", verified: v, forceIdle: v };
    if (v.noop && v.result === "noop") return { ...said, title: `${label} done.`, detail: "Nothing to do: the agent was already idle. Recorded as a no-op." };
    if (v.noop) return { ...said, title: `${label}: nothing it can stop, but work still runs.`, detail: readBack(v.after) };
    const stillRunning = v.after.verified ? v.after.checks.filter((c) => c.now !== "stopped").length : v.ended.filter((r) => !r.stopped).length;
    const runs = v.ended.length
      ? ` Ended ${v.ended.length} run(s): ${v.ended.length - stillRunning} stopped${stillRunning ? `, ${stillRunning} NOT stopped` : ""}.`
      : "";
    const incidentWords = forceIdleIncidentsWords(v, v.before.capabilities?.contract);
    const incidents = incidentWords ? ` ${incidentWords}` : "";
    return { ...said, title: v.result === "ok" ? `${label} done.` : `${label} done, but work still runs.`, detail: `${readBack(v.after)}${runs}${incidents}` };
  },
  pause_recovery: (label, value) => {
    const v = value as PauseRecoveryOutput;
    const until = v.after.pause ? new Date(v.after.pause.until).toISOString() : "(not read back)";
    const waiting = v.after.pendingRecovery ? ` ${v.after.pendingRecovery} recovery(ies) wait and stay recoverable.` : "";
    return { clean: true, title: `${label} done.`, detail: `The agent holds its fiber recovery back until ${until}.${waiting}` };
  },
  resume_recovery: (label, value) => {
    const v = value as ResumeRecoveryOutput;
    if (v.noop) return { clean: true, title: `${label} done.`, detail: "Nothing to do: the agent held no pause. Recorded as a no-op." };
    const left = v.after.pendingRecovery;
    const alarm = v.alarm === "still_running" ? " Its alarm is still recovering in the background." : "";
    return {
      clean: left === 0,
      title: left === 0 ? `${label} done.` : `${label} done, but recovery still waits.`,
      detail: `Recovered ${v.recovered.length} fiber(s); ${left} still wait.${alarm}`,
    };
  },
  trigger_alarm: (label, value) => {
    const v = value as VerifiedTriggerAlarmOutput;
    const said = { clean: v.result !== "partial", verified: v };
    if (v.outcome === "busy") return { ...said, title: `${label}: not run, the agent is busy.`, detail: `Nothing was done. ${readBack(v.after)}` };
    const settled = `recovery settled ${v.recoveredRuns.length} fiber(s) so far`;
    if (v.outcome === "still_running")
      return { ...said, title: `${label}: started, not finished.`, detail: `The alarm goes on in the background; ${settled}. ${readBack(v.after)}` };
    return { ...said, title: `${label} done.`, detail: `Alarm ran; recovery settled ${v.recoveredRuns.length} fiber(s). ${readBack(v.after)}` };
  },
};

/**
 * The words of an action's answer for a JSON caller (the CLI prints them): force idle's per-run words by run id,
 * its own notice, and the read-back's notice. Only what the answer has facts for is present.
 */
export function describeAnswer(value: unknown): { runs?: Record<string, string>; notice?: string | null; afterNotice?: string | null } {
  const v = value as Partial<VerifiedForceIdleOutput>;
  return {
    ...(Array.isArray(v.ended) ? { runs: Object.fromEntries(v.ended.map((r) => [r.runId, endedRunWords(r)])) } : {}),
    ...(v.ended && "notice" in v ? { notice: forceIdleNoticeWords(v as VerifiedForceIdleOutput) } : {}),
    ...(v.after && "verified" in v.after ? { afterNotice: afterNoticeWords(v.after.notice, v.after) } : {}),
  };
}

/**
 * Admin actions from the console (htmx forms) and the CLI (JSON), one route per action of ADMIN_ACTIONS.
 * CSRF is checked by the app; the role is checked by the audited admin client, so a refused attempt is
 * audited like any other. One shape each way: JSON (Accept: application/json) is the client's AdminResult,
 * verified; anything else gets the HTML fragment. An htmx answer also re-renders the agent page's live panel
 * from the verified after-state (when the form says the page has it) and triggers ACTED_EVENT, on which the
 * parts of the page fed by the console's records refresh.
 */
export const actions = new Hono<ConsoleEnv>();

for (const action of ADMIN_ACTION_NAMES) {
  const { slug, label } = ADMIN_ACTIONS[action];
  actions.post(`/actions/${slug}`, async (c) => {
    const body = await readForm(c);
    const form = actionForm.safeParse(body ?? {});
    if (!body || !form.success) {
      const message = body ? form.error!.issues.map((i) => i.message).join("; ") : UNREADABLE_FORM;
      const result = () => c.html(<ActionResult ok={false} action={action} code="invalid_input" title={`${label} refused:`} detail={message} />, 400);
      return respondRefusal(c, { status: 400, code: "invalid_input", message }, { page: result, fragment: result });
    }
    const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
    const target = { agentClass: form.data.agentClass, agentName: form.data.agentName };
    const r: AdminResult<unknown> = await admin.action(action, target, actionInputOf(action, body));
    const auditHref = listHref("audit", { targetName: target.agentName });
    if (!r.ok) {
      const status = STATUS[r.error.code];
      const title = r.error.code === "unavailable" || r.error.code === "timeout" ? `${label} failed:` : `${label} refused:`;
      const message = adminErrorWords(r.error);
      const result = () => c.html(<ActionResult ok={false} action={action} code={r.error.code} title={title} detail={message} auditHref={auditHref} />, status);
      return respondRefusal(c, { status, code: r.error.code, message }, { page: result, fragment: result });
    }
    // JSON callers (the CLI) get the facts and, in `describe`, the same words the fragment shows.
    if (wantsJson(c)) return c.json({ ...r, describe: describeAnswer(r.value) });
    const { title, detail, clean, verified, forceIdle } = DONE[action](label, r.value);
    const ctx = pageContext(c);
    const panel = isHtmx(c) && body.panel === AGENT_LIVE_PANEL && verified?.live;
    if (isHtmx(c)) c.header("HX-Trigger", JSON.stringify({ [ACTED_EVENT]: { agentClass: target.agentClass, agentName: target.agentName, action } }));
    return c.html(
      <>
        <ActionResult
          ok={clean}
          action={action}
          title={title}
          detail={detail}
          auditHref={auditHref}
          now={ctx.now}
          {...(forceIdle ? { forceIdle } : {})}
          {...(verified ? { verified } : {})}
        />
        {panel ? (
          <div id={AGENT_LIVE_PANEL} hx-swap-oob="innerHTML">
            <AgentLive ctx={ctx} agent={target} live={verified.live!} />
          </div>
        ) : null}
      </>,
    );
  });
}
