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
  lastError: null,
};

describe("telemetryHealthWords", () => {
  it("an agent that does not report its pipeline is unknown, and says why", () => {
    expect(telemetryHealthWords(null, now)).toEqual({
      state: "unknown",
      tone: "unknown",
      sentence: "not reported: the agent has no telemetry mixin, or its mixins are older than admin contract 8.",
    });
  });

  it("a healthy pipe says what it sent since the instance started", () => {
    expect(telemetryHealthWords(healthy, now)).toEqual({
      state: "shipping",
      tone: "ok",
      sentence: "shipping: 120 events sent since this instance started 5m ago, 0 waiting for the next send.",
    });
    expect(telemetryHealthWords({ ...healthy, sent: 1 }, now).sentence).toContain("1 event sent");
  });

  it("no Queue binding is bad whatever else the counts say: nothing reaches the console", () => {
    const w = telemetryHealthWords({ ...healthy, queueBound: false, sent: 0, pending: 1, dropped: 40 }, now);
    expect(w.tone).toBe("bad");
    expect(w.sentence).toMatch(/^not shipping: the agent's Worker has no telemetry Queue binding.* 1 event wait in the agent's storage/);
    expect(w.sentence).toContain("40 events dropped before the Queue");
  });

  it("a last send that failed is bad, says for how long, and carries the agent's last error", () => {
    const w = telemetryHealthWords({ ...healthy, pending: 7, sendErrors: 3, failingSince: now - 90_000, lastError: "queue: Queue send failed" }, now);
    expect(w).toEqual({
      state: "failing",
      tone: "bad",
      sentence:
        "sends failing for 1m 30s: 3 failed sends since this instance started 5m ago, 120 sent; 7 events wait in the agent's storage. Last error: queue: Queue send failed",
    });
  });

  it("failed sends the retries got through, or dropped events, are a warning", () => {
    expect(telemetryHealthWords({ ...healthy, sendErrors: 1, lastError: "queue: x" }, now)).toEqual({
      state: "degraded",
      tone: "warn",
      sentence: "shipping: 120 events sent since this instance started 5m ago, 0 waiting, after 1 failed send. Last error: queue: x",
    });
    const dropped = telemetryHealthWords({ ...healthy, dropped: 2 }, now);
    expect(dropped.tone).toBe("warn");
    expect(dropped.sentence).not.toContain("failed send");
    expect(dropped.sentence).toContain("2 events dropped before the Queue");
  });
});
