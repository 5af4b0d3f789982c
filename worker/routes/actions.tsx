import { type Context, Hono } from "hono";
import { z } from "zod";
import { ActionResult } from "../../console/components/actions";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, type AdminActionName } from "../../src/admin-rpc/actions";
import type { AdminResult, ForceIdleOutput, TriggerAlarmOutput } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import { ADMIN_ERROR_STATUS as STATUS } from "./admin-error-status";
import { type ConsoleEnv, wantsJson } from "./context";

const actionForm = z.object({
  agentClass: z.string({ error: "which agent? agentClass is missing" }).trim().min(1, "which agent? agentClass is missing"),
  agentName: z.string({ error: "which agent? agentName is missing" }).trim().min(1, "which agent? agentName is missing"),
  reason: z.string().optional(),
});

/** The form fields, or null for a body that cannot be read as a form (e.g. multipart without its boundary): the caller's error, not ours. */
async function readForm(c: Context<ConsoleEnv>): Promise<Record<string, unknown> | null> {
  try {
    return await c.req.parseBody();
  } catch {
    return null;
  }
}

const UNREADABLE_FORM = "the request body could not be read as a form: send application/x-www-form-urlencoded, or multipart/form-data with its boundary";

/** What the operator reads after a successful action. */
function doneDetail(action: AdminActionName, value: unknown): string {
  if (action === "force_idle") {
    const v = value as ForceIdleOutput;
    if (v.noop) return "Nothing to do: the agent was already idle. Recorded as a no-op.";
    const notStopped = v.ended.filter((r) => !r.stopped).length;
    const stopped = v.ended.length - notStopped;
    const runs = v.ended.length ? ` Ended ${v.ended.length} run(s): ${stopped} stopped${notStopped ? `, ${notStopped} NOT stopped` : ""}.` : "";
    const incidents = v.incidents.length ? ` Cleared ${v.incidents.length} recovery incident(s).` : "";
    return `The agent is now ${v.after.status}.${runs}${incidents}`;
  }
  const v = value as TriggerAlarmOutput;
  return `Alarm ran; recovery settled ${v.recoveredRuns.length} fiber(s). The agent is ${v.after.status}.`;
}

/**
 * Admin actions from the console (htmx forms) and the CLI (JSON), one route per action of ADMIN_ACTIONS.
 * CSRF is checked by the app; the role is checked by the audited admin client, so a refused attempt is
 * audited like any other.
 */
export const actions = new Hono<ConsoleEnv>();

for (const action of ADMIN_ACTION_NAMES) {
  const { slug, label } = ADMIN_ACTIONS[action];
  actions.post(`/actions/${slug}`, async (c) => {
    const body = await readForm(c);
    const form = actionForm.safeParse(body ?? {});
    if (!body || !form.success) {
      const message = body ? form.error!.issues.map((i) => i.message).join("; ") : UNREADABLE_FORM;
      return wantsJson(c) ? c.json({ ok: false, error: { code: "invalid_input", message } }, 400) : c.html(<ActionResult ok={false} title={`${label} refused:`} detail={message} />, 400);
    }
    const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
    const target = { agentClass: form.data.agentClass, agentName: form.data.agentName };
    const input = { reason: form.data.reason ?? "" };
    const r: AdminResult<unknown> = action === "force_idle" ? await admin.forceIdle(target, input) : await admin.triggerAlarm(target, input);
    const auditHref = `/audit?targetName=${encodeURIComponent(target.agentName)}`;
    const status = r.ok ? 200 : STATUS[r.error.code];
    if (wantsJson(c)) return c.json(r, status);
    if (!r.ok) {
      const title = r.error.code === "unavailable" || r.error.code === "timeout" ? `${label} failed:` : `${label} refused:`;
      return c.html(<ActionResult ok={false} title={title} detail={r.error.message} auditHref={auditHref} />, status);
    }
    const forceIdle = action === "force_idle" ? (r.value as ForceIdleOutput) : undefined;
    // A force idle that left work running is not a plain success: the result says so, in the warning colour.
    const clean = !forceIdle || forceIdle.ended.every((e) => e.stopped);
    return c.html(<ActionResult ok={clean} title={`${label} done.`} detail={doneDetail(action, r.value)} auditHref={auditHref} {...(forceIdle ? { forceIdle } : {})} />);
  });
}
