import { runDurableObjectAlarm } from "cloudflare:test";
import { chatRecoveryRecordStatus } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../../../helpers";
import {
  chatAgent,
  type EventRow,
  eventsOfType,
  fail,
  incidentEvents,
  incidentRow,
  payloadOf,
  reconnect,
  SECRET_CHUNK,
  SECRET_PREVIEW,
  stall,
  text,
} from "./chat-helpers";

type Exhausted = {
  reason: string;
  attempt: number;
  maxAttempts: number;
  recoveryKind: string;
  partialText?: { preview: string; bytes: number; truncated: boolean };
  partialParts?: { count: number; bytes: number };
  terminalMessage?: { preview: string };
};

const TERMINAL = "The assistant was interrupted and could not finish. Please try again.";

/** Waits for the agent's exhaustion event and returns it, parsed. */
async function exhausted(name: string): Promise<{ event: EventRow; payload: Exhausted }> {
  const [event] = await eventsOfType(name, "chat.recovery.exhausted");
  return { event: event!, payload: payloadOf<Exhausted>(event!) };
}

/** The partial preview is the masked prefix of what the model streamed, with the original size. */
function expectRedactedPartial(p: Exhausted, streamed: string) {
  expect(p.partialText!.preview.startsWith(SECRET_PREVIEW)).toBe(true);
  expect(p.partialText!.bytes).toBe(new TextEncoder().encode(streamed).byteLength);
  expect(JSON.stringify(p)).not.toContain("sk-test_");
  expect(p.partialParts!.count).toBeGreaterThan(0);
  expect(p.terminalMessage!.preview).toBe(TERMINAL);
}

/**
 * When the exhausting evaluation happens inside a recovery continuation (a stalled stream), the SDK seals the
 * incident `exhausted` (onExhausted, the terminal message), then that continuation settles as "aborted" and
 * `updateIncident` rewrites the record's word to `failed`, keeping the exhaustion's reason (its event gives no
 * reason). The one mapping reads that record as the SDK exhausted it (chatRecoveryRecordStatus), and the
 * console says `exhausted`, with the exhaustion's reason, even after the reason-less chat.recovery.failed.
 */
async function expectSealedThenFailed(stub: { recoveryIncidents(): Promise<{ status: string; reason?: string }[]> }, incidentId: string, reason: string) {
  const types = (await incidentEvents(incidentId, "chat.recovery.failed")).map((e) => e.type);
  expect(types.slice(0, 3)).toEqual(["chat.recovery.detected", "chat.recovery.attempt", "chat.recovery.scheduled"]);
  expect(types.slice(-2)).toEqual(["chat.recovery.exhausted", "chat.recovery.failed"]);
  // The failure event is in D1: the row has seen it, and still says exhausted.
  const row = await incidentRow(incidentId, (r) => r.reason === reason && r.status === "exhausted");
  expect(row.kind).toBe("chat");
  const record = (await stub.recoveryIncidents())[0]!;
  expect(record).toMatchObject({ status: "failed", reason });
  expect(chatRecoveryRecordStatus(record)).toBe("exhausted");
  // The agent also marks that trailing failure sealed: the turn's run stays exhausted too.
  expect(payloadOf((await incidentEvents(incidentId, "chat.recovery.failed")).at(-1)!)).toMatchObject({ sealed: true });
  return row;
}

