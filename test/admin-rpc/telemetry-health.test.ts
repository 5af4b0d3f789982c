import { Telemetry } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";
import { telemetryHealth } from "../../src/admin-rpc/contract";
import { healthOf, pipelineBroken, pipelineState } from "../../src/admin-rpc/telemetry-health";

const ok: TelemetryHealth = { since: 1, queueBound: true, failingSince: null, pending: 4, sent: 10, sendErrors: 0, dropped: 0, lastError: null };

describe("pipelineState", () => {
  it("judges the pipeline from the agent's own counts, worst first", () => {
    expect(pipelineState(null)).toBe("unknown");
    // No binding outranks everything else: nothing can ever be sent.
    expect(pipelineState({ ...ok, queueBound: false, sendErrors: 3, dropped: 2 })).toBe("no_queue");
    expect(pipelineState({ ...ok, sendErrors: 2, failingSince: 5 })).toBe("failing");
    // Failed sends the retries got through: events waiting now are the next send's, as on any healthy agent.
    expect(pipelineState({ ...ok, sendErrors: 2 })).toBe("degraded");
    expect(pipelineState({ ...ok, dropped: 1 })).toBe("degraded");
    expect(pipelineState(ok)).toBe("shipping");
  });

  it("calls broken only what keeps events from the console now", () => {
    expect([null, ok, { ...ok, dropped: 1 }, { ...ok, sendErrors: 1 }].map(pipelineBroken)).toEqual([false, false, false, false]);
    expect(
      [
        { ...ok, queueBound: false },
        { ...ok, sendErrors: 1, failingSince: 5 },
      ].map(pipelineBroken),
    ).toEqual([true, true]);
  });
});

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
      lastError: null,
    });
    expect(telemetryHealth.parse(picked)).toEqual(picked);
  });

  it("answers null for stats without these counts (a telemetry package before them), never a half-filled object", () => {
    const { queueBound: _, ...older } = new Telemetry({ source: { agentClass: "A", agentName: "a" } }).stats();
    expect(healthOf(older)).toBeNull();
    expect(healthOf(undefined)).toBeNull();
    expect(healthOf({ ...ok, sent: "12" })).toBeNull();
  });
});
