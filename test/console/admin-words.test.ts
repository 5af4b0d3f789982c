import { describe, expect, it } from "vitest";
import {
  adminErrorWords,
  afterNoticeWords,
  auditNoticeWords,
  ENDED_WHY_WORDS,
  endedRunWords,
  forceIdleIncidentsWords,
  forceIdleNoticeWords,
  UNSTOPPED_CAUSE_WORDS,
} from "../../console/admin-words";
import { ADMIN_ACTIONS } from "../../src/admin-rpc/actions";
import { type AfterNotice, type BusyWork, ENDED_WHYS, type EndedRun, type RunCheck, UNSTOPPED_CAUSES } from "../../src/admin-rpc/contract";
import type { AdminErrorFacts } from "../../src/admin-rpc/inputs";

// The agent package answers codes and facts; the console words them. Every code has its own words, the facts a
// sentence needs appear in it, and what an older mixin (or an older audit row) said is shown as it was.

const run = (over: Partial<EndedRun>): EndedRun => ({ kind: "fiber", runId: "r-1", ref: "r-1", name: "export", stopped: true, how: "cancelled", ...over });
const busy = (over: Partial<BusyWork>): BusyWork => ({
  kind: "queued_callback",
  id: "job-1",
  name: "holdTurn",
  requestId: null,
  step: null,
  since: 1_000,
  holdsAlarm: true,
  ...over,
});
const check = (over: Partial<RunCheck>): RunCheck => ({
  id: "r-1",
  kind: "fiber",
  name: "export",
  now: "running",
  sdkState: "running",
  source: "in_memory",
  ...over,
});
const after = { checks: [] as RunCheck[], busy: [] as BusyWork[], readAt: 6_000, status: "running" as const };

describe("an ended run's why", () => {
  it("has its own words for every code", () => {
    const words = ENDED_WHYS.map((why) => ENDED_WHY_WORDS[why](run({ why, settleMs: 250, sdkStatus: "aborted" })));
    expect(Object.keys(ENDED_WHY_WORDS).sort()).toEqual([...ENDED_WHYS].sort());
    for (const w of words) expect(w.length).toBeGreaterThan(10);
    expect(new Set(words).size).toBe(ENDED_WHYS.length);
  });

  it("says the facts it carries: how long force idle waited, and what the SDK records now", () => {
    const w = endedRunWords(run({ kind: "chat_turn", stopped: false, how: "still_running", why: "chat_not_ended", settleMs: 250, sdkStatus: "running" }));
    expect(w).toContain("250 ms");
    expect(w).toContain("running");
    expect(endedRunWords(run({ kind: "chat_turn", why: "submission_cancelled", sdkStatus: "aborted" }))).toContain("aborted");
    expect(endedRunWords(run({ kind: "chat_turn", how: "not_running", why: "submission_ended", sdkStatus: null }))).toContain("(gone)");
  });

  it("adds the eviction to a chat turn's verdict when the eviction stopped it, and only then", () => {
    const chat = run({ kind: "chat_turn", why: "chat_not_ended", settleMs: 250, sdkStatus: null });
    const evicted = endedRunWords({ ...chat, how: "evicted" });
    expect(evicted.startsWith(endedRunWords({ ...chat, how: "still_running" }))).toBe(true);
    expect(evicted).toContain("evicting");
    expect(endedRunWords(run({ how: "evicted", why: "evicted" }))).toBe(ENDED_WHY_WORDS.evicted(run({})));
  });

  it("shows an older mixin's sentence as it is", () => {
    expect(endedRunWords(run({ detail: "cancelled through cancelFiber and settled" }))).toBe("cancelled through cancelFiber and settled");
  });
});

describe("force idle's notice", () => {
  it("words every cause, naming the runs that kept running and what the eviction does", () => {
    expect(Object.keys(UNSTOPPED_CAUSE_WORDS).sort()).toEqual([...UNSTOPPED_CAUSES].sort());
    const ended = [
      run({ runId: "f-1", name: "ticker", stopped: false, how: "still_running", why: "unstoppable" }),
      run({ runId: "t-1", kind: "chat_turn", name: null, stopped: false, how: "still_running", why: "chat_not_ended", settleMs: 100 }),
      run({ runId: "f-2", name: "done", why: "fiber_cancelled" }),
    ];
    const said = UNSTOPPED_CAUSES.map((cause) => forceIdleNoticeWords({ notice: { code: "unstopped", cause }, ended, evicted: false })!);
    expect(new Set(said).size).toBe(UNSTOPPED_CAUSES.length);
    for (const w of said) expect(w).toMatch(/^2 runs \(ticker, chat turn t-1\) still run in memory: /);
    const evicted = forceIdleNoticeWords({
      notice: { code: "unstopped", cause: "no_hook" },
      ended: [run({ name: "ticker", how: "evicted", why: "evicted" })],
      evicted: true,
    });
    expect(evicted).toMatch(/^1 run \(ticker\) kept running: .*The agent is being evicted to stop it; its row is gone/);
  });

  it("is nothing without a notice, and an older mixin's sentence as it is", () => {
    expect(forceIdleNoticeWords({ notice: null, ended: [], evicted: false })).toBeNull();
    expect(forceIdleNoticeWords({ notice: "1 run (ticker) kept running.", ended: [], evicted: true })).toBe("1 run (ticker) kept running.");
  });
});