describe("chat recovery exhaustion, for real, reaches D1 with its reason", () => {
  it("max_attempts_exceeded: a model that keeps stalling uses up the attempts", async () => {
    const { name, stub } = await chatAgent("exh-max");
    await stub.setRecoveryPolicy({ stallTimeoutMs: 200, maxAttempts: 2 });
    await stub.setScript({ steps: [stall(SECRET_CHUNK), stall(), stall()] });
    const out = await stub.sendUserMessage("restart the queue consumer");
    expect(out.status).toBe("aborted"); // the stall was routed into recovery, not surfaced as an error

    const { event, payload } = await exhausted(name);
    expect(payload).toMatchObject({ reason: "max_attempts_exceeded", maxAttempts: 2, recoveryKind: "continue" });
    expectRedactedPartial(payload, SECRET_CHUNK);
    expect(await eventsOfType(name, "chat.stream.stalled", 3)).toHaveLength(3);
    expect((await stub.modelCalls()).map((c) => c.kind)).toEqual(["stall", "stall", "stall"]);

    const row = await expectSealedThenFailed(stub, event.incident_id!, "max_attempts_exceeded");
    expect(row.max_attempts).toBe(2);
    expect((await stub.recoveryIncidents())[0]!.transientRetries).toBe(2); // stalls count as transient retries
  });

  it("no_progress_timeout: a recovery that streams nothing new past the window is sealed", async () => {
    const { name, stub } = await chatAgent("exh-noprog");
    await stub.setRecoveryPolicy({ stallTimeoutMs: 200, maxAttempts: 5, noProgressTimeoutMs: 100 });
    await stub.setScript({ steps: [stall(SECRET_CHUNK), stall(), stall()] });
    await stub.sendUserMessage("page the database owner");

    const { event, payload } = await exhausted(name);
    expect(payload).toMatchObject({ reason: "no_progress_timeout", maxAttempts: 5 });
    expectRedactedPartial(payload, SECRET_CHUNK);
    await expectSealedThenFailed(stub, event.incident_id!, "no_progress_timeout");
    expect((await stub.modelCalls()).map((c) => c.kind)).toEqual(["stall", "stall"]);
  });

  it("work_budget_exceeded: a recovery that keeps producing output but never finishes is sealed", async () => {
    const { name, stub } = await chatAgent("exh-work");
    await stub.setRecoveryPolicy({ stallTimeoutMs: 200, maxAttempts: 5, maxRecoveryWork: 0 });
    await stub.setScript({ steps: [stall(SECRET_CHUNK), stall(" then more"), stall()] });
    await stub.sendUserMessage("drain the backlog");

    const { event, payload } = await exhausted(name);
    expect(payload.reason).toBe("work_budget_exceeded");
    expectRedactedPartial(payload, `${SECRET_CHUNK} then more`); // the continuation's output counts as work
    expect(payload.partialText!.preview).toBe(`${SECRET_PREVIEW} then more`);
    await expectSealedThenFailed(stub, event.incident_id!, "work_budget_exceeded");
    const sdk = (await stub.recoveryIncidents())[0]!;
    expect(sdk.progress! - sdk.workBaseline!).toBeGreaterThan(0);
  });

  it("recovery_aborted: the agent's spend budget (shouldKeepRecovering) stops recovery", async () => {
    const { name, stub } = await chatAgent("exh-abort");
    await stub.setRecoveryPolicy({ stallTimeoutMs: 200, maxAttempts: 5, maxModelCalls: 2 });
    await stub.setScript({ steps: [stall(SECRET_CHUNK), stall(), text("never reached")] });
    await stub.sendUserMessage("rotate the credentials");

    const { event, payload } = await exhausted(name);
    expect(payload.reason).toBe("recovery_aborted");
    expectRedactedPartial(payload, SECRET_CHUNK);
    await expectSealedThenFailed(stub, event.incident_id!, "recovery_aborted");
    expect((await stub.modelCalls()).length).toBe(2); // the budget held: no third call
    expect(await stub.pendingScript()).toHaveLength(1);
  });

  it("interrupted_attempts_exceeded: a turn whose isolate dies on every attempt is sealed on wake", async () => {
    const { name, stub } = await chatAgent("exh-evict");
    await stub.setRecoveryPolicy({ maxInterruptedAttempts: 2 });
    await stub.setScript({ steps: [stall(SECRET_CHUNK), stall(" still going"), text("never reached")] });
    await stub.startUserMessage("migrate the tenant");
    await rejectionOf(stub.evict());

    // Wake 1: the replay opens the incident and the recovery continuation starts — and stalls.
    let woken = await reconnect(name);
    await runDurableObjectAlarm(woken);
    const [scheduled] = await eventsOfType(name, "chat.recovery.scheduled");
    for (let i = 0; i < 100 && (await woken.modelCalls()).length < 2; i++) await scheduler.wait(20);
    expect((await woken.modelCalls()).map((c) => c.kind)).toEqual(["stall", "stall"]);
    await rejectionOf(woken.evict());

    // Wake 2: the second dead attempt exceeds the budget; the turn is terminalised without re-running the model.
    woken = await reconnect(name);
    await runDurableObjectAlarm(woken);
    const { event, payload } = await exhausted(name);
    expect(event.incident_id).toBe(scheduled!.incident_id);
    expect(payload.reason).toBe("interrupted_attempts_exceeded");
    expect(payload.partialText!.preview).toBe(" still going"); // the partial of the last attempt's stream
    const row = await incidentRow(event.incident_id!, (r) => r.status === "exhausted");
    expect(row.reason).toBe("interrupted_attempts_exceeded");
    expect((await woken.modelCalls()).length).toBe(2);
    expect((await woken.recoveryIncidents())[0]).toMatchObject({ status: "exhausted", interruptedAttempts: 2 });
  });

  it("stable_timeout: a recovery that never finds the agent idle gives up", async () => {
    const { name, stub } = await chatAgent("exh-stable");
    await stub.setRecoveryPolicy({ maxAttempts: 1, stableTimeoutMs: 200 });
    await stub.setScript({ steps: [fail("upstream overloaded", 503), stall(SECRET_CHUNK)] });
    // A transient provider error schedules a retry after a 1 s backoff …
    const first = await stub.sendUserMessage("first question");
    expect(first.status).toBe("aborted");
    // … and meanwhile a second turn occupies the agent (its model hangs, no watchdog).
    const second = await stub.startUserMessage("second question");
    expect(second.model).toBe("stalled");

    const { event, payload } = await exhausted(name);
    expect(payload).toMatchObject({ reason: "stable_timeout", recoveryKind: "retry", maxAttempts: 1 });
    expect(event.incident_id!.startsWith(`${first.requestId}:user-`)).toBe(true);
    // With no stream of its own (a retry), the SDK reports the partial of the live stream: the turn that kept it busy.
    expectRedactedPartial(payload, SECRET_CHUNK);
    const row = await incidentRow(event.incident_id!, (r) => r.status === "exhausted");
    expect(row.reason).toBe("stable_timeout");
    await rejectionOf(stub.evict()); // end the hanging turn
  });
});
