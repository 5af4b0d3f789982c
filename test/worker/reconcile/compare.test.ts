import { describe, expect, it } from "vitest";
import type { FoundRun } from "../../../src/admin-rpc";
import { fillFindings, type LiveWork, type OpenWork, reconcileFindings } from "../../../worker/reconcile/compare";

const NOW = 1_800_000_000_000;
const MIN = 10 * 60_000;
const old = NOW - MIN - 1;
const fresh = NOW - 1_000;

const live = (over: Partial<LiveWork> = {}): LiveWork => ({ status: "idle", liveRunIds: new Set(), chatRecords: new Map(), ...over });
const open = (over: Partial<OpenWork> = {}): OpenWork => ({ runs: [], incidents: [], sessions: [], ...over });
const judge = (o: OpenWork, l: LiveWork) => reconcileFindings(o, l, { now: NOW, minAgeMs: MIN });
/** A run as an agent's adminFindRuns answers it. */
const found = (over: Partial<FoundRun> & Pick<FoundRun, "runId" | "kind" | "state">): FoundRun => ({
  source: over.kind === "task" ? "task" : "managed_fiber",
  name: null,
  definition: null,
  requestId: null,
  createdAt: null,
  startedAt: null,
  settledAt: null,
  error: null,
  statusMessage: null,
  step: null,
  attempt: null,
  wakeAt: null,
  ...over,
});
const asked = (runs: FoundRun[], missing: string[] = []): Pick<LiveWork, "records" | "missing"> => ({
  records: new Map(runs.map((r) => [r.runId, r])),
  missing: new Set(missing),
});

