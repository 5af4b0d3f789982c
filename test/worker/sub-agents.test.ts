import { env } from "cloudflare:workers";
import { AGENT_CHANNEL } from "@agent-oncall/admin-rpc/facts";
import { captureFromTail } from "@agent-oncall/telemetry/tail";
import { getAgentByName } from "agents";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { listenLikeATail } from "../diagnostics-tail";
import type { HelperWork } from "../fixtures/sub-agents";
import { pollRows, pollRunRows } from "../helpers";

/**
 * Two parents, each with a sub-agent named "helper" (test/fixtures/sub-agents.ts). What reaches the console is what
 * the SDK publishes on its diagnostics channels, and the ancestry the admin package publishes on its own, as a Tail
 * Worker receives them: the messages are caught here as they are published and handed to the tail handler as a trace item.
 */
const tail = listenLikeATail(["agents:fiber", AGENT_CHANNEL]);
afterEach(() => tail.clear());
afterAll(() => tail.stop());
const asItem = () => tail.item();

async function workUnder(parent: string): Promise<HelperWork> {
  const hub = await getAgentByName((env as Env & { SubAgentHub: DurableObjectNamespace<import("../fixtures/sub-agents").SubAgentHub> }).SubAgentHub, parent);
  return hub.workInHelper("helper");
}

describe("sub-agents", () => {
  it("are two console agents when two parents give their sub-agent the same name, each with the ancestry its SDK records", async () => {
    const [p1, p2] = [`hub-${crypto.randomUUID().slice(0, 8)}`, `hub-${crypto.randomUUID().slice(0, 8)}`];
    const w1 = await workUnder(p1);
    const w2 = await workUnder(p2);
    // The SDK's own records: one name under both parents, each with its own ancestry.
    expect([w1.name, w2.name]).toEqual(["helper", "helper"]);
    expect(w1.parentPath).toEqual([{ className: "SubAgentHub", name: p1 }]);
    expect(w2.parentPath).toEqual([{ className: "SubAgentHub", name: p2 }]);

    const captured = captureFromTail([asItem()]);
    const runs = captured.events.filter((e) => e.corr.fiberId === w1.fiberId || e.corr.fiberId === w2.fiberId);
    expect(runs.map((e) => [e.type, e.corr.fiberId, e.source])).toEqual([
      ["fiber.started", w1.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p1} › helper`, parentPath: w1.parentPath }],
      ["fiber.completed", w1.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p1} › helper`, parentPath: w1.parentPath }],
      ["fiber.started", w2.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p2} › helper`, parentPath: w2.parentPath }],
      ["fiber.completed", w2.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p2} › helper`, parentPath: w2.parentPath }],
    ]);

    // Through the console's tail handler and ingest: two agents, each with its own run.
    await handleTail([asItem()], env as Env);
    // Both completed healthily, so they left D1: each agent's run is read from R2 (runRowsOf).
    const one = (agentName: string, fiberId: string) =>
      pollRunRows<{ agent_class: string; agent_name: string; fiber_id: string; outcome: string | null }>(
        agentName,
        (r) => r.agent_class === "SubAgentHelper" && r.fiber_id === fiberId,
        (rs) => rs.length === 1 && rs.every((r) => r.outcome),
      );
    const rows = [...(await one(`SubAgentHub:${p1} › helper`, w1.fiberId)), ...(await one(`SubAgentHub:${p2} › helper`, w2.fiberId))]
      .map(({ agent_name, fiber_id, outcome }) => ({ agent_name, fiber_id, outcome }))
      .sort((a, b) => a.agent_name.localeCompare(b.agent_name));
    expect(rows).toEqual(
      [
        { agent_name: `SubAgentHub:${p1} › helper`, fiber_id: w1.fiberId, outcome: "completed" },
        { agent_name: `SubAgentHub:${p2} › helper`, fiber_id: w2.fiberId, outcome: "completed" },
      ].sort((a, b) => a.agent_name.localeCompare(b.agent_name)),
    );
    const agents = await pollRows<{ agent_name: string }>(
      "SELECT agent_name FROM agents WHERE agent_class = 'SubAgentHelper' AND agent_name IN (?, ?)",
      [`SubAgentHub:${p1} › helper`, `SubAgentHub:${p2} › helper`],
      (rs) => rs.length === 2,
    );
    expect(agents).toHaveLength(2);
  });

  it("are read and acted on through their parent, with the SDK's bridge; one deeper than that is refused with why", async () => {
    const parent = `hub-${crypto.randomUUID().slice(0, 8)}`;
    const work = await workUnder(parent);
    await handleTail([asItem()], env as Env);
    const target = { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${parent} › helper` };
    await pollRows("SELECT agent_name FROM agents WHERE agent_class = ? AND agent_name = ?", [target.agentClass, target.agentName], (rs) => rs.length === 1);

    // The live view reads the sub-agent's own records: the SDK there has no live run (its one fiber completed).
    const live = await consoleAdminClient(env, { email: "viewer@example.com", role: "viewer" }).live(target);
    expect(live.ok, JSON.stringify(live)).toBe(true);
    if (!live.ok) return;
    expect(live.value.runs.runs.map((r) => r.id)).not.toContain(work.fiberId);

    // Trigger alarm reaches the sub-agent through its parent and reads it back.
    const alarm = await consoleAdminClient(env, { email: "oncall@example.com", role: "operator" }).triggerAlarm(target, { reason: "recover the helper now" });
    expect(alarm.ok, JSON.stringify(alarm)).toBe(true);
    if (!alarm.ok) return;
    expect(alarm.value.outcome).toBe("ran");

    // A sub-agent of a sub-agent: the SDK's public bridge does not reach it, so the console says so and calls nothing.
    const nested = await consoleAdminClient(env, { email: "viewer@example.com", role: "viewer" }).status({
      agentClass: "SubAgentHelper",
      agentName: `SubAgentHub:${parent} › SubAgentHelper:helper › leaf`,
    });
    expect(nested).toMatchObject({ ok: false, error: { code: "unsupported", facts: { kind: "nested_sub_agent", depth: 2 } } });
  });
});
