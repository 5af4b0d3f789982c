import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../../../helpers";
import { chatAgent, eventsOfType, fail, incidentEvents, incidentRow, payloadOf, reconnect, stall, text } from "./chat-helpers";

describe("chat recovery that is skipped, for real", () => {
  it("conversation_changed: the user moved on before the scheduled continuation ran", async () => {
    const { name, stub } = await chatAgent("skip-changed");
    await stub.setScript({ steps: [fail("upstream overloaded", 503, "Half an ans"), text("Second answer."), text("never reached")] });
    expect((await stub.sendUserMessage("first")).status).toBe("aborted"); // transient error → continuation after backoff
    expect(await stub.sendUserMessage("second")).toMatchObject({ status: "completed", reply: "Second answer." });

    const [skipped] = await eventsOfType(name, "chat.recovery.skipped");
    expect(payloadOf(skipped!)).toMatchObject({ reason: "conversation_changed", recoveryKind: "continue" });
    const types = (await incidentEvents(skipped!.incident_id!, "chat.recovery.skipped")).map((e) => e.type);
    // The SDK's recovery transport waiting out the backoff is on the incident's timeline (internal work: evidence, no run).
    expect(types).toEqual(["chat.recovery.detected", "chat.recovery.attempt", "chat.recovery.scheduled", "task.waiting", "chat.recovery.skipped"]);
    const waiting = (await incidentEvents(skipped!.incident_id!, "chat.recovery.skipped")).find((e) => e.type === "task.waiting")!;
    expect(payloadOf(waiting)).toMatchObject({ definition: "__cf_internal_chat_recovery", internal: true, reason: "sleep" });
    const row = await incidentRow(skipped!.incident_id!, (r) => r.status === "skipped");
    expect(row.reason).toBe("conversation_changed");
    expect((await stub.modelCalls()).map((c) => c.kind)).toEqual(["fail", "text"]); // the old turn was not re-run
    expect((await stub.transcript()).map((m) => m.text)).toEqual(["first", "Half an ans", "second", "Second answer."]);
  });

  it("user_cancelled: cancelling the turn while its recovery waits out the backoff", async () => {
    const { name, stub } = await chatAgent("skip-cancel");
    await stub.setScript({ steps: [fail("rate limited", 429, "Partial"), text("never reached")] });
    const turn = await stub.sendUserMessage("long report");
    expect(turn.status).toBe("aborted");
    await stub.cancelTurn(turn.requestId);

    const [skipped] = await eventsOfType(name, "chat.recovery.skipped");
    expect(payloadOf(skipped!)).toMatchObject({ reason: "user_cancelled" });
    const row = await incidentRow(skipped!.incident_id!, (r) => r.status === "skipped");
    expect(row.reason).toBe("user_cancelled");
    await scheduler.wait(1_500); // past the backoff: the queued attempt fires and bails
    expect((await stub.modelCalls()).map((c) => c.kind)).toEqual(["fail"]);
  });

  it("continue_disabled: the agent's policy declines automatic continuation after an eviction", async () => {
    const { name, stub } = await chatAgent("skip-declined");
    await stub.setRecoveryPolicy({ autoContinue: false });
    await stub.setScript({ steps: [stall("Starting the answer "), text("never reached")] });
    await stub.startUserMessage("q");
    await rejectionOf(stub.evict());
    const woken = await reconnect(name);
    await runDurableObjectAlarm(woken);

    const [skipped] = await eventsOfType(name, "chat.recovery.skipped");
    expect(payloadOf(skipped!)).toMatchObject({ reason: "continue_disabled" });
    const row = await incidentRow(skipped!.incident_id!, (r) => r.status === "skipped");
    expect(row.reason).toBe("continue_disabled");
    // The partial is kept; nothing else runs.
    expect((await woken.transcript()).map((m) => m.text)).toEqual(["q", "Starting the answer "]);
    expect((await woken.modelCalls()).length).toBe(1);
  });
});
