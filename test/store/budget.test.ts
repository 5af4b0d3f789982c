import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { exhaustingSoon, forecastExhaustion, incidentBudget, respentLastHour } from "../../src/store/read-models/budget";
import { makeEvent } from "../fixtures/events";
import { ingest, ingestWithCost } from "./store-helpers";

const MIN = 60_000;
const uid = () => crypto.randomUUID().slice(0, 8);

/** A chat incident's attempts at the given times (attempt n at times[n-1]), still open. */
function attemptsAt(agentName: string, incidentId: string, times: number[], maxAttempts = 5): TelemetryEvent[] {
  const corr = { incidentId, requestId: `req-${incidentId}` };
  const base = { maxAttempts, recoveryKind: "continue" as const };
  return [
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr, time: times[0]! }),
    ...times.map((time, i) => makeEvent("chat.recovery.attempt", { ...base, attempt: i + 1 }, { agentName, corr, time })),
  ];
}

describe("forecastExhaustion", () => {
  const T = Date.UTC(2026, 10, 24, 12);
  it("is unknown below 2 attempts, or without a maximum", () => {
    expect(forecastExhaustion({ attempt: 1, maxAttempts: 5, firstAttemptAt: T, lastAttemptAt: T }).basis).toBe("unknown");
    expect(forecastExhaustion({ attempt: 3, maxAttempts: null, firstAttemptAt: T, lastAttemptAt: T + 2 * MIN }).basis).toBe("unknown");
  });

  it("projects the attempt that exceeds the maximum at the incident's own mean interval", () => {
    // 3 attempts, one a minute; the SDK exhausts at attempt 6 (> 5): 3 more minutes after the last.
    expect(forecastExhaustion({ attempt: 3, maxAttempts: 5, firstAttemptAt: T, lastAttemptAt: T + 2 * MIN })).toEqual({
      basis: "attempt_rate",
      at: T + 5 * MIN,
      intervalMs: MIN,
      bound: "max_attempts",
    });
  });

  it("is sooner when the no-progress window ends first: the first attempt after it exhausts", () => {
    const f = forecastExhaustion({ attempt: 2, maxAttempts: 10, firstAttemptAt: T, lastAttemptAt: T + MIN, noProgressDeadline: T + 2.5 * MIN });
    expect(f).toEqual({ basis: "attempt_rate", at: T + 3 * MIN, intervalMs: MIN, bound: "no_progress" });
  });
});

describe("forecastExhaustion: the interruption budget", () => {
  it("forecasts an eviction loop whose attempt counter never moves by its dead isolates' rate", () => {
    const T = Date.UTC(2026, 10, 24, 12);
    // The counter stays at 1 (each recovery made a little progress), but 2 of 5 isolates died in 30 s.
    const f = forecastExhaustion({
      attempt: 1,
      maxAttempts: 3,
      firstAttemptAt: T + 30_000,
      lastAttemptAt: T + 30_000,
      interrupted: { count: 2, max: 5, firstSeenAt: T },
    });
    expect(f).toEqual({ basis: "attempt_rate", at: T + 30_000 + 3 * 30_000, intervalMs: 30_000, bound: "max_interrupted_attempts" });
    expect(
      forecastExhaustion({ attempt: 1, maxAttempts: 3, firstAttemptAt: T, lastAttemptAt: T, interrupted: { count: 1, max: 5, firstSeenAt: T } }).basis,
    ).toBe("unknown");
  });
});

describe("incidentBudget", () => {
  const row = { incidentId: "i-1", kind: "chat", attempts: 2, maxAttempts: 5, firstSeen: 1_000_000, lastSeen: 1_060_000 };
  it("uses the agent's own record and bounds: work against maxRecoveryWork, both timers, the forecast from the counter's start", () => {
    const now = 1_070_000;
    const b = incidentBudget(
      row,
      {
        ok: true,
        value: {
          now,
          config: { maxAttempts: 5, stableTimeoutMs: 10_000, noProgressTimeoutMs: 300_000, maxRecoveryWork: 10_000, maxInterruptedAttempts: 5 },
          records: [
            {
              incidentId: "i-1",
              status: "attempting",
              reason: null,
              attempt: 3,
              maxAttempts: 5,
              firstSeenAt: 1_000_000,
              lastAttemptAt: 1_060_000,
              lastProgressAt: 1_000_000,
              work: 42,
              interruptedAttempts: 1,
              transientRetries: 0,
            },
          ],
        },
      },
      now,
    );
    expect(b).toMatchObject({
      source: "agent",
      attempts: { used: 3, limit: 5 },
      work: { used: 42, limit: 10_000 },
      interruptedAttempts: { used: 1, limit: 5 },
      stableTimer: { deadline: 1_070_000, leftMs: 0 },
      noProgressTimer: { deadline: 1_300_000, leftMs: 230_000 },
      // 3 attempts in 60 s: one every 30 s; attempt 6 exceeds 5, 3 intervals after the last.
      forecast: { basis: "attempt_rate", at: 1_150_000, intervalMs: 30_000, bound: "max_attempts" },
    });
  });

  it("falls back to the events' figures when the agent cannot answer, and says why", () => {
    const b = incidentBudget(row, { ok: false, error: { code: "unsupported" } }, 2_000_000);
    expect(b).toMatchObject({ source: "events", attempts: { used: 2, limit: 5 }, work: { used: null }, agentError: "unsupported", stableTimer: null });
    expect(incidentBudget({ ...row, kind: "fiber" }, null, 0).source).toBe("none");
  });
});