describe("force idle's recovery incidents", () => {
  const chat = (incidentId: string) => ({ incidentId, kind: "chat" as const });
  const closed = (status: string, n: number) => Array.from({ length: n }, (_, i) => ({ incidentId: `${status}-${i}`, status }));

  it("counts only the open incidents it closed, and says apart the records of incidents the SDK had already closed", () => {
    // The defect: 62 records the SDK had closed read as "Cleared 62 recovery incident(s)".
    const words = forceIdleIncidentsWords({ incidents: [chat("a")], alreadyClosed: [...closed("exhausted", 59), ...closed("completed", 2)] }, 9);
    expect(words).toBe(
      "Closed 1 open recovery incident. Removed the records of 61 incidents the SDK had already closed (59 exhausted, 2 completed): this action did not close them.",
    );
    expect(words).not.toMatch(/Cleared|62/);
    expect(forceIdleIncidentsWords({ incidents: [], alreadyClosed: closed("exhausted", 1) }, 9)).toBe(
      "Removed the records of 1 incident the SDK had already closed (1 exhausted): this action did not close it.",
    );
    expect(forceIdleIncidentsWords({ incidents: Array.from({ length: 1200 }, (_, i) => chat(`i-${i}`)), alreadyClosed: [] }, 9)).toBe(
      "Closed 1,200 open recovery incidents.",
    );
    expect(forceIdleIncidentsWords({ incidents: [], alreadyClosed: [] }, 9)).toBe("");
  });

  it("does not call an older mixin's records closed incidents: it never said which were open", () => {
    const words = forceIdleIncidentsWords({ incidents: [chat("a"), chat("b")], alreadyClosed: [] }, 8);
    expect(words).toBe("Removed 2 chat-recovery records (this agent's admin mixin is older than contract 9: it does not say which were still open).");
    expect(forceIdleIncidentsWords({ incidents: [], alreadyClosed: [] }, undefined)).toBe("");
  });
});

describe("the read-back's notice", () => {
  const notices: AfterNotice[] = [
    { code: "still_runs" },
    { code: "not_idle", oldMixin: true },
    { code: "alarm_busy", holders: [busy({})] },
    { code: "alarm_unfinished", budgetMs: 1000, busy: [] },
    { code: "not_read_back", action: "force_idle", error: "timeout", alarm: null },
  ];

  it("has words for every code, each different", () => {
    const words = notices.map((n) => afterNoticeWords(n, { ...after, checks: [check({})] }));
    expect(new Set(words.map((w) => w?.slice(0, 30))).size).toBe(notices.length);
    expect(afterNoticeWords(null, after)).toBeNull();
  });

  it("names what still runs from the after-state: the runs not stopped, then the work force idle never touched", () => {
    const a = {
      ...after,
      checks: [check({}), check({ id: "r-2", now: "stopped", sdkState: "gone", source: "none" })],
      busy: [busy({}), busy({ kind: "fiber", id: "r-1" })],
    };
    expect(afterNoticeWords({ code: "still_runs" }, a)).toBe(
      "Force idle did not stop everything: 2 pieces of work still run: a runFiber callback 'export' (r-1): it still runs in memory (its row is removed, so it is not recovered); a queued callback 'holdTurn' is running for 5 s.",
    );
  });

  it("says an alarm's budget, and a failed read-back after an alarm keeps what the alarm said", () => {
    expect(afterNoticeWords({ code: "alarm_unfinished", budgetMs: 1000, busy: [] }, after)).toBe(
      "The alarm started but had not finished after 1000 ms; it goes on in the background.",
    );
    const w = afterNoticeWords(
      { code: "not_read_back", action: "trigger_alarm", error: null, alarm: { code: "alarm_busy", holders: [busy({}), busy({ id: "job-2", name: "tick" })] } },
      after,
    );
    expect(w).toMatch(
      /^The alarm did not run: .*'holdTurn'.*'tick'.* wait for them .*The console could not read the agent again after the alarm \(the agent had not been evicted yet\)\.$/,
    );
  });
});

describe("an audit row's notice", () => {
  it("words the facts a new row stores, and shows an old row's sentence as stored", () => {
    expect(auditNoticeWords({ status: "running", readAt: 6_000, checks: [], busy: [busy({})], notice: { code: "still_runs" } })).toBe(
      "Force idle did not stop everything: 1 piece of work still runs: a queued callback 'holdTurn' is running for 5 s.",
    );
    expect(auditNoticeWords({ status: "running", notice: "Force idle did not stop everything: as said then." })).toBe(
      "Force idle did not stop everything: as said then.",
    );
  });

  it("is nothing for a row without a notice, and never throws on one it cannot read", () => {
    for (const after of [null, "text", { status: "idle", notice: null }, { notice: { code: "from_the_future" } }, { notice: { code: "alarm_busy" } }])
      expect(auditNoticeWords(after)).toBeNull();
  });
});

