import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pollRows, rejectionOf } from "../../../helpers";
import { chatAgent, eventsOfType, fail, incidentEvents, incidentRow, payloadOf, reconnect, stall, text } from "./chat-helpers";

describe("chat turns of a real Think agent with a scripted model", () => {
  it("a normal streamed turn completes, with no recovery and a turn event in D1", async () => {
    const { name, stub } = await chatAgent("turn");
    await stub.setScript({ steps: [text("The deploy ", "finished ", "cleanly.")] });

    const out = await stub.sendUserMessage("did the deploy finish?");
    expect(out).toMatchObject({ status: "completed", reply: "The deploy finished cleanly." });
    expect((await stub.transcript()).map((m) => [m.role, m.text])).toEqual([
      ["user", "did the deploy finish?"],
      ["assistant", "The deploy finished cleanly."],
    ]);
    const calls = await stub.modelCalls();
    expect(calls.map((c) => [c.lane, c.kind, c.requestId])).toEqual([["chat", "text", out.requestId]]);

    // The SDK's own turn events arrive as chat.turn.*, keyed by the turn's request id; no recovery happened.
    const [finish] = await pollRows<{ payload: string }>(
      "SELECT payload FROM events WHERE agent_name = ? AND type = 'chat.turn.finished' AND request_id = ?",
      [name, out.requestId],
      (r) => r.length === 1,
    );
    expect(JSON.parse(finish!.payload)).toMatchObject({ status: "completed", trigger: "programmatic" });
    const types = (await env.DB.prepare("SELECT type FROM events WHERE agent_name = ?").bind(name).all<{ type: string }>()).results.map((r) => r.type);
    expect(types.filter((t) => t.startsWith("chat.recovery."))).toEqual([]);
    const agent = await env.DB.prepare("SELECT agent_class FROM agents WHERE agent_name = ?").bind(name).first<{ agent_class: string }>();
    expect(agent?.agent_class).toBe("ChatAgent");
  });

  it("an eviction mid-stream is detected on wake, scheduled through the alarm, attempted and completed", async () => {
    const { name, stub } = await chatAgent("evict");
    await stub.setScript({ steps: [stall("The answer is"), text(" forty-two.")] });
    const start = await stub.startUserMessage("what is the answer?");
    expect(start.model).toBe("stalled");
    expect(start.durableBlocks).toBeGreaterThan(0); // the partial reached storage before the eviction
    expect((await rejectionOf(stub.evict())).message).toContain("test eviction");

    const woken = await reconnect(name);
    expect(await runDurableObjectAlarm(woken)).toBe(true);

    // One incident, identified by the SDK as "<root request id>:<latest user message id>".
    const [detected] = await eventsOfType(name, "chat.recovery.detected");
    const incidentId = detected!.incident_id!;
    expect(incidentId).toMatch(new RegExp(`^${start.requestId}:user-`));
    const events = await incidentEvents(incidentId, "chat.recovery.completed");
    // The continuation's model call is on the incident too: what the recovery re-spent (recovery-cost.test.ts).
    expect(events.map((e) => e.type)).toEqual([
      "chat.recovery.detected",
      "chat.recovery.attempt",
      "chat.recovery.scheduled",
      "model.usage",
      "chat.recovery.completed",
    ]);
    const lifecycle = events.filter((e) => e.type.startsWith("chat.recovery."));
    expect(lifecycle.map((e) => payloadOf(e).recoveryKind)).toEqual(["continue", "continue", "continue", "continue"]);

    const row = await incidentRow(incidentId, (r) => r.status === "recovered");
    expect(row).toMatchObject({ kind: "chat", agent_class: "ChatAgent", agent_name: name, attempts: 1, max_attempts: 3, reason: null });

    // The continuation streamed into the interrupted assistant message: one answer, not two.
    expect((await woken.transcript()).map((m) => [m.role, m.text])).toEqual([
      ["user", "what is the answer?"],
      ["assistant", "The answer is forty-two."],
    ]);
    const calls = await woken.modelCalls();
    expect(calls.map((c) => c.kind)).toEqual(["stall", "text"]);
    expect(calls[1]!.requestId).not.toBe(start.requestId); // the continuation runs under a fresh request id
    expect(calls[1]!.promptMessages).toBeGreaterThan(calls[0]!.promptMessages); // it saw the persisted partial
    expect(await woken.recoveryIncidents()).toEqual([]); // the SDK deletes a completed incident
  });

  it("a recovery whose model call is rejected ends the incident as failed, with the provider's reason", async () => {
    const { name, stub } = await chatAgent("rfail");
    await stub.setScript({ steps: [stall("Starting the answer "), fail("Invalid API key", 401)] });
    await stub.startUserMessage("summarise the outage");
    await rejectionOf(stub.evict());
    await runDurableObjectAlarm(await reconnect(name));

    const [failed] = await eventsOfType(name, "chat.recovery.failed");
    expect(payloadOf(failed!)).toMatchObject({ reason: "Invalid API key", recoveryKind: "continue", attempt: 1 });
    const events = await incidentEvents(failed!.incident_id!, "chat.recovery.failed");
    expect(events.map((e) => e.type)).toEqual(["chat.recovery.detected", "chat.recovery.attempt", "chat.recovery.scheduled", "chat.recovery.failed"]);
    const row = await incidentRow(failed!.incident_id!, (r) => r.status === "failed");
    expect(row.reason).toBe("Invalid API key");
  });
});