describe("exhaustingSoon", () => {
  it("lists open chat incidents forecast to exhaust within the window, soonest first, from their own events", async () => {
    const agentName = `budget-${uid()}`;
    const t0 = Math.floor((Date.now() - 3 * 86_400_000) / MIN) * MIN;
    const fast = `fast-${agentName}`;
    const slow = `slow-${agentName}`;
    const once = `once-${agentName}`;
    const closed = `closed-${agentName}`;
    await ingest([
      // 3 of 4 attempts a minute apart: exhausts at attempt 5, 2 minutes after the last.
      ...attemptsAt(agentName, fast, [t0, t0 + MIN, t0 + 2 * MIN], 4),
      // An attempt an hour: its next two attempts are 2 hours away.
      ...attemptsAt(agentName, slow, [t0 - 2 * 60 * MIN, t0 - 60 * MIN, t0 + 2 * MIN], 4),
      // One attempt: no rate, never listed.
      ...attemptsAt(agentName, once, [t0 + 2 * MIN], 4),
      // Fast, but exhausted already: not open.
      ...attemptsAt(agentName, closed, [t0, t0 + MIN, t0 + 2 * MIN], 4),
      makeEvent(
        "chat.recovery.exhausted",
        { maxAttempts: 4, recoveryKind: "continue", attempt: 4, reason: "max_attempts_exceeded" },
        { agentName, corr: { incidentId: closed }, time: t0 + 2 * MIN + 1 },
      ),
    ]);
    const now = t0 + 2 * MIN;
    const soon = await exhaustingSoon(env.DB, now, 15 * MIN, 500);
    const mine = soon.items.filter((i) => i.agentName === agentName);
    expect(mine.map((i) => [i.incidentId, i.attempts, i.maxAttempts, i.forecast.at])).toEqual([[fast, 3, 4, t0 + 4 * MIN]]);
    // A window long enough for the slow one lists it after the fast one.
    const wide = (await exhaustingSoon(env.DB, now, 3 * 60 * MIN, 500)).items.filter((i) => i.agentName === agentName).map((i) => i.incidentId);
    expect(wide).toEqual([fast, slow]);
  });
});

describe("respentLastHour", () => {
  it("sums the tokens recovery re-spent per agent and per class over the last hour, each event once", async () => {
    const a = `spend-a-${uid()}`;
    const b = `spend-b-${uid()}`;
    const t0 = Math.floor((Date.now() - 2 * 86_400_000) / MIN) * MIN;
    const usage = (agentName: string, tokens: number, time: number, incidentId: string | null) =>
      makeEvent("model.usage", { inputTokens: tokens, outputTokens: 10 }, { agentName, time, corr: incidentId ? { incidentId } : {} });
    const events = [
      usage(a, 1000, t0, `inc-${a}`),
      usage(a, 2000, t0 + 10 * MIN, `inc-${a}`),
      usage(b, 500, t0 + 20 * MIN, `inc-${b}`),
      // Outside recovery: not re-spent.
      usage(a, 9000, t0 + 20 * MIN, null),
      // Two hours earlier: outside the hour.
      usage(b, 7000, t0 - 120 * MIN, `inc-${b}`),
    ];
    const first = await ingestWithCost(events, t0 + 30 * MIN);
    // A redelivery of the same events adds nothing.
    const again = await ingestWithCost(events, t0 + 31 * MIN);
    const r = await respentLastHour(env.DB, t0 + 30 * MIN);
    const mine = r.agents.filter((x) => x.agentName === a || x.agentName === b);
    expect(mine).toEqual([
      { agentClass: "ProbeAgent", agentName: a, tokens: 3020 },
      { agentClass: "ProbeAgent", agentName: b, tokens: 510 },
    ]);
    const probe = r.classes.find((c) => c.agentClass === "ProbeAgent")!;
    expect(probe.tokens).toBeGreaterThanOrEqual(3530);
    // What it cost: one respent_rollups row per agent and 5-minute bucket with re-spent tokens (4 here), the row in its
    // key's b-tree (the table is WITHOUT ROWID: no separate key entry): 4; a redelivery writes none.
    expect(first.rowsWrittenByTable.respent_rollups).toBe(4);
    expect(again.rowsWrittenByTable.respent_rollups ?? 0).toBe(0);
  });
});
