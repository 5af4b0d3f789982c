import { type Context, Hono } from "hono";
import { z } from "zod";
import { ActionResult } from "../../console/components/actions";
import { ADMIN_ACTION_NAMES, ADMIN_ACTIONS, type AdminActionName, inputFields } from "../../src/admin-rpc/actions";
import type { AdminResult, ForceIdleOutput, ResolveOpOutput, TriggerAlarmOutput } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import { ADMIN_ERROR_STATUS as STATUS } from "./admin-error-status";
import { type ConsoleEnv, wantsJson } from "./context";

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

/** What the operator reads after a successful action. */
function doneDetail(action: AdminActionName, value: unknown): string {
  if (action === "resolve_op") {
    const v = value as ResolveOpOutput;
    const ref = v.resultRef ? ` Result: ${v.resultRef}.` : "";
    return `Op ${v.opId} (${v.after.kind}) is recorded as resolved: ${RESOLVED_AS[v.resolution]}. The agent's ledger says ${v.before.status} → ${v.after.status}.${ref}`;
  }
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
    const r: AdminResult<unknown> = await admin.action(action, target, actionInputOf(action, body));
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
