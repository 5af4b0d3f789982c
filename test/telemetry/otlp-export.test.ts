import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pollRows, probe } from "../helpers";
import type { DecodedSpan } from "../otlp-receiver";
import { patient } from "../patience";

const control = (path: string, init?: RequestInit) => fetch(`${env.OTLP_CONTROL}${path}`, init).then((r) => r.json());
const setMode = (mode: "ok" | "slow" | "down") => control("/__mode", { method: "POST", body: JSON.stringify({ mode }) });
const spans = () => control("/__spans") as Promise<DecodedSpan[]>;
const stats = () => control("/__stats") as Promise<{ received: number; pending: number; lastHeaders: Record<string, string> }>;

async function waitForSpan(match: (s: DecodedSpan) => boolean, timeout = patient(10_000)): Promise<DecodedSpan> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = (await spans()).find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error("span not received by the OTLP receiver in time");
    await scheduler.wait(50);
  }
}

describe("OTLP export to a real HTTP receiver", () => {
  it("exports the agent's event spans with incident id and reason, with the configured headers", async () => {
    await setMode("ok");
    const { name, stub } = await probe();
    const incidentId = `otlp-${name}`;
    await stub.emitSdkEvent("chat:recovery:exhausted", {
      incidentId,
      requestId: "r-otlp",
      attempt: 4,
      maxAttempts: 4,
      recoveryKind: "retry",
      reason: "work_budget_exceeded",
    });
    await stub.settleTelemetry();

    const span = await waitForSpan((s) => s.attributes["agents.incident.id"] === incidentId);
    expect(span.name).toBe("chat.recovery.exhausted");
    expect(span.service).toBe("ProbeAgent");
    expect(span.attributes).toMatchObject({
      "agents.event.reason": "work_budget_exceeded",
      "agents.event.attempt": 4,
      "agents.agent.class": "ProbeAgent",
      "agents.agent.name": name,
      "agents.request.id": "r-otlp",
    });
    expect((await stats()).lastHeaders["x-test-token"]).toBe("secret-token");

    // The stored event carries the same trace id, so the console can link to the APM.
    const [row] = await pollRows<{ trace_id: string }>("SELECT trace_id FROM events WHERE incident_id = ?", [incidentId], (r) => r.length === 1);
    expect(row!.trace_id).toBe(span.traceId);

    // The Worker's queue consumer exports its own span, annotated with the incident it ingested.
    const consumer = await waitForSpan((s) => s.name.startsWith("queueHandler") && s.events.some((e) => e.attributes["agents.incident.id"] === incidentId));
    expect(consumer.service).toBe("agent-console");
    expect(consumer.events.find((e) => e.attributes["agents.incident.id"] === incidentId)!.attributes["agents.event.reason"]).toBe("work_budget_exceeded");
  });

  it("a slow APM leaves the agent's result unchanged and does not hold it up", async () => {
    const { stub: baseline } = await probe();
    const expected = await baseline.work(5);

    await setMode("slow");
    try {
      const { name, stub } = await probe();
      const before = (await stats()).received;
      const result = await stub.work(5);
      expect(result.sum).toBe(expected.sum);
      // The export is still hanging at the receiver, yet the agent already answered.
      await expect.poll(async () => (await stats()).received, { timeout: patient(5000) }).toBeGreaterThan(before);
      expect((await stats()).pending).toBeGreaterThan(0);
      // The Queue → D1 path does not depend on the APM either.
      await pollRows("SELECT id FROM events WHERE agent_name = ? AND type = 'fiber.completed'", [name], (r) => r.length === 1);
    } finally {
      await setMode("ok");
    }
  });

  it("an APM that is down leaves the agent's result unchanged; the failure is counted, not thrown", async () => {
    await setMode("down");
    try {
      const { name, stub } = await probe();
      const result = await stub.work(4);
      expect(result.sum).toBe(10);
      const s = await stub.settleTelemetry();
      expect(s.otlp?.failed).toBeGreaterThan(0);
      expect(s.pending).toBe(0);
      await pollRows("SELECT id FROM events WHERE agent_name = ? AND type = 'fiber.completed'", [name], (r) => r.length === 1);
    } finally {
      await setMode("ok");
    }
  });
});
