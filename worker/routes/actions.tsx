import { type Context, Hono } from "hono";
import { z } from "zod";
import { doneOf } from "../../console/action-words";
import { adminErrorWords, afterNoticeWords, endedRunWords, forceIdleNoticeWords } from "../../console/admin-words";
import { ACTED_EVENT, ActionResult, AGENT_LIVE_PANEL } from "../../console/components/actions";
import { listHref } from "../../console/links";
import { AgentLive } from "../../console/pages/agent";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, type AdminActionName, inputFields } from "../../src/admin-rpc/actions";
import type { AdminResult, VerifiedForceIdleOutput } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import { respondRefusal } from "../http/refusal";
import { reconcileAfterAction } from "../jobs";
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

/** The form fields, or null for a body that cannot be read as a form (e.g. multipart without its boundary): the caller's error, not ours. */
async function readForm(c: Context<ConsoleEnv>): Promise<Record<string, unknown> | null> {
  try {
    return await c.req.parseBody();
  } catch {
    return null;
  }
}

const UNREADABLE_FORM = "the request body could not be read as a form: send application/x-www-form-urlencoded, or multipart/form-data with its boundary";

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
    // The console's rows follow the agent's record now, not at the next cron (after-action.ts); the answer does not wait.
    c.executionCtx.waitUntil(reconcileAfterAction(c.env, action, target, r.value));
    const { title, detail, clean, verified, forceIdle } = doneOf(action, label, r.value);
    // JSON callers (the CLI) get the facts and, in `describe`, the same words the fragment shows: its title and
    // detail for every action (so the CLI prints any action's answer without knowing it), `clean` false when partial.
    if (wantsJson(c)) return c.json({ ...r, describe: { title, detail, clean, ...describeAnswer(r.value) } });
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
