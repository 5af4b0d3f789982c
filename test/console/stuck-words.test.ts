import { describe, expect, it } from "vitest";
import { bulkTargetWhy, stuckDetail, stuckFor } from "../../console/stuck-words";
import { DEFAULT_STUCK_CONFIG, type StuckConfig, type StuckEntry } from "../../src/store/read-models";

// The store returns a stuck finding's facts (src/store/read-models/stuck.ts); the console says them in one sentence
// for the page, the /stuck JSON, the bulk preview and the alert. These are the sentences an operator reads.

const MIN = 60_000;
const T = Date.UTC(2026, 10, 24, 12, 0, 0);
const cfg = (over: Partial<StuckConfig> = {}): StuckConfig => ({ ...DEFAULT_STUCK_CONFIG, ...over });
const who = { agentClass: "LossyAgent", agentName: "a-1" };
const run = (over: Partial<Extract<StuckEntry, { rule: "no_progress" }>> = {}): StuckEntry => ({
  ...who,
  rule: "no_progress",
  subjectKind: "run",
  subjectId: "run-1",
  since: T,
  runKind: "fiber",
  runName: "long-export",
  lastSeen: T,
  confirmedAt: null,
  wakeAt: null,
  ...over,
});

describe("stuckFor", () => {
  it("says how long in the largest two units", () => {
    expect([45_000, 23 * MIN, 125 * MIN, 120 * MIN, (3 * 1440 + 4 * 60) * MIN, 2 * 1440 * MIN, -5_000].map(stuckFor)).toEqual([
      "45s",
      "23m",
      "2h 5m",
      "2h",
      "3d 4h",
      "2d",
      "0s",
    ]);
  });
});

describe("stuckDetail", () => {
  it("no_progress: names the run, its silence against the threshold, and whether it is known alive", () => {
    expect(stuckDetail(run(), T + 11 * MIN, cfg({ no_progress: 10 }))).toBe(
      'No progress: this fiber "long-export" has had no progress event since 2026-11-24T12:00:00Z (11m, threshold 10m); no reconciliation has confirmed it is still alive.',
    );
    expect(stuckDetail(run({ runKind: "managed_fiber", runName: null, confirmedAt: T + 11 * MIN }), T + 12 * MIN, cfg())).toBe(
      "No progress: this managed fiber has had no progress event since 2026-11-24T12:00:00Z (12m, threshold 15m); it is still running in the agent (confirmed 2026-11-24T12:11:00Z), so it is running and making no progress.",
    );
    expect(stuckDetail(run({ runKind: "task", wakeAt: T + 60 * MIN, since: T + 60 * MIN }), T + 90 * MIN, cfg())).toContain(
      'this task run "long-export" has had no progress event since 2026-11-24T12:00:00Z (1h 30m, threshold 15m); it was waiting to wake at 2026-11-24T13:00:00Z and has not.',
    );
    // A kind the console has no words for is shown as stored.
    expect(stuckDetail(run({ runKind: "workflow_step" }), T + 20 * MIN, cfg())).toContain('this workflow_step "long-export"');
  });

  it("incident_no_attempt: counts the attempts and says when the agent last reported it recovering", () => {
    const inc = (attempts: number, confirmedAt: number | null): StuckEntry => ({
      ...who,
      rule: "incident_no_attempt",
      subjectKind: "incident",
      subjectId: "inc-1",
      since: T,
      incidentKind: "chat",
      lastSeen: T,
      attempts,
      confirmedAt,
    });
    expect(stuckDetail(inc(0, null), T + 16 * MIN, cfg())).toBe(
      "Recovery not attempted: this chat incident is open with no attempt reported and nothing has happened since 2026-11-24T12:00:00Z (16m, threshold 15m).",
    );
    expect(stuckDetail(inc(1, null), T + 16 * MIN, cfg())).toContain("is open after 1 attempt and");
    expect(stuckDetail(inc(3, T + MIN), T + 16 * MIN, cfg())).toBe(
      "Recovery not attempted: this chat incident is open after 3 attempts and nothing has happened since 2026-11-24T12:00:00Z (16m, threshold 15m); the agent still reported it as recovering at 2026-11-24T12:01:00Z.",
    );
  });

  it("alarm_overdue: how late the alarm was when the console asked, against the grace, whatever the time now", () => {
    const e: StuckEntry = { ...who, rule: "alarm_overdue", subjectKind: "agent", subjectId: "LossyAgent/a-1", since: T, askedAt: T + 20 * MIN, nextAlarmAt: T };
    const said =
      "Alarm overdue: when the console asked at 2026-11-24T12:20:00Z, the agent's alarm had been due since 2026-11-24T12:00:00Z (20m late, grace 5m) and had not run; opening the agent page asks again.";
    expect(stuckDetail(e, T + 20 * MIN, cfg())).toBe(said);
    expect(stuckDetail(e, T + 600 * MIN, cfg())).toBe(said);
  });

  it("skipped_no_reason: a skipped recovery and a skipped chat turn read apart, with the look-back", () => {
    const base = { ...who, rule: "skipped_no_reason" as const, since: T };
    expect(stuckDetail({ ...base, subjectKind: "incident", subjectId: "inc-2", skipped: "recovery", incidentKind: "chat" }, T, cfg())).toBe(
      "Skipped without a reason: the agent skipped recovering this chat incident at 2026-11-24T12:00:00Z and gave no reason (looking back 1d).",
    );
    expect(stuckDetail({ ...base, subjectKind: "run", subjectId: "req-1", skipped: "chat_turn", incidentKind: null }, T, cfg({ skipped_no_reason: 90 }))).toBe(
      'Skipped without a reason: the SDK finished this chat turn as "skipped" at 2026-11-24T12:00:00Z and no reason came with it (looking back 1h 30m).',
    );
  });
});

describe("bulkTargetWhy", () => {
  it("adds the stuck finding's sentence to the criteria met, and leaves a target without one as it is", () => {
    const stuck = run();
    const matched = { agentClass: false, incidentReason: null, status: null };
    expect(bulkTargetWhy({ ...who, matched, stuck }, T + 20 * MIN, cfg())).toBe(
      `stuck (no_progress) since 2026-11-24T12:00:00.000Z: ${stuckDetail(stuck, T + 20 * MIN, cfg())}`,
    );
    const open = { agentClass: true, incidentReason: null, status: { status: "open_incidents" as const, count: 1, capped: false } };
    expect(bulkTargetWhy({ ...who, matched: open, stuck: null }, T, cfg())).toBe("class LossyAgent; 1 open incident(s)");
  });
});
