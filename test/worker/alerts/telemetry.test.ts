import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { agentHref } from "../../../console/links";
import { alertTelemetry } from "../../../worker/alerts/telemetry";
import { reconcileAgent } from "../../../worker/reconcile/agent";
import type { GapAgent } from "../../fixtures/gap-agent";
import { pollRows } from "../../helpers";
import { registerAgent } from "../routes/harness";

// The telemetry alert end to end in workerd: reconciliation asks real agents (both mixins) for their status, the
// agent's own telemetry counts say whether its events can reach the console, and an agent whose cannot is alerted
// on through the real alerts Queue to the real webhook receiver (test/alert-receiver.ts), once per agent and day.

type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];
const uid = () => crypto.randomUUID().slice(0, 8);
const ASK = { minAgeMs: 60_000 };

const known = (agentClass: string, name: string) =>
  pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, name], (r) => r.length === 1);

describe("telemetry alert", () => {
  it("fires once per agent and day for an agent whose Worker has no telemetry Queue binding, with what waits in its storage", async () => {
    const name = `tel-alert-${uid()}`;
    const target = { agentClass: "QueuelessAgent", agentName: name };
    const stub = await getAgentByName(env.QueuelessAgent, name);
    await stub.work();
    // Known to the console from before its binding went (a deploy dropped it).
    await registerAgent("QueuelessAgent", name);

    const pass = await reconcileAgent(env, target, ASK);
    expect(pass.error).toBeNull();
    const stats = await stub.telemetryStats();
    expect(pass.telemetry).toMatchObject({ queueBound: false, sent: 0, pending: stats.pending });

    const now = Date.now();
    const raised = await alertTelemetry(env, [pass], now);
    expect(raised.queued).toBe(2);
    const rows = await pollRows<{ channel: string; kind: string; status: string }>(
      "SELECT channel, kind, status FROM alert_deliveries WHERE agent_name = ? ORDER BY channel",
      [name],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    expect(rows.map((d) => [d.channel, d.kind])).toEqual([
      ["slack", "telemetry"],
      ["webhook", "telemetry"],
    ]);
    const json = (await received(name)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "telemetry",
      title: "Events not reaching the console",
      subject: `QueuelessAgent/${name}`,
      url: `https://oncall.example.com${agentHref(target)}`,
      details: { state: "no_queue", pending: stats.pending, sendErrors: 0 },
    });
    expect(json.summary).toContain("no telemetry Queue binding");

    // Asked again the same day: no second alert.
    const again = await alertTelemetry(env, [await reconcileAgent(env, target, ASK)], Date.now());
    expect(again.queued).toBe(0);
    expect((await received(name)).length).toBe(2);
  }, 60_000);

  it("fires for an agent whose sends fail while events wait, with its last error, and never for one that ships", async () => {
    const failing = `tel-failing-${uid()}`;
    const healthy = `tel-healthy-${uid()}`;
    for (const n of [failing, healthy]) await (await getAgentByName(env.GapAgent, n)).work(1);
    await known("GapAgent", failing);
    await known("GapAgent", healthy);
    const stub = await getAgentByName(env.GapAgent, failing);
    await stub.holdQueue(true);
    const held = await runInDurableObject(stub, async (a: GapAgent) => {
      a.recordMany(2, failing);
      await a.telemetry.flush();
      return a.telemetry.stats();
    });
    expect(held).toMatchObject({ pending: 2 });
    expect(held.sendErrors).toBeGreaterThanOrEqual(1);

    const passes = [
      await reconcileAgent(env, { agentClass: "GapAgent", agentName: failing }, ASK),
      await reconcileAgent(env, { agentClass: "GapAgent", agentName: healthy }, ASK),
    ];
    expect(passes[1]!.telemetry).toMatchObject({ queueBound: true, pending: 0, sendErrors: 0 });
    const raised = await alertTelemetry(env, passes, Date.now());
    expect(raised.queued).toBe(2);
    await pollRows<{ status: string }>(
      "SELECT status FROM alert_deliveries WHERE agent_name = ?",
      [failing],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    const json = (await received(failing)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "telemetry",
      details: { state: "failing", pending: 2, lastError: "queue: the Queue is unavailable (held by the test)" },
    });
    expect(json.summary).toMatch(/^sends failing for \d+(ms|s): \d+ failed sends? since this instance started/);
    expect(await received(healthy)).toEqual([]);
    await stub.holdQueue(false);
    await stub.settleTelemetry();
  }, 60_000);
});