describe("reconciliation: projections against what the agent answers", () => {
  it("closes a run the agent no longer has as ended, not reported, and confirms one it still runs", () => {
    const findings = judge(
      open({
        runs: [
          { kind: "fiber", runId: "gone", name: "job", lastSeen: old },
          { kind: "task", runId: "t-1", name: "import", lastSeen: old },
        ],
      }),
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
    expect(judge(open({ sessions: [s] }), live({ status: "idle" }))).toEqual([
      { type: "session.reconciled", name: "support-1", finding: "ended_unreported", detail: expect.stringContaining("idle"), lastEventAt: old },
    ]);
  });

  it("asks before it judges: a run the agent still records ends as recorded; ended_unreported only for one it has no record of; one not asked yet waits", () => {
    const runs = ["t-done", "t-failed", "t-gone", "t-unasked"].map((runId) => ({ kind: "task" as const, runId, name: "etl", lastSeen: old }));
    const findings = judge(
      open({ runs }),
      live({
        ...asked(
          [
            found({ runId: "t-done", kind: "task", state: "completed", settledAt: old + 5 }),
            found({ runId: "t-failed", kind: "task", state: "failed", error: "card declined (attempt 2)" }),
          ],
          ["t-gone"],
        ),
      }),
    );
    expect(findings).toEqual([
      expect.objectContaining({ runId: "t-done", finding: "ended", state: "completed", endedAt: old + 5 }),
      expect.objectContaining({ runId: "t-failed", finding: "ended", state: "failed", error: "card declined (attempt 2)" }),
      expect.objectContaining({ runId: "t-gone", finding: "ended_unreported", detail: expect.stringContaining("has no record") }),
    ]);
  });

  it("judges nothing on a state word the mapping does not know", () => {
    const findings = judge(
      open({ runs: [{ kind: "task", runId: "t-1", name: null, lastSeen: old }] }),
      live(asked([found({ runId: "t-1", kind: "task", state: "paused-by-a-newer-sdk" })])),
    );
    expect(findings).toEqual([]);
  });

  it("confirms a live run with what the agent records it doing (status message, step, wake time)", () => {
    const findings = judge(
      open({ runs: [{ kind: "task", runId: "t-1", name: null, lastSeen: old }] }),
      live({
        status: "waiting",
        liveRunIds: new Set(["t-1"]),
        ...asked([found({ runId: "t-1", kind: "task", state: "waiting", statusMessage: "indexed 2 pages", step: "cool-down", wakeAt: NOW + 1 })]),
      }),
    );
    expect(findings).toEqual([
      expect.objectContaining({ finding: "confirmed_running", state: "waiting", statusMessage: "indexed 2 pages", step: "cool-down", wakeAt: NOW + 1 }),
    ]);
  });

  it("keeps a managed fiber's incident open while the SDK keeps it interrupted, and closes it with its run once it is settled", () => {
    const inc = { incidentId: "fiber:A/a/mf", kind: "fiber", fiberId: "mf", requestId: null, lastSeen: old };
    expect(judge(open({ incidents: [inc] }), live(asked([found({ runId: "mf", kind: "managed_fiber", state: "interrupted" })])))).toEqual([
      expect.objectContaining({ type: "incident.reconciled", finding: "confirmed_open", detail: expect.stringContaining("resolveFiber") }),
    ]);
    expect(judge(open({ incidents: [inc] }), live(asked([found({ runId: "mf", kind: "managed_fiber", state: "completed", settledAt: old + 9 })])))).toEqual([
      expect.objectContaining({ type: "incident.reconciled", finding: "not_recovering", fiberStatus: "completed" }),
      expect.objectContaining({ type: "run.reconciled", kind: "managed_fiber", runId: "mf", finding: "ended", state: "completed", endedAt: old + 9 }),
    ]);
  });

  it("reads the reason a recovery hook gave a fiber it left interrupted into its run, once per confirmation", () => {
    const inc = { incidentId: "fiber:A/a/mf", kind: "fiber", fiberId: "mf", requestId: null, lastSeen: old };
    const record = found({ runId: "mf", kind: "managed_fiber", state: "interrupted", settledAt: old + 5, error: "waiting for the CRM" });
    expect(judge(open({ incidents: [inc] }), live(asked([record])))).toEqual([
      expect.objectContaining({ type: "incident.reconciled", finding: "confirmed_open" }),
      expect.objectContaining({
        type: "run.reconciled",
        kind: "managed_fiber",
        runId: "mf",
        finding: "ended",
        state: "interrupted",
        error: "waiting for the CRM",
        endedAt: old + 5,
        detail: expect.stringContaining("resolveFiber"),
      }),
    ]);
    // Confirmed within the age: neither the incident's confirmation nor the reading is repeated.
    expect(judge(open({ incidents: [{ ...inc, confirmedAt: NOW - 1_000 }] }), live(asked([record])))).toEqual([]);
  });

  it("does not end a session of an agent whose work is parked (waiting)", () => {
    expect(judge(open({ sessions: [{ name: "s", lastSeen: old }] }), live({ status: "waiting" }))).toEqual([]);
  });

  it("fills in the runs the console does not know or shows open, and leaves those it already closed", () => {
    const recorded = [
      found({ runId: "new-done", kind: "task", state: "completed" }),
      found({ runId: "new-live", kind: "task", state: "waiting" }),
      found({ runId: "open-done", kind: "task", state: "failed", error: "boom" }),
      found({ runId: "closed", kind: "task", state: "completed" }),
    ];
    const f = fillFindings(
      recorded,
      new Map([
        ["open-done", null],
        ["closed", "completed"],
      ]),
    );
    expect(f.map((x) => x.type === "run.reconciled" && [x.runId, x.finding])).toEqual([
      ["new-done", "ended"],
      ["new-live", "confirmed_running"],
      ["open-done", "ended"],
    ]);
    expect(f[0]).toMatchObject({ detail: expect.stringContaining("its events never arrived") });
    expect(f[2]!.detail).not.toContain("never arrived");
  });

  it("never invents a run for the SDK's own machinery: a chat recovery transport or a carrier that names no turn", () => {
    const recorded = [
      found({ runId: "task_r1", kind: "task", state: "running", name: "__cf_internal_chat_recovery", definition: "__cf_internal_chat_recovery" }),
      found({ runId: "task_c1", kind: "chat_turn", state: "completed", name: "__cf_internal_chat_turn", definition: "__cf_internal_chat_turn" }),
      found({ runId: "req-7", kind: "chat_turn", state: "completed", name: "__cf_internal_chat_turn", requestId: "req-7" }),
      found({ runId: "t-user", kind: "task", state: "completed", name: "import@v1", definition: "import@v1" }),
    ];
    const f = fillFindings(recorded, new Map());
    expect(f.map((x) => x.type === "run.reconciled" && [x.kind, x.runId, x.finding])).toEqual([
      ["chat_turn", "req-7", "ended"],
      ["task", "t-user", "ended"],
    ]);
  });
});
