import { env } from "cloudflare:workers";
import { normalizeSdkEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { eventsOf, pollRows, probe } from "../helpers";

const SECRET = "sk-live_abcdefghijklmnopqrstuvwxyz123456";
const longText = `The refund for order 1183 was issued with key ${SECRET}. ${"More partial output. ".repeat(500)}`;

describe("redaction and size caps", () => {
  it("reduces exhausted partial output and terminal messages to masked, truncated previews with their original size", () => {
    const e = normalizeSdkEvent({
      type: "chat:recovery:exhausted",
      agent: "SupportChat",
      name: "ticket-9",
      timestamp: 1_790_000_000_000,
      payload: {
        incidentId: "r1:m1",
        requestId: "r1",
        attempt: 3,
        maxAttempts: 3,
        recoveryKind: "retry",
        reason: "no_progress_timeout",
        partialText: longText,
        partialParts: [
          { type: "text", text: longText },
          { type: "tool-call", input: { card: "4111 1111 1111 1111" } },
        ],
        terminalMessage: `Giving up. Token: Bearer ${"x".repeat(40)}`,
      },
    });
    expect(e?.type).toBe("chat.recovery.exhausted");
    const p = e!.payload as Record<string, { preview: string; bytes: number; truncated: boolean; count?: number }>;
    expect(p.partialText!.bytes).toBe(new TextEncoder().encode(longText).byteLength);
    expect(p.partialText!.truncated).toBe(true);
    expect(p.partialText!.preview.length).toBeLessThanOrEqual(240);
    expect(p.partialText!.preview).toContain("with key [masked: api key].");
    expect(p.partialParts).toEqual({ count: 2, bytes: expect.any(Number) });
    expect(p.terminalMessage!.preview).toBe("Giving up. Token: Bearer [masked: token]");
    const json = JSON.stringify(e);
    expect(json).not.toContain(SECRET);
    expect(json).not.toContain("4111 1111");
    expect(json.length).toBeLessThan(2000);
  });

  it("stores nothing of a secret in D1, from partial text or from a stashed snapshot", async () => {
    const { name, stub } = await probe();
    await stub.emitSdkEvent("chat:recovery:exhausted", {
      incidentId: `inc-${name}`,
      requestId: "r",
      attempt: 2,
      maxAttempts: 2,
      recoveryKind: "continue",
      reason: "stable_timeout",
      partialText: longText,
    });
    await stub.startHangingFiber(SECRET);
    const rows = await pollRows<{ payload: string; type: string }>(
      "SELECT type, payload FROM events WHERE agent_name = ?",
      [name],
      (r) => r.some((x) => x.type === "chat.recovery.exhausted") && r.some((x) => x.type === "fiber.stashed"),
    );
    for (const r of rows) expect(r.payload).not.toContain(SECRET);
    const stored = JSON.parse(rows.find((r) => r.type === "chat.recovery.exhausted")!.payload);
    expect(stored.partialText.truncated).toBe(true);
    const inc = await env.DB.prepare("SELECT reason, status FROM incidents WHERE incident_id = ?").bind(`inc-${name}`).first();
    expect(inc).toEqual({ reason: "stable_timeout", status: "exhausted" });
  });

  it("keeps unknown SDK event kinds as generic events and skips only the known per-RPC noise", () => {
    const unknown = normalizeSdkEvent({ type: "tasks:lease:stolen", payload: { lease: "abc" }, timestamp: 1 }, { agentClass: "A", agentName: "a" });
    expect(unknown).toMatchObject({ type: "sdk.event", payload: { sdkType: "tasks:lease:stolen" }, source: { agentClass: "A", agentName: "a" } });
    expect(normalizeSdkEvent({ type: "rpc", payload: { method: "x" }, timestamp: 1 })).toBeNull();
  });

  it("ships an event too large for the Queue as an event.too_large placeholder instead of failing the agent", async () => {
    const { name, stub } = await probe();
    const id = await stub.recordEvent("session.error", { error: "x".repeat(200_000) }, { sessionName: name });
    const rows = await pollRows<{ type: string; payload: string }>("SELECT type, payload FROM events WHERE id = ?", [id], (r) => r.length === 1);
    expect(rows[0]!.type).toBe("event.too_large");
    expect(JSON.parse(rows[0]!.payload)).toMatchObject({ originalType: "session.error", limit: 65_536 });
    expect(rows[0]!.payload.length).toBeLessThan(10_000);
    expect((await eventsOf(name)).map((e) => e.id)).toContain(id);
  });
});
