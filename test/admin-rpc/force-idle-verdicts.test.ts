import { describe, expect, it } from "vitest";
import type { ForceIdleFacts, StatusOutput } from "../../src/admin-rpc/contract";
import { forceIdleAnswer } from "../../src/admin-rpc/force-idle-verdicts";

// Force idle's answer from contract 10 is facts; the client judges them, so an operator reads the same verdicts as
// when the agent judged them itself (contract 6–9), and an older agent's own verdicts still read as they were.

const status = (chatRecoveryIncidents: StatusOutput["chatRecoveryIncidents"] = []): StatusOutput => ({
  status: "idle",
  runCount: 0,
  nextAlarm: null,
  schedules: [],
  pendingScheduleCount: 0,
  chatRecoveryIncidents,
  eventsShippedThrough: null,
  recoveryPause: null,
  telemetry: null,
});
const record = (incidentId: string, s: string) => ({
  key: `cf:chat-recovery:incident:${incidentId}`,
  incidentId,
  status: s,
  attempt: 1,
  reason: null,
  requestId: null,
});

describe("force idle's facts, judged by the client", () => {
  it("a runFiber still running and evicted, an idle row, a cancelled task and a submission cancelled mid-turn", () => {
    const facts: ForceIdleFacts = {
      noop: false,
      instance: "i-1",
      before: status([record("open-1", "attempting"), record("done-1", "exhausted")]),
      after: status(),
      runs: [
        { kind: "fiber", runId: "f1", name: "ticker", rowId: "f1", source: "row", wasRunning: true, running: true },
        { kind: "fiber", runId: "f2", name: "left", rowId: "f2", source: "row", wasRunning: false, running: false },
        { kind: "task", runId: "t1", name: "import", rowId: null, taskRunId: "t1", source: "task", wasRunning: true, running: false },
      ],
      turns: [{ runId: "req-1", ref: "req-1", submission: true, wasRunning: true, ended: false, stuck: false, sdkStatus: "aborted" }],
      hook: false,
      settleMs: 1000,
      hookIncidents: ["turn-9"],
      evicted: true,
      abortedRuns: ["f1", "f2"],
      cancelledFibers: [],
      clearedIncidents: ["cf:chat-recovery:incident:open-1", "cf:chat-recovery:incident:done-1"],
    };
    const r = forceIdleAnswer.parse(facts);
    expect(r.ended).toEqual([
      { kind: "chat_turn", runId: "req-1", ref: "req-1", name: null, stopped: true, how: "cancelled", why: "submission_cancelled", sdkStatus: "aborted" },
      { kind: "fiber", runId: "f1", ref: "f1", name: "ticker", stopped: true, how: "evicted", why: "evicted" },
      { kind: "fiber", runId: "f2", ref: "f2", name: "left", stopped: true, how: "not_running", why: "idle_row_removed" },
      { kind: "task", runId: "t1", ref: "t1", name: "import", stopped: true, how: "cancelled", why: "tasks_cancelled" },
    ]);
    // Work kept running without a hook to stop it: the notice says so; the eviction stopped it.
    expect(r.notice).toEqual({ code: "unstopped", cause: "no_hook" });
    expect(r.evicted).toBe(true);
    // Only the incident the SDK was still recovering is one this action closed; the exhausted one is reported apart.
    expect(r.incidents).toEqual([
      { incidentId: "open-1", kind: "chat" },
      { incidentId: "turn-9", kind: "hook" },
    ]);
    expect(r.alreadyClosed).toEqual([{ incidentId: "done-1", status: "exhausted" }]);
  });

  it("a chat turn that had not ended after the settle time reads still running, or stopped by the eviction", () => {
    const turn = { runId: "req-2", ref: "chat_abc", submission: false, wasRunning: true, ended: false, stuck: true, sdkStatus: null };
    const base = { noop: false, instance: "i-2", before: status(), after: status(), turns: [turn], settleMs: 750 };
    const kept = forceIdleAnswer.parse({ ...base, evicted: false });
    expect(kept.ended).toEqual([
      {
        kind: "chat_turn",
        runId: "req-2",
        ref: "chat_abc",
        name: null,
        stopped: false,
        how: "still_running",
        why: "chat_not_ended",
        settleMs: 750,
        sdkStatus: null,
      },
    ]);
    expect(kept.notice).toEqual({ code: "unstopped", cause: "chat_not_ended" });
    const evicted = forceIdleAnswer.parse({ ...base, evicted: true });
    expect(evicted.ended[0]).toMatchObject({ stopped: true, how: "evicted", why: "chat_not_ended" });
  });

  it("a no-op answers nothing ended, and an older mixin's own verdicts pass as they came", () => {
    const noop = forceIdleAnswer.parse({ noop: true, instance: "i-3", before: status(), after: status() });
    expect(noop).toMatchObject({ noop: true, ended: [], incidents: [], alreadyClosed: [], notice: null, abortedRuns: [], evicted: false });
    const older = {
      noop: false,
      instance: "i-4",
      before: status(),
      after: status(),
      ended: [{ kind: "fiber", runId: "f9", ref: "f9", name: null, stopped: true, how: "hook", why: "hook" }],
      incidents: [],
      evicted: false,
      notice: null,
      abortedRuns: ["f9"],
      cancelledFibers: [],
      clearedIncidents: [],
    };
    expect(forceIdleAnswer.parse(older).ended).toEqual(older.ended);
  });

  it("facts of the wrong shape are refused, not judged", () => {
    expect(forceIdleAnswer.safeParse({ noop: false, instance: "i-5", before: status(), after: status(), runs: "f1" }).success).toBe(false);
  });
});
