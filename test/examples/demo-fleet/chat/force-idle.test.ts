import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Think } from "@cloudflare/think";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX as SDK_CHAT_PREFIX } from "agents/chat";
import { describe, expect, it } from "vitest";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX, CHAT_TURN_TASK } from "../../../../src/admin-rpc/sdk-layout";
import { consoleAdminClient } from "../../../../worker/admin-client";
import { pollRows, rejectionOf } from "../../../helpers";
import { patient } from "../../../patience";
import { chatAgent, eventsOfType, reconnect, stall } from "./chat-helpers";

// Force idle on the demo's Think chat agent: its hook aborts the turn, the mixin cancels the turn's Tasks
// run and clears chat-recovery records, and the console hears of each under the ids its projections use
// (a chat turn by its request id, an incident by the SDK's incident id).

const operator = { email: "oncall@example.com", role: "operator" as const };
const registered = (name: string) => pollRows("SELECT 1 FROM agents WHERE agent_class = 'ChatAgent' AND agent_name = ?", [name], (r) => r.length === 1);

describe("the SDK facts admin RPC relies on for chat agents (agents 0.32, @cloudflare/think)", () => {
  it("chat turns run as Tasks runs of Think's chat-fiber definition; recovery records use the SDK's key prefix", () => {
    expect((Think as unknown as { CHAT_FIBER_NAME: string }).CHAT_FIBER_NAME).toBe(CHAT_TURN_TASK);
    expect(SDK_CHAT_PREFIX).toBe(CHAT_RECOVERY_INCIDENT_KEY_PREFIX);
  });
});

describe("force idle on a Think chat agent", () => {
  it("aborts a stalled turn, lists and ends it as a chat turn keyed by its request id, and emits run.force_idled", async () => {
    const { name, stub } = await chatAgent("idle");
    await stub.setScript({ steps: [stall("Compiling the weekly report: ")] });
    const start = await stub.startUserMessage("compile the weekly report");
    expect(start.model).toBe("stalled");
    await registered(name);
    const admin = consoleAdminClient(env, operator);
    const t = { agentClass: "ChatAgent", agentName: name };

    const status = await admin.status(t);
    expect(status.ok && status.value).toMatchObject({ status: "running", capabilities: { forceIdleHook: true, chatRecovery: true, tasks: true } });
    const runs = await admin.listRuns(t);
    expect(runs.ok && runs.value.tasks).toEqual([
      expect.objectContaining({ kind: "chat_turn", definition: CHAT_TURN_TASK, requestId: start.requestId, state: "running" }),
    ]);

    const r = await admin.forceIdle(t, { reason: "report turn stuck" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.ended).toEqual([expect.objectContaining({ kind: "chat_turn", runId: start.requestId, stopped: true })]);
    expect(r.value).toMatchObject({ evicted: false, notice: null, after: { status: "idle" } });
    const [event] = await eventsOfType(name, "run.force_idled");
    expect(event!.request_id).toBe(start.requestId);
    expect(JSON.parse(event!.payload)).toMatchObject({ kind: "chat_turn", runId: start.requestId, stopped: true, reason: "report turn stuck" });
  });

  it("ends a recovery in progress and emits incident.force_idled with the incident id of its chat.recovery events", async () => {
    const { name, stub } = await chatAgent("idle-rec");
    // The turn stalls, is evicted, and its recovery's continuation stalls too (no stall timeout): a recovery under way.
    await stub.setScript({ steps: [stall("The answer is"), stall(" forty")] });
    await stub.startUserMessage("what is the answer?");
    await rejectionOf(stub.evict());
    const woken = await reconnect(name);
    await registered(name);
    await expect.poll(async () => (await woken.modelCalls()).length, { timeout: patient(10_000) }).toBe(2);
    const admin = consoleAdminClient(env, operator);
    const t = { agentClass: "ChatAgent", agentName: name };

    const [detected] = await eventsOfType(name, "chat.recovery.detected");
    const incidentId = detected!.incident_id!;
    const status = await admin.status(t);
    expect(status.ok && status.value.chatRecoveryIncidents.map((i) => i.incidentId)).toEqual([incidentId]);

    const r = await admin.forceIdle(t, { reason: "customer gave up" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.incidents).toEqual([{ incidentId, kind: "chat" }]);
    expect(r.value.ended).toEqual([expect.objectContaining({ kind: "chat_turn", stopped: true })]);
    expect(r.value.after).toMatchObject({ status: "idle", chatRecoveryIncidents: [] });
    const [cleared] = await eventsOfType(name, "incident.force_idled");
    expect(cleared!.incident_id).toBe(incidentId);

    // Nothing picks the turn up again: the alarm finds no record, and the model is not called a third time.
    await runDurableObjectAlarm(woken);
    expect((await woken.modelCalls()).map((c) => c.kind)).toEqual(["stall", "stall"]);
    expect(await woken.recoveryIncidents()).toEqual([]);
  });
});
