import { env } from "cloudflare:workers";
import { channel } from "node:diagnostics_channel";
import { AGENT_CHANNEL } from "@agent-oncall/admin-rpc/facts";
import { getAgentByName } from "agents";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { listenLikeATail } from "../diagnostics-tail";
import { pollRows } from "../helpers";

/**
 * An agent with the admin package alone (test/fixtures/plain-admin-agent.ts: no telemetry package, no outbox). What
 * the SDK does not publish it publishes on its own diagnostics channel; here those messages are caught as they are
 * published and handed to the console's tail handler as the trace item a Tail Worker would receive.
 */
const tail = listenLikeATail([AGENT_CHANNEL, "agents:fiber"]);
afterEach(() => tail.clear());
afterAll(() => tail.stop());

const operator = { email: "oncall@example.com", role: "operator" as const };
const plain = (name: string) =>
  getAgentByName((env as Env & { PlainAdminAgent: DurableObjectNamespace<import("../fixtures/plain-admin-agent").PlainAdminAgent> }).PlainAdminAgent, name);

describe("the admin package's own channel, through the tail", () => {
  it("brings what only the agent knows (model usage, force idle's report) to the console as events", async () => {
    const name = `chan-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await plain(name);
    await agent.reportUsage("req-1", 1200, 80);
    await agent.startHangingFiber({ step: 1 });
    const first = await handleTail([tail.item()], env as Env);
    tail.clear();
    expect(first).toMatchObject({ losses: 0, sent: 2 });
    // Once its events are in, the console knows the agent and may act on it: force idle reports through the channel.
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'PlainAdminAgent' AND agent_name = ?", [name], (rs) => rs.length === 1);
    const idle = await consoleAdminClient(env, operator).forceIdle({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "stuck import" });
    expect(idle.ok, JSON.stringify(idle)).toBe(true);
    const second = await handleTail([tail.item()], env as Env);
    expect(second.losses).toBe(0);
    const rows = await pollRows<{ type: string; payload: string; request_id: string | null }>(
      "SELECT type, payload, request_id FROM events WHERE agent_class = 'PlainAdminAgent' AND agent_name = ? AND type IN ('model.usage', 'session.status_idle') ORDER BY type",
      [name],
      (rs) => rs.length === 2,
    );
    expect(rows.map((r) => [r.type, JSON.parse(r.payload), r.request_id])).toEqual([
      ["model.usage", { inputTokens: 1200, outputTokens: 80, model: "scripted" }, "req-1"],
      ["session.status_idle", { detail: "forced idle: stuck import" }, null],
    ]);
  });

  it("keeps a malformed message on the channel as a dead letter with its reason", async () => {
    const name = `garbled-${crypto.randomUUID().slice(0, 8)}`;
    channel(AGENT_CHANNEL).publish({ v: 1, type: "model.usage", agent: "PlainAdminAgent", name, payload: { inputTokens: -5 }, timestamp: Date.now() });
    const result = await handleTail([tail.item()], env as Env);
    expect(result).toMatchObject({ sent: 0, losses: 1 });
    const letters = await pollRows<{ reason: string; body: string }>(
      "SELECT reason, body FROM dead_letters WHERE body LIKE ?",
      [`%${name}%`],
      (rs) => rs.length === 1,
    );
    expect(letters[0]!.reason).toMatch(new RegExp(`^unreadable message on ${AGENT_CHANNEL}: not a valid model\\.usage event: payload\\.`));
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ agentClass: "PlainAdminAgent", agentName: name, channel: AGENT_CHANNEL });
    const events = await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], () => true);
    expect(events).toEqual([]);
  });
});
