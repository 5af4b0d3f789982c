import { describe, expect, it } from "vitest";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";
import { pipelineBroken, pipelineState } from "../../src/admin-rpc/telemetry-health";

const ok: TelemetryHealth = { since: 1, queueBound: true, pending: 4, sent: 10, sendErrors: 0, dropped: 0, lastError: null };

describe("pipelineState", () => {
  it("judges the pipeline from the agent's own counts, worst first", () => {
    expect(pipelineState(null)).toBe("unknown");
    // No binding outranks everything else: nothing can ever be sent.
    expect(pipelineState({ ...ok, queueBound: false, sendErrors: 3, dropped: 2 })).toBe("no_queue");
    expect(pipelineState({ ...ok, sendErrors: 2 })).toBe("failing");
    // Failed sends with nothing waiting were retried through; events waiting without a failure are the next send's.
    expect(pipelineState({ ...ok, pending: 0, sendErrors: 2 })).toBe("degraded");
    expect(pipelineState({ ...ok, dropped: 1 })).toBe("degraded");
    expect(pipelineState(ok)).toBe("shipping");
  });

  it("calls broken only what keeps events from the console now", () => {
    expect([null, ok, { ...ok, dropped: 1 }, { ...ok, pending: 0, sendErrors: 1 }].map(pipelineBroken)).toEqual([false, false, false, false]);
    expect(
      [
        { ...ok, queueBound: false },
        { ...ok, sendErrors: 1 },
      ].map(pipelineBroken),
    ).toEqual([true, true]);
  });
});
