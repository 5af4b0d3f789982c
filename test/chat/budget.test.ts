import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { AIChatAgent } from "@cloudflare/ai-chat";
import { Think } from "@cloudflare/think";
import { DEFAULT_CHAT_RECOVERY_MAX_WORK, resolveChatRecoveryConfig } from "agents/chat";
import { describe, expect, it } from "vitest";
import { boundsOf } from "../../src/admin-rpc/recovery-budget";
import { getIncident, incidentBudget } from "../../src/store/read-models";
import { consoleAdminClient } from "../../worker/admin-client";
import type { ModelStep } from "../fixtures/chat-model";
import { pollRows } from "../helpers";
import { chatStub, until } from "./drive";

/**
 * The recovery budget of an open chat incident, compared with the SDK's own record of it: a Think agent evicted
 * mid-turn, twice, leaves an incident the SDK is still recovering (its recovery turns stall). The console's budget
 * (admin RPC's adminRecoveryBudget + the incident row) must say what the record says.
 */

const viewer = { email: "viewer@example.com", role: "viewer" as const };
const stall = (...chunks: string[]): ModelStep => ({ kind: "stall", chunks });
type RawRecord = {
  incidentId: string;
  attempt: number;
  maxAttempts: number;
  status: string;
  lastProgressAt?: number;
  firstSeenAt: number;
  lastAttemptAt: number;
  progress?: number;
  workBaseline?: number;
  interruptedAttempts?: number;
  transientRetries?: number;
};

describe("recovery budget on a Think agent", () => {
  it("attempts, work, interrupted attempts and timers are the SDK record's; the forecast needs 2 attempts or 2 dead isolates", async () => {
    const agentName = `budget-think-${crypto.randomUUID().slice(0, 8)}`;
    let stub = await chatStub("ThinkChatFixture", agentName);
    await stub.setPolicy({ maxAttempts: 4, maxInterruptedAttempts: 6, noProgressTimeoutMs: 120_000 });
    await stub.setScript([stall("Migrating"), stall(" the"), stall(" tenant"), stall(" now")]);
    expect((await stub.submitAndStream("migrate the tenant")).streamed).toBe(true);
    for (let i = 0; i < 2; i++) {
      const before = (await stub.modelCalls()).length;
      await stub.evict().catch(() => {});
      stub = await chatStub("ThinkChatFixture", agentName);
      await runDurableObjectAlarm(stub as never);
      expect(await until(async () => (await stub.modelCalls()).length > before, 10_000)).toBe(true);
      await scheduler.wait(50);
    }
    await stub.settleTelemetry();
    const [sdk] = (await stub.recoveryRecords()) as unknown as RawRecord[];
    // Still being recovered: an attempt scheduled or running (the recovery turn stalls).
    expect(["scheduled", "attempting"]).toContain(sdk!.status);
    await pollRows("SELECT 1 FROM incidents WHERE agent_name = ? AND incident_id = ? AND status = 'open'", [agentName, sdk!.incidentId], (r) => r.length === 1);

    const target = { agentClass: "ThinkChatFixture", agentName };
    const answer = await consoleAdminClient(env, viewer).recoveryBudget(target, { incidentId: sdk!.incidentId });
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(answer.value.config).toEqual({
      maxAttempts: 4,
      stableTimeoutMs: 2000,
      noProgressTimeoutMs: 120_000,
      maxRecoveryWork: DEFAULT_CHAT_RECOVERY_MAX_WORK,
      maxInterruptedAttempts: 6,
    });
    expect(answer.value.records).toEqual([
      {
        incidentId: sdk!.incidentId,
        status: sdk!.status,
        reason: null,
        attempt: sdk!.attempt,
        maxAttempts: sdk!.maxAttempts,
        firstSeenAt: sdk!.firstSeenAt,
        lastAttemptAt: sdk!.lastAttemptAt,
        lastProgressAt: sdk!.lastProgressAt ?? sdk!.firstSeenAt,
        work: (sdk!.progress ?? 0) - (sdk!.workBaseline ?? sdk!.progress ?? 0),
        interruptedAttempts: sdk!.interruptedAttempts ?? 0,
        transientRetries: sdk!.transientRetries ?? 0,
      },
    ]);

    // What the incident page shows, from the same answer.
    const row = (await getIncident(env.DB, sdk!.incidentId, target))!;
    const b = incidentBudget(row, answer, answer.value.now);
    expect(b).toMatchObject({
      source: "agent",
      attempts: { used: sdk!.attempt, limit: 4 },
      interruptedAttempts: { used: sdk!.interruptedAttempts ?? 0, limit: 6 },
      stableTimer: { deadline: sdk!.lastAttemptAt + 2000 },
      noProgressTimer: { deadline: (sdk!.lastProgressAt ?? sdk!.firstSeenAt) + 120_000 },
    });
    // A rate needs 2 counted attempts, or 2 dead isolates (the interruption budget, which progress never resets).
    const rated = sdk!.attempt >= 2 || (sdk!.interruptedAttempts ?? 0) >= 2;
    expect(b.forecast.basis).toBe(rated ? "attempt_rate" : "unknown");
    // The events' own maximum is the SDK's too.
    expect(row.maxAttempts).toBe(sdk!.maxAttempts);
  });

  it("reads the bounds through the SDK's own resolution of chatRecovery, which both chat classes keep", () => {
    for (const cls of [Think, AIChatAgent]) expect(typeof (cls.prototype as unknown as Record<string, unknown>)._resolveChatRecoveryConfig).toBe("function");
    const raw = { maxAttempts: 4, maxRecoveryWork: Number.POSITIVE_INFINITY };
    const sdk = resolveChatRecoveryConfig(raw);
    expect(boundsOf(sdk as unknown as Record<string, unknown>)).toEqual({
      maxAttempts: 4,
      stableTimeoutMs: sdk.stableTimeoutMs,
      noProgressTimeoutMs: sdk.noProgressTimeoutMs,
      maxRecoveryWork: null,
      maxInterruptedAttempts: sdk.maxInterruptedAttempts,
    });
    expect(boundsOf(null)).toBeNull();
  });
});
