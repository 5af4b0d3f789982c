import { env } from "cloudflare:workers";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { captureFromTail, type TailItem } from "@agent-oncall/telemetry/tail";
import { getAgentByName } from "agents";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import type { HelperWork } from "../fixtures/sub-agents";
import { pollRows } from "../helpers";

/**
 * Two parents, each with a sub-agent named "helper" (test/fixtures/sub-agents.ts). What reaches the console is what
 * the SDK publishes on its diagnostics channels, as a Tail Worker receives it: the messages are caught here as they
 * are published and handed to the tail handler as a trace item.
 */
const heard: { channel: string; message: unknown }[] = [];
const listener = (message: unknown, channel: string | symbol) => heard.push({ channel: String(channel), message });
subscribe("agents:fiber", listener);
afterEach(() => void (heard.length = 0));
// The runtime is reused across files: the listener does not outlive this one.
afterAll(() => void unsubscribe("agents:fiber", listener));

const asItem = (): TailItem => {
  const t = Date.now();
  return {
    scriptName: null,
    durableObjectId: crypto.randomUUID().replace(/-/g, ""),
    eventTimestamp: t,
    truncated: false,
    diagnosticsChannelEvents: heard.map((h) => ({ timestamp: t, channel: h.channel, message: h.message })),
  };
};

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
    const rows = await pollRows<{ agent_name: string; fiber_id: string; outcome: string | null }>(
      "SELECT agent_name, fiber_id, outcome FROM runs WHERE agent_class = 'SubAgentHelper' AND fiber_id IN (?, ?) ORDER BY agent_name",
      [w1.fiberId, w2.fiberId],
      (rs) => rs.length === 2 && rs.every((r) => r.outcome),
    );
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
});
