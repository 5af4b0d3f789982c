import { Hono } from "hono";
import { z } from "zod";
import { ActionResult } from "../../console/components/actions";
import { createAdminClient } from "../../src/admin-rpc";
import { requireRole } from "../auth";
import { type ConsoleEnv, wantsJson } from "./context";

const actionForm = z.object({
  agentClass: z.string().trim().min(1, "which agent? agentClass is missing"),
  agentName: z.string().trim().min(1, "which agent? agentName is missing"),
  reason: z.string().optional(),
});

const LABEL = { "force-idle": "Force idle", "trigger-alarm": "Trigger alarm" } as const;

/**
 * Admin actions from the console (htmx forms) and the CLI (JSON). Operator
 * only and CSRF-checked (by the app); every attempt goes through the audited
 * admin client, including the refused ones.
 */
export const actions = new Hono<ConsoleEnv>();

for (const action of ["force-idle", "trigger-alarm"] as const) {
  actions.post(`/actions/${action}`, requireRole("operator"), async (c) => {
    const body = await c.req.parseBody();
    const form = actionForm.safeParse(body);
    if (!form.success) {
      const message = form.error.issues.map((i) => i.message).join("; ");
      return wantsJson(c) ? c.json({ ok: false, error: { code: "invalid_input", message } }, 400) : c.html(<ActionResult ok={false} title={`${LABEL[action]} refused:`} detail={message} />, 400);
    }
    const admin = createAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
    const target = { agentClass: form.data.agentClass, agentName: form.data.agentName };
    const input = { reason: form.data.reason ?? "" };
    const r = action === "force-idle" ? await admin.forceIdle(target, input) : await admin.triggerAlarm(target, input);
    const auditHref = `/audit?targetName=${encodeURIComponent(target.agentName)}`;
    if (wantsJson(c)) return c.json(r, r.ok ? 200 : r.error.code === "not_found" ? 404 : r.error.code === "not_permitted" ? 403 : r.error.code === "invalid_input" ? 400 : 409);
    if (!r.ok) return c.html(<ActionResult ok={false} title={`${LABEL[action]} failed:`} detail={r.error.message} auditHref={auditHref} />, 200);
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
