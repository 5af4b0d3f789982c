import { describe, expect, it } from "vitest";
import { type LiveWork, type OpenWork, reconcileFindings } from "../../../worker/reconcile/compare";

const NOW = 1_800_000_000_000;
const MIN = 10 * 60_000;
const old = NOW - MIN - 1;
const fresh = NOW - 1_000;

const live = (over: Partial<LiveWork> = {}): LiveWork => ({ status: "idle", liveRunIds: new Set(), chatRecords: new Map(), ...over });
const open = (over: Partial<OpenWork> = {}): OpenWork => ({ runs: [], incidents: [], sessions: [], ...over });
const judge = (o: OpenWork, l: LiveWork) => reconcileFindings(o, l, { now: NOW, minAgeMs: MIN });

describe("reconciliation: projections against what the agent answers", () => {
  it("closes a run the agent no longer has as ended, not reported, and confirms one it still runs", () => {
    const findings = judge(
      open({ runs: [{ kind: "fiber", runId: "gone", name: "job", lastSeen: old }, { kind: "task", runId: "t-1", name: "import", lastSeen: old }] }),
      live({ status: "running", liveRunIds: new Set(["t-1"]) }),
    );
    expect(findings).toEqual([
      expect.objectContaining({ type: "run.reconciled", kind: "fiber", runId: "gone", finding: "ended_unreported" }),
      expect.objectContaining({ type: "run.reconciled", kind: "task", runId: "t-1", finding: "confirmed_running" }),
    ]);
  });

  it("leaves work whose last event is younger than the configured age alone: its events may be in flight", () => {
    expect(judge(open({ runs: [{ kind: "fiber", runId: "r", name: null, lastSeen: fresh }], sessions: [{ name: "s", lastSeen: fresh }] }), live())).toEqual([]);
  });

  it("does not repeat a confirmation within the same age", () => {
    const run = { kind: "managed_fiber" as const, runId: "m", name: "sync", lastSeen: old };
    const l = live({ status: "running", liveRunIds: new Set(["m"]) });
    expect(judge(open({ runs: [{ ...run, confirmedAt: NOW - 60_000 }] }), l)).toEqual([]);
    expect(judge(open({ runs: [{ ...run, confirmedAt: NOW - MIN - 1 }] }), l)).toHaveLength(1);
  });

  it("matches a chat turn by the request id of a live run, and says nothing while a busy agent shows no runs", () => {
    const turn = { kind: "chat_turn" as const, runId: "req-7", name: null, lastSeen: old };
    expect(judge(open({ runs: [turn] }), live({ status: "running", liveRunIds: new Set(["f1", "req-7"]) }))[0]).toMatchObject({ finding: "confirmed_running" });
    expect(judge(open({ runs: [turn] }), live({ status: "running" }))).toEqual([]);
    expect(judge(open({ runs: [turn] }), live({ status: "idle" }))[0]).toMatchObject({ finding: "ended_unreported" });
  });

  it("closes a chat incident by the agent's own recovery record, and keeps one still recovering open", () => {
    const chat = (id: string) => ({ incidentId: id, kind: "chat", fiberId: null, requestId: id.split(":")[0]!, lastSeen: old });
    const findings = judge(
      open({ incidents: [chat("a:m1"), chat("b:m1"), chat("c:m1")] }),
      live({
        chatRecords: new Map([
          ["a:m1", { status: "attempting", reason: null, requestId: "a" }],
          ["b:m1", { status: "exhausted", reason: "max_attempts_exceeded", requestId: "b" }],
        ]),
      }),
    );
    expect(findings.map((f) => [f.type === "incident.reconciled" && f.incidentId, f.type === "incident.reconciled" && f.finding])).toEqual([
      ["a:m1", "confirmed_open"],
      ["b:m1", "not_recovering"],
      ["c:m1", "not_recovering"],
    ]);
    expect(findings[1]).toMatchObject({ detail: expect.stringContaining("exhausted (max_attempts_exceeded)") });
  });

  it("keeps a fiber incident open while the fiber's row waits for recovery; closes it when the row is gone", () => {
    const inc = { incidentId: "fiber:A/a/f1", kind: "fiber", fiberId: "f1", requestId: null, lastSeen: old };
    expect(judge(open({ incidents: [inc] }), live({ liveRunIds: new Set(["f1"]) }))[0]).toMatchObject({ finding: "confirmed_open" });
    expect(judge(open({ incidents: [inc] }), live())[0]).toMatchObject({ finding: "not_recovering" });
  });

  it("ends a running session only when the agent says it is not running", () => {
    const s = { name: "support-1", lastSeen: old };
    expect(judge(open({ sessions: [s] }), live({ status: "running" }))).toEqual([]);
    expect(judge(open({ sessions: [s] }), live({ status: "idle" }))).toEqual([{ type: "session.reconciled", name: "support-1", finding: "ended_unreported", detail: expect.stringContaining("idle") }]);
  });
});
