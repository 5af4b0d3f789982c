import { Hono } from "hono";
import { AgentLive, AgentPage } from "../../console/pages/agent";
import { RunPage } from "../../console/pages/run";
import { consoleAdminClient } from "../admin-client";
import { findAgent } from "../../src/store/read-models/agents";
import { getFiber, listFibers } from "../../src/store/read-models/fibers";
import { maskSecrets } from "../../src/telemetry";
import { type ConsoleContext, type ConsoleEnv, pageContext } from "./context";
import { page, problem } from "./render";

/** An agent's page, its live fragment, and the snapshot viewer of one run. */
export const agents = new Hono<ConsoleEnv>();

function target(c: ConsoleContext) {
  return { agentClass: c.req.param("agentClass") ?? "", agentName: c.req.param("agentName") ?? "" };
}

async function live(c: ConsoleContext) {
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const t = target(c);
  const [status, runs] = await Promise.all([admin.status(t), admin.listRuns(t)]);
  if (!status.ok) return { error: status.error.message };
  if (!runs.ok) return { error: runs.error.message };
  return { status: status.value, runs: runs.value };
}

agents.get("/agents/:agentClass/:agentName", async (c) => {
  const t = target(c);
  if (!(await findAgent(c.env.DB, t.agentClass, t.agentName))) return problem(c, 404, `No agent ${t.agentClass} "${t.agentName}" has reported to this console.`);
  const [state, history] = await Promise.all([live(c), listFibers(c.env.DB, { agentClass: t.agentClass, agentName: t.agentName }, { limit: 20 })]);
  return page(c, <AgentPage ctx={pageContext(c)} {...t} live={state} history={history.items} />);
});

agents.get("/agents/:agentClass/:agentName/live", async (c) => {
  const t = target(c);
  const base = `/agents/${encodeURIComponent(t.agentClass)}/${encodeURIComponent(t.agentName)}`;
  return c.html(<AgentLive ctx={pageContext(c)} base={base} live={await live(c)} />);
});

agents.get("/agents/:agentClass/:agentName/runs/:runId", async (c) => {
  const t = target(c);
  const runId = c.req.param("runId");
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  // The client masks the live snapshot (no unmasked variant exists: secrets in it are shown to no one).
  const run = await admin.getRun(t, runId);
  if (run.ok) return page(c, <RunPage ctx={pageContext(c)} {...t} live={run.value} lastKnown={null} />);
  if (run.error.code !== "not_found") return problem(c, run.error.code === "invalid_input" ? 400 : 404, run.error.message);
  // The row is gone (the fiber finished or was recovered): show its last-known snapshot from the projection.
  const fiber = await getFiber(c.env.DB, runId, t);
  if (!fiber) return problem(c, 404, `No run or fiber with id "${runId}".`);
  // Masked at the agent already; masked again for previews stored by agents on older package versions.
  const lastKnown = { ...fiber, snapshotPreview: fiber.snapshotPreview === null ? null : maskSecrets(fiber.snapshotPreview) };
  return page(c, <RunPage ctx={pageContext(c)} {...t} live={null} lastKnown={lastKnown} />);
});
