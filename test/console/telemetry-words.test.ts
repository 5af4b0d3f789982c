import { describe, expect, it } from "vitest";
import { telemetryHealthWords } from "../../console/telemetry-words";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";

const now = Date.UTC(2026, 10, 25, 12, 0, 0);
const healthy: TelemetryHealth = {
  since: now - 5 * 60_000,
  queueBound: true,
  failingSince: null,
  pending: 0,
  sent: 120,
  sendErrors: 0,
  dropped: 0,
  lastSendError: null,
};

describe("telemetryHealthWords", () => {
  it("an agent that does not report its pipeline is unknown, and says why", () => {
    expect(telemetryHealthWords(null, now)).toEqual({
      state: "unknown",
      tone: "unknown",
      sentence:
        "not reported: the agent has no telemetry outbox (none is needed when its Worker's tail carries its events), or its mixins are older than admin contract 8.",
    });
  });

  it("a healthy pipe says what it sent since the instance started, and any failed sends a retry got through", () => {
    expect(telemetryHealthWords(healthy, now)).toEqual({
      state: "shipping",
      tone: "ok",
      sentence: "shipping: 120 events sent since this instance started 5m ago, 0 waiting for the next send.",
    });
    expect(telemetryHealthWords({ ...healthy, sent: 1 }, now).sentence).toContain("1 event sent");
    expect(telemetryHealthWords({ ...healthy, sendErrors: 1, lastSendError: "x" }, now)).toEqual({
      state: "shipping",
      tone: "ok",
      sentence: "shipping: 120 events sent since this instance started 5m ago, after 1 failed send that a retry got through, 0 waiting for the next send.",
    });
  });

  it("no Queue binding is bad whatever else the counts say: nothing reaches the console", () => {
    const w = telemetryHealthWords({ ...healthy, queueBound: false, sent: 0, pending: 1, dropped: 40 }, now);
    expect(w.tone).toBe("bad");
    expect(w.sentence).toMatch(/^not shipping: the agent's Worker has no telemetry Queue binding.* 1 event waits in the agent's storage/);
    expect(w.sentence).toContain("40 events dropped before the Queue");
  });

  it("a last send that failed is bad, says for how long, and carries the send's error", () => {
    const w = telemetryHealthWords({ ...healthy, pending: 7, sendErrors: 3, failingSince: now - 90_000, lastSendError: "Queue send failed" }, now);
    expect(w).toEqual({
      state: "failing",
      tone: "bad",
      sentence:
        "sends failing for 1m 30s: 3 failed sends since this instance started 5m ago, 120 sent; 7 events wait in the agent's storage. Last send error: Queue send failed",
    });
    // A failure the agent saw after this request began (or on a clock ahead of ours) is not a negative time.
    expect(telemetryHealthWords({ ...healthy, pending: 1, sendErrors: 1, failingSince: now + 40 }, now).sentence).toMatch(/^sends failing for 0ms: /);
  });

  it("dropped events are a warning, with how they can be dropped", () => {
    const w = telemetryHealthWords({ ...healthy, dropped: 2 }, now);
    expect(w.tone).toBe("warn");
    expect(w.sentence).toContain("2 events dropped before the Queue");
    expect(w.sentence).toContain("(deleted unsent by the outbox's bound, pushed out of memory, or failed to record)");
  });
});
