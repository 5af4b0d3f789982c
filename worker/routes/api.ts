import { Hono } from "hono";
import { adminErrorWords } from "../../console/admin-words";
import { consoleAdminClient } from "../admin-client";
import { csrfToken, requireRole } from "../auth";
import { consoleConfig } from "../config";
import { refusal } from "../http/refusal";
import {
  alertAlarmLoopsInBackground,
  alertBudgetInBackground,
  alertDeployStormsInBackground,
  alertStuckInBackground,
  alertTelemetryInBackground,
  reconcileStale,
} from "../jobs";
import { ADMIN_ERROR_STATUS } from "./admin-error-status";
import type { ConsoleEnv } from "./context";

/**
 * JSON for the CLI and scripts: the same auth, the same admin client and the
 * same audit as the console. Actions go through /actions/* with Accept: application/json.
 */
export const api = new Hono<ConsoleEnv>();

/** The caller's CSRF token, for clients that are not a browser page. */
api.get("/api/csrf", (c) => c.json({ token: csrfToken(c), user: c.var.user }));

/** Live status and runs of one agent, through admin RPC. */
api.get("/api/agents/:agentClass/:agentName", async (c) => {
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const target = { agentClass: c.req.param("agentClass"), agentName: c.req.param("agentName") };
  // One visit for both; a sick agent is a typed error with a 4xx (never a 5xx: the console did its part).
  const live = await admin.live(target);
  return live.ok ? c.json(live) : c.json(refusal(live.error.code, adminErrorWords(live.error)), ADMIN_ERROR_STATUS[live.error.code]);
});

/**
 * One reconciliation pass now, as the cron runs it (bounded by RECONCILE_BATCH): for the CLI, and for local
 * dev, where wrangler runs no crons (`npm start` calls this every minute). Operators only; it only reads the
 * agents and records what they said.
 */
api.post("/api/reconcile", requireRole("operator"), async (c) => {
  const passes = await reconcileStale(c.env, consoleConfig(c.env).reconcile);
  // As the cron does after its pass: alert on what is stuck now (in the background; it logs its own failures).
  c.executionCtx.waitUntil(alertStuckInBackground(c.env));
  c.executionCtx.waitUntil(alertDeployStormsInBackground(c.env));
  c.executionCtx.waitUntil(alertBudgetInBackground(c.env));
  c.executionCtx.waitUntil(alertAlarmLoopsInBackground(c.env));
  c.executionCtx.waitUntil(alertTelemetryInBackground(c.env, passes));
  return c.json({
    ok: true,
    value: {
      asked: passes.length,
      findings: passes.flatMap((p) => p.findings.map((f) => ({ agent: `${p.target.agentClass}/${p.target.agentName}`, type: f.type, finding: f.finding }))),
      unanswered: passes.filter((p) => p.error).map((p) => ({ agent: `${p.target.agentClass}/${p.target.agentName}`, error: p.error })),
    },
  });
});
