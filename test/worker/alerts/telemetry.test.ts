import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { agentHref } from "../../../console/links";
import { HEARD_FROM_STEP_MS } from "../../../src/store/heard-from";
import { TELEMETRY_QUIET_MS } from "../../../src/store/read-models/blocked-agents";
import { alertTelemetry } from "../../../worker/alerts/telemetry";
import { reconcileAgent } from "../../../worker/reconcile/agent";
import type { GapAgent } from "../../fixtures/gap-agent";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { call, registerAgent } from "../routes/harness";

// The telemetry alert end to end in workerd: reconciliation asks real agents (both mixins) for their status, the
// agent's own telemetry counts say whether its events can reach the console, and a Worker whose agents' cannot is
// alerted on through the real alerts Queue to the real webhook receiver (test/alert-receiver.ts): once per agent
// class, state and day, and for failing sends only once the console has heard nothing from the agent for a while.

type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];
const uid = () => crypto.randomUUID().slice(0, 8);
const ASK = { minAgeMs: 60_000 };

const known = (agentClass: string, name: string) =>
  pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, name], (r) => r.length === 1);
const sentRows = (name: string) =>
  pollRows<{ channel: string; kind: string; status: string }>(
    "SELECT channel, kind, status FROM alert_deliveries WHERE agent_name = ? ORDER BY channel",
    [name],
    (r) => r.length === 2 && r.every((d) => d.status === "sent"),
  );

// The alert's link is followed as a viewer would: through Access.
beforeAll(publishEnvTeamKeys);

describe("telemetry alert", () => {
  it("fires once for a Worker's agents without a telemetry Queue binding, naming the first and counting the rest", async () => {
    const names = [`tel-alert-${uid()}`, `tel-alert-${uid()}`];
    const passes = [];
    for (const name of names) {
      const stub = await getAgentByName(env.UnboundAdminAgent, name);
      await stub.work();
      // Known to the console from before its binding went (a deploy dropped it).
      await registerAgent("UnboundAdminAgent", name);
      passes.push(await reconcileAgent(env, { agentClass: "UnboundAdminAgent", agentName: name }, ASK));
    }
    const stats = await (await getAgentByName(env.UnboundAdminAgent, names[0]!)).telemetryStats();
    expect(passes.map((p) => p.error)).toEqual([null, null]);
    expect(passes[0]!.telemetry).toMatchObject({ queueBound: false, sent: 0, pending: stats.pending });

    const raised = await alertTelemetry(env, passes, Date.now());
    expect(raised.queued).toBe(2);
    expect((await sentRows(names[0]!)).map((d) => [d.channel, d.kind])).toEqual([
      ["slack", "telemetry"],
      ["webhook", "telemetry"],
    ]);
    const json = (await received(names[0]!)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "telemetry",
      title: "Events not reaching the console",
      agent: { class: "UnboundAdminAgent", name: names[0] },
      url: "https://oncall.example.com/agents?blocked=true&agentClass=UnboundAdminAgent",
      details: { state: "no_queue", agents: 2, pending: stats.pending, sendErrors: 0 },
    });
    // The link lists both agents the alert counts, each with what it said.
    const listed = (await (
      await call("/agents?blocked=true&agentClass=UnboundAdminAgent", { as: "viewer", headers: { Accept: "application/json" } })
    ).json()) as {
      items: { agentName: string; pipeline: string }[];
    };
    expect(
      listed.items
        .filter((a) => names.includes(a.agentName))
        .map((a) => [a.agentName, a.pipeline])
        .sort(),
    ).toEqual(names.map((n) => [n, "no_queue"]).sort());
    expect(json.summary).toMatch(new RegExp(`^${names[0]}: not shipping: the agent's Worker has no telemetry Queue binding`));
    expect(json.summary).toContain("1 more agent(s) of UnboundAdminAgent asked in the same pass say the same.");
    expect(await received(names[1]!)).toEqual([]);

    // Asked again the same day: no second alert.
    const again = await alertTelemetry(env, [await reconcileAgent(env, { agentClass: "UnboundAdminAgent", agentName: names[1]! }, ASK)], Date.now());
    expect(again.queued).toBe(0);
    expect((await received(names[0]!)).length).toBe(2);
  });

  it("fires for failing sends only once the console has heard nothing from the agent for a while, and never for one that ships", async () => {
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
    expect(held).toMatchObject({ pending: 2, failingSince: expect.any(Number) });

    const passes = [
      await reconcileAgent(env, { agentClass: "GapAgent", agentName: failing }, ASK),
      await reconcileAgent(env, { agentClass: "GapAgent", agentName: healthy }, ASK),
    ];
    expect(passes[0]!.telemetry).toMatchObject({ failingSince: held.failingSince, pending: 2 });
    expect(passes[1]!.telemetry).toMatchObject({ queueBound: true, failingSince: null, pending: 0, sendErrors: 0 });
    // The console heard from it a moment ago: a blip its next retry may get through is not alerted on.
    expect((await alertTelemetry(env, passes, Date.now())).queued).toBe(0);
    // Nothing heard from it for TELEMETRY_QUIET_MS, counted from the latest time it may have been heard from (its
    // stored last_seen moves by HEARD_FROM_STEP_MS at most, src/store/heard-from.ts): not yet alerted a moment before…
    expect((await alertTelemetry(env, passes, Date.now() + TELEMETRY_QUIET_MS)).queued).toBe(0);
    // …and alerted once that much has passed.
    const raised = await alertTelemetry(env, passes, Date.now() + TELEMETRY_QUIET_MS + HEARD_FROM_STEP_MS);
    expect(raised.queued).toBe(2);
    await sentRows(failing);
    const json = (await received(failing)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "telemetry",
      // One agent: the link is its page.
      url: `https://oncall.example.com${agentHref({ agentClass: "GapAgent", agentName: failing })}`,
      details: { state: "failing", agents: 1, pending: 2, lastSendError: "the Queue is unavailable (held by the test)" },
    });
    expect(json.summary).toMatch(new RegExp(`^${failing}: sends failing for \\d+m \\d+s: \\d+ failed sends? since this instance started`));
    expect(await received(healthy)).toEqual([]);
    await stub.holdQueue(false);
    await stub.settleTelemetry();
  });
});