describe("an admin refusal", () => {
  it("words its facts: the missing mixin, and what to upgrade for an action", () => {
    expect(adminErrorWords({ code: "unsupported", message: "x", facts: { kind: "no_mixin", agentClass: "Plain" } })).toMatch(
      /^Plain does not have the admin mixin \(withAdminRpc/,
    );
    const upgrade = adminErrorWords({
      code: "unsupported",
      message: "x",
      facts: { kind: "upgrade", action: "pause_recovery", rpc: "adminPauseRecovery", since: 5, agentClass: "Old", agentName: "a-1" },
    });
    expect(upgrade).toBe(
      `Old "a-1" cannot take ${ADMIN_ACTIONS.pause_recovery.label.toLowerCase()}: it does not answer adminPauseRecovery, which came with admin contract 5. Upgrade @agent-oncall/admin-rpc (withAdminRpc) in the Worker that runs Old and redeploy it.`,
    );
  });

  it("words every kind of facts, each differently, with the facts it carries", () => {
    // One of each kind (the type makes a missing kind a compile error): the words must name what the facts say.
    const samples: { [K in AdminErrorFacts["kind"]]: [Extract<AdminErrorFacts, { kind: K }>, string] } = {
      no_mixin: [{ kind: "no_mixin", agentClass: "Plain" }, "Plain"],
      upgrade: [{ kind: "upgrade", action: "force_idle", rpc: "adminForceIdle", since: 2, agentClass: "Old", agentName: "o-1" }, "adminForceIdle"],
      not_addressable: [{ kind: "not_addressable", agentClass: "Stranger", allowed: ["A", "B"] }, "A, B"],
      not_registered: [{ kind: "not_registered", agentClass: "A", agentName: "ghost-1" }, 'no agent A "ghost-1"'],
      no_binding: [{ kind: "no_binding", agentClass: "Unbound" }, "Unbound"],
      nested_sub_agent: [{ kind: "nested_sub_agent", agentClass: "Leaf", depth: 2 }, "2 levels down"],
      other_worker: [
        { kind: "other_worker", agentClass: "ChatAgent", worker: "other-worker" },
        'binding for ChatAgent points at another Worker than "other-worker"',
      ],
      timeout: [{ kind: "timeout", limitMs: 15_000 }, "15000 ms"],
      unreachable: [{ kind: "unreachable", cause: "Network connection lost." }, "Network connection lost."],
      bad_answer: [{ kind: "bad_answer", detail: "status: expected string" }, "status: expected string"],
      lookup_failed: [{ kind: "lookup_failed", cause: "D1_ERROR: busy" }, "D1_ERROR: busy"],
      audit_failed: [{ kind: "audit_failed", cause: "D1_ERROR: full" }, "not attempted"],
      no_outcome: [{ kind: "no_outcome" }, "outcome"],
      console_failed: [{ kind: "console_failed", cause: "boom" }, "boom"],
      role: [{ kind: "role", email: "v@x.test", role: "viewer", needs: "operator" }, "v@x.test has the viewer role; this action needs operator"],
      agent_failed: [{ kind: "agent_failed", cause: "SQLITE_FULL" }, "SQLITE_FULL"],
      no_live_run: [{ kind: "no_live_run", id: "run-9" }, '"run-9"'],
      terminated: [{ kind: "terminated", action: "trigger_alarm" }, "alarm"],
      no_resolve_hook: [{ kind: "no_resolve_hook", agentClass: "Ledgerless" }, "Ledgerless does not implement onAdminResolveOp"],
      hook_bad_answer: [{ kind: "hook_bad_answer", detail: "outcome: invalid" }, "outcome: invalid"],
      no_op: [{ kind: "no_op", opId: "op-7" }, '"op-7"'],
      op_not_ambiguous: [{ kind: "op_not_ambiguous", opId: "op-8", status: "resolved", resolution: "verified_ran" }, "resolved as verified_ran"],
    };
    const worded = Object.values(samples).map(([facts, says]) => {
      const w = adminErrorWords({ code: "unavailable", message: "technical", facts });
      expect(w).toContain(says);
      return w;
    });
    expect(new Set(worded).size).toBe(worded.length);
    expect(adminErrorWords({ code: "agent_terminated", message: "x", facts: { kind: "terminated", action: "force_idle" } })).toContain("nothing to force idle");
  });

  it("is its own message where it has no facts", () => {
    expect(adminErrorWords({ code: "timeout", message: "the agent did not answer within 15000 ms" })).toBe("the agent did not answer within 15000 ms");
  });
});
