import { Telemetry } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { statusOutput } from "../../src/admin-rpc/contract";

// The agent passes its outbox's stats() as they are (no picking in the user's Worker); the client's status schema
// picks the contract's fields, and reads stats it cannot (an older telemetry package) as "not reported".
const healthOf = (stats: unknown) => statusOutput.shape.telemetry.parse(stats);

describe("the status's telemetry, read by the client from the outbox's stats()", () => {
  it("picks the contract's fields from a real Telemetry's stats()", () => {
    const t = new Telemetry({ source: { agentClass: "A", agentName: "a" }, queue: null });
    t.record("session.status_running", { turnSeq: 1 }, { sessionName: "a" });
    expect(healthOf(t.stats())).toEqual({
      since: expect.any(Number),
      queueBound: false,
      failingSince: null,
      pending: 1,
      sent: 0,
      sendErrors: 0,
      dropped: 0,
      lastSendError: null,
    });
  });

  it("answers null for stats without these counts (a telemetry package before them), never a half-filled object", () => {
    const { queueBound: _, ...older } = new Telemetry({ source: { agentClass: "A", agentName: "a" } }).stats();
    expect(healthOf(older)).toBeNull();
    expect(healthOf(undefined)).toBeNull();
    expect(healthOf({ ...new Telemetry({ source: { agentClass: "A", agentName: "a" } }).stats(), sent: "12" })).toBeNull();
  });

  it("a failed send sets failingSince and lastSendError, and the next send that goes through clears failingSince", async () => {
    let refuse = true;
    const queue = { sendBatch: async () => (refuse ? Promise.reject(new Error("Queue send refused")) : undefined) };
    const t = new Telemetry({ source: { agentClass: "A", agentName: "a" }, queue });
    t.record("session.status_running", { turnSeq: 1 }, { sessionName: "a" });
    await t.flush();
    const failing = healthOf(t.stats());
    expect(failing).toMatchObject({ queueBound: true, failingSince: expect.any(Number), sendErrors: 1, pending: 1, lastSendError: "Queue send refused" });
    refuse = false;
    await t.flush();
    expect(healthOf(t.stats())).toMatchObject({ failingSince: null, sendErrors: 1, pending: 0, sent: 1, lastSendError: "Queue send refused" });
  });
});
