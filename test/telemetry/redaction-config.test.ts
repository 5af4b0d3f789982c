import { env } from "cloudflare:workers";
import { createMasker, normalizeSdkEvent, parseRedactPatterns, Telemetry, toPreview } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { pollRows, probe } from "../helpers";

describe("extra redaction patterns", () => {
  it("masks extra RegExps and literal strings on top of the built-in shapes", () => {
    const mask = createMasker([/acct_[0-9]{8}/i, "Project Nightingale", /x*/]);
    expect(mask("ACCT_12345678 of Project Nightingale (a.k.a. Project N1ghtingale) used sk-live_abcdefghijklmnop1234")).toBe(
      "[masked: custom] of [masked: custom] (a.k.a. Project N1ghtingale) used [masked: api key]",
    );
    // A string is literal: its RegExp characters match only themselves.
    expect(createMasker(["a.b"])("a.b axb")).toBe("[masked: custom] axb");
    // A pattern that can match nothing (x*) does not scatter markers.
    expect(mask("plain words")).toBe("plain words");
  });

  it("masks extra patterns before truncating too", () => {
    const mask = createMasker([/acct_[0-9]{8}/]);
    for (let at = 230; at <= 240; at++) {
      const p = toPreview(`${"z".repeat(at)}acct_12345678 tail`, 240, mask);
      expect(p.preview).not.toMatch(/acct_|1234/);
    }
  });

  it("reads patterns from the env var form, skipping entries that do not compile", () => {
    const invalid: string[] = [];
    const patterns = parseRedactPatterns(JSON.stringify(["/internal-[a-z]+/i", "acct_[0-9]{8}", "(unclosed", 42]), (entry) => invalid.push(entry));
    expect(patterns.map(String)).toEqual(["/internal-[a-z]+/i", "/acct_[0-9]{8}/"]);
    expect(invalid).toEqual(["(unclosed"]);
    expect(parseRedactPatterns("cust-[0-9]+").map(String)).toEqual(["/cust-[0-9]+/"]);
    expect(parseRedactPatterns("[not json", (e) => invalid.push(e))).toEqual([]);
    expect(invalid).toEqual(["(unclosed", "[not json"]);
    expect(parseRedactPatterns(undefined)).toEqual([]);
    expect(parseRedactPatterns("  ")).toEqual([]);
  });

  it("applies a Telemetry's redact option to normalised SDK events and stash previews it ships", async () => {
    const name = `redact-opt-${crypto.randomUUID().slice(0, 8)}`;
    const telemetry = new Telemetry({ source: { agentClass: "ProbeAgent", agentName: name }, queue: env.TELEMETRY_QUEUE, redact: [/acct_[0-9]{8}/] });
    telemetry.emitSdk({
      type: "chat:recovery:exhausted",
      payload: {
        incidentId: `inc-${name}`,
        requestId: "r",
        attempt: 1,
        maxAttempts: 1,
        recoveryKind: "retry",
        reason: "stable_timeout",
        partialText: `refund to acct_87654321 ${"more ".repeat(100)}`,
      },
      timestamp: Date.now(),
    });
    telemetry.stashed(`fiber-${name}`, "billing", { account: "acct_87654321", step: 2 });
    await telemetry.settle();
    const rows = await pollRows<{ type: string; payload: string }>(
      "SELECT type, payload FROM events WHERE agent_name = ?",
      [name],
      (r) => r.some((x) => x.type === "fiber.stashed") && r.some((x) => x.type === "chat.recovery.exhausted"),
    );
    for (const r of rows) {
      expect(r.payload).not.toContain("87654321");
      expect(r.payload).toContain("[masked: custom]");
    }
    // normalizeSdkEvent alone (no Telemetry) masks the built-in shapes only.
    const plain = normalizeSdkEvent({ type: "fiber:run:failed", payload: { fiberName: "f", error: "acct_87654321 token=abc" }, timestamp: 1 });
    expect(plain?.payload).toMatchObject({ error: "acct_87654321 token=[masked: token]" });
  });

  it("applies TELEMETRY_REDACT_PATTERNS to an agent with the withTelemetry mixin", async () => {
    const { name, stub } = await probe();
    await stub.startHangingFiber(undefined, "probe-hang", { note: "waiting on INTERNAL-TICKET-4821", token: "t0k3n-v4lue" });
    const rows = await pollRows<{ payload: string }>(
      "SELECT payload FROM events WHERE agent_name = ? AND type = 'fiber.stashed'",
      [name],
      (r) => r.length === 1,
    );
    const preview = JSON.parse(rows[0]!.payload).snapshot.preview as string;
    expect(preview).toContain("waiting on [masked: custom]");
    expect(preview).toContain('"token":"[masked: token]"');
    expect(preview).not.toContain("4821");
    expect(preview).not.toContain("t0k3n");
  });
});
