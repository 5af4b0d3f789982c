import { Hono } from "hono";
import { consoleAdminClient } from "../admin-client";
import { csrfToken } from "../auth";
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
  const [status, runs] = await Promise.all([admin.status(target), admin.listRuns(target)]);
  if (!status.ok) return c.json(status, status.error.code === "not_found" ? 404 : status.error.code === "invalid_input" ? 400 : 502);
  return c.json({ ok: true, value: { status: status.value, runs: runs.ok ? runs.value : null } });
});
