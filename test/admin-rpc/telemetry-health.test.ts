import { Telemetry } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { telemetryHealth } from "../../src/admin-rpc/contract";
import { healthOf } from "../../src/admin-rpc/telemetry-health";

describe("healthOf", () => {
  it("picks the contract's fields from a real Telemetry's stats(), and the client's schema takes them", () => {
    const t = new Telemetry({ source: { agentClass: "A", agentName: "a" }, queue: null });
    t.record("session.status_running", { turnSeq: 1 }, { sessionName: "a" });
    const picked = healthOf(t.stats());
    expect(picked).toEqual({
      since: expect.any(Number),
      queueBound: false,
      failingSince: null,
      pending: 1,
      sent: 0,
      sendErrors: 0,
      dropped: 0,
      lastSendError: null,
    });
    expect(telemetryHealth.parse(picked)).toEqual(picked);
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
    const failing = healthOf(t.stats())!;
    expect(failing).toMatchObject({ queueBound: true, failingSince: expect.any(Number), sendErrors: 1, pending: 1, lastSendError: "Queue send refused" });
    refuse = false;
    await t.flush();
    expect(healthOf(t.stats())).toMatchObject({ failingSince: null, sendErrors: 1, pending: 0, sent: 1, lastSendError: "Queue send refused" });
  });
});
