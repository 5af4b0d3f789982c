import { type Context, Hono } from "hono";
import { z } from "zod";
import { ActionResult } from "../../console/components/actions";
import type { AdminErrorCode } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import { type ConsoleEnv, wantsJson } from "./context";

const actionForm = z.object({
  agentClass: z.string({ error: "which agent? agentClass is missing" }).trim().min(1, "which agent? agentClass is missing"),
  agentName: z.string({ error: "which agent? agentName is missing" }).trim().min(1, "which agent? agentName is missing"),
  reason: z.string().optional(),
});

const LABEL = { "force-idle": "Force idle", "trigger-alarm": "Trigger alarm" } as const;

/** HTTP status for a typed admin error. */
const STATUS: Record<AdminErrorCode, 400 | 403 | 404 | 409 | 502 | 504> = {
  invalid_input: 400,
  not_permitted: 403,
  not_found: 404,
  agent_terminated: 409,
  unavailable: 502,
  timeout: 504,
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

/**
 * Admin actions from the console (htmx forms) and the CLI (JSON). CSRF is
 * checked by the app; the role is checked by the audited admin client, so a
 * refused attempt is audited like any other.
 */
export const actions = new Hono<ConsoleEnv>();

for (const action of ["force-idle", "trigger-alarm"] as const) {
  actions.post(`/actions/${action}`, async (c) => {
    const body = await readForm(c);
    const form = actionForm.safeParse(body ?? {});
    if (!body || !form.success) {
      const message = body ? form.error!.issues.map((i) => i.message).join("; ") : UNREADABLE_FORM;
      return wantsJson(c) ? c.json({ ok: false, error: { code: "invalid_input", message } }, 400) : c.html(<ActionResult ok={false} title={`${LABEL[action]} refused:`} detail={message} />, 400);
    }
    const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
    const target = { agentClass: form.data.agentClass, agentName: form.data.agentName };
    const input = { reason: form.data.reason ?? "" };
    const r = action === "force-idle" ? await admin.forceIdle(target, input) : await admin.triggerAlarm(target, input);
    const auditHref = `/audit?targetName=${encodeURIComponent(target.agentName)}`;
    const status = r.ok ? 200 : STATUS[r.error.code];
    if (wantsJson(c)) return c.json(r, status);
    if (!r.ok) return c.html(<ActionResult ok={false} title={`${LABEL[action]} refused:`} detail={r.error.message} auditHref={auditHref} />, status);
    const v = r.value as { noop?: boolean; after: { status: string }; recoveredRuns?: string[] };
    const detail =
      action === "force-idle"
        ? v.noop
          ? "Nothing to do: the agent was already idle. Recorded as a no-op."
          : `The agent is now ${v.after.status}.`
        : `Alarm ran; recovery settled ${v.recoveredRuns?.length ?? 0} fiber(s). The agent is ${v.after.status}.`;
    return c.html(<ActionResult ok title={`${LABEL[action]} done.`} detail={detail} auditHref={auditHref} />);
  });
}
