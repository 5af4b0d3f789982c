import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { exportHref } from "../../../console/links";
import type { GapAgent } from "../../fixtures/gap-agent";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call, getText, registerAgent, uid } from "./harness";

// The agent page says whether an agent's events reach the console, from the agent's own telemetry counts: a
// Worker without its Queue binding, a Queue refusing sends, and a healthy pipe, each with real agents of both
// mixins. What the page says must equal what the agent's telemetry.stats() says at that moment.

const enc = encodeURIComponent;
const HX = { "HX-Request": "true" };

async function telemetryCell(agentClass: string, name: string) {
  const res = await getText(`/agents/${agentClass}/${enc(name)}/live`, "viewer", HX);
  expect(res.status).toBe(200);
  const cell = mustTestId(res.text, "live-telemetry");
  return { tone: cell.attrs["data-tone"], text: cell.text };
}

/** Waits until the console has the agent's row: its events came through the Queue and ingest. */
const known = (agentClass: string, name: string) =>
  pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, name], (r) => r.length === 1);

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the agent page's telemetry line", () => {
  it("says an agent whose Worker lost its Queue binding ships nothing, with the events waiting in its storage", async () => {
    const name = `queueless-${uid()}`;
    const agent = await getAgentByName(env.UnboundAdminAgent, name);
    // The console knows the agent from before its binding went (a deploy dropped it).
    await registerAgent("UnboundAdminAgent", name);
    await agent.work();
    const stats = await agent.telemetryStats();
    expect(stats).toMatchObject({ queueBound: false, sent: 0, pending: 3 });

    const cell = await telemetryCell("UnboundAdminAgent", name);
    expect(cell.tone).toBe("bad");
    expect(cell.text).toContain("no telemetry Queue binding");
    expect(cell.text).toContain(`${stats.pending} events wait in the agent's storage`);

    // Its page asks it, and reconciliation records the answer: the overview's list of agents whose events cannot reach
    // the console is this agent (nothing arrived from it since), with what it said.
    expect((await getText(`/agents/UnboundAdminAgent/${enc(name)}`, "viewer")).status).toBe(200);
    await pollRows(
      "SELECT 1 FROM reconciliations WHERE agent_class = ? AND agent_name = ? AND pipeline = 'no_queue'",
      ["UnboundAdminAgent", name],
      (r) => r.length === 1,
    );
    const list = (await (
      await call("/agents?blocked=true&agentClass=UnboundAdminAgent", { as: "viewer", headers: { Accept: "application/json" } })
    ).json()) as {
      items: { agentName: string; pipeline: string }[];
    };
    expect(list.items.find((a) => a.agentName === name)).toMatchObject({ pipeline: "no_queue" });
    const page = await getText("/agents?blocked=true&agentClass=UnboundAdminAgent", "viewer");
    expect(page.text).toContain('data-testid="blocked-explained"');
    const row = new RegExp(`data-agent-name="${name}"[^>]*data-pipeline="no_queue"`).exec(page.text);
    expect(row, "the page lists the agent with what it said").not.toBeNull();
    expect(mustTestId(page.text, "agents").text).toContain("no telemetry Queue binding");
    // Its download has the same columns: what each agent said and when it was asked, in place of the event counts.
    const csv = await (
      await call(`${exportHref("agents", "csv", { blocked: "true", agentClass: "UnboundAdminAgent" })}&cols=pipeline`, { as: "viewer" })
    ).text();
    const [header, ...rows] = csv.trim().split("\r\n");
    expect(header).toBe("agentName,agentClass,pipeline");
    expect(rows).toContain(`${name},UnboundAdminAgent,no_queue`);
    // The plain list has no such column to pick.
    const refused = await call(`${exportHref("agents", "csv", { agentClass: "UnboundAdminAgent" })}&cols=pipeline`, { as: "viewer" });
    expect(refused.status).toBe(400);
  });

  it("says sends are failing while the Queue refuses them, with the agent's count of them and its last send error, then that it ships again", async () => {
    const name = `failing-${uid()}`;
    const agent = await getAgentByName(env.GapAgent, name);
    await agent.work(1);
    await known("GapAgent", name);
    await agent.holdQueue(true);
    const held = await runInDurableObject(agent, async (a: GapAgent) => {
      a.recordMany(3, name);
      await a.telemetry.flush();
      return a.telemetry.stats();
    });
    expect(held.sendErrors).toBeGreaterThanOrEqual(1);
    expect(held.pending).toBe(3);

    const failing = await telemetryCell("GapAgent", name);
    expect(failing.tone).toBe("bad");
    expect(failing.text).toMatch(/^sends failing for \d+(ms|s)/);
    expect(failing.text).toContain(`${held.sendErrors} failed send${held.sendErrors === 1 ? "" : "s"}`);
    expect(failing.text).toContain("3 events wait in the agent's storage");
    expect(failing.text).toContain("Last send error: the Queue is unavailable (held by the test)");

    await agent.holdQueue(false);
    const settled = await agent.settleTelemetry();
    expect(settled.pending).toBe(0);
    const recovered = await telemetryCell("GapAgent", name);
    expect(recovered.tone).toBe("ok");
    expect(recovered.text).toContain(`${settled.sent} events sent`);
    expect(recovered.text).toContain(`after ${settled.sendErrors} failed send`);
    expect(recovered.text).toContain("that a retry got through");
  });

  it("says a healthy agent ships, with the events it sent", async () => {
    const name = `healthy-${uid()}`;
    const agent = await getAgentByName(env.GapAgent, name);
    await agent.work(2);
    await known("GapAgent", name);
    const stats = await agent.settleTelemetry();
    expect(stats).toMatchObject({ queueBound: true, pending: 0, sendErrors: 0, dropped: 0 });
    const cell = await telemetryCell("GapAgent", name);
    expect(cell.tone).toBe("ok");
    expect(cell.text).toContain(`shipping: ${stats.sent} events sent since this instance started`);
  });

  it("/agents refuses gaps=true and blocked=true together with a sentence: they are two lists", async () => {
    const res = await getText("/agents?gaps=true&blocked=true", "viewer");
    expect(res.status).toBe(400);
    expect(mustTestId(res.text, "error-message").text).toContain("two different lists");
  });

  it("says it does not know for an agent with the admin mixin alone", async () => {
    const name = `plain-${uid()}`;
    await registerAgent("PlainAdminAgent", name);
    const cell = await telemetryCell("PlainAdminAgent", name);
    expect(cell.tone).toBe("unknown");
    expect(cell.text).toContain("not reported");
  });
});
