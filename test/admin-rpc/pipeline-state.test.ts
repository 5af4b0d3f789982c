import { describe, expect, it } from "vitest";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";
import { pipelineState } from "../../src/admin-rpc/pipeline-state";

const ok: TelemetryHealth = { since: 1, queueBound: true, failingSince: null, pending: 4, sent: 10, sendErrors: 0, dropped: 0, lastSendError: null };

describe("pipelineState", () => {
  it("judges the pipeline from the agent's own counts, worst first", () => {
    expect(pipelineState(null)).toBe("unknown");
    // No binding outranks everything else: nothing can ever be sent.
    expect(pipelineState({ ...ok, queueBound: false, sendErrors: 3, dropped: 2 })).toBe("no_queue");
    expect(pipelineState({ ...ok, sendErrors: 2, failingSince: 5, dropped: 1 })).toBe("failing");
    expect(pipelineState({ ...ok, dropped: 1 })).toBe("lossy");
    // Failed sends a retry got through: events waiting now are the next send's, as on any healthy agent.
    expect(pipelineState({ ...ok, sendErrors: 2 })).toBe("shipping");
    expect(pipelineState(ok)).toBe("shipping");
  });
});
