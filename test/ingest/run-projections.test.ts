import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { getIncident, getStoredRun, incidentAttempts, knownRunOutcomes, listIncidents, listRuns, overviewCounts } from "../../src/store/read-models";
import { makeEvent } from "../fixtures/events";
import { shuffled } from "../fixtures/seeded-random";
import { ingest } from "../store/store-helpers";

/**
 * Runs of every kind and incidents, as ingest projects them: every run reaches an outcome that says how it
 * ended (force idle and reconciliation included), every incident a status, whatever order, batching and
 * number of deliveries the events come in.
 */

const T0 = Math.floor((Date.now() - 2 * 86_400_000) / 60_000) * 60_000;
const S = 1000;
const o = (agentName: string, t: number, corr: TelemetryEvent["corr"] = {}) => ({ agentName, time: T0 + t * S, corr });
const chat = (attempt: number) => ({ attempt, maxAttempts: 3, recoveryKind: "retry" as const });

/** A bit of everything that makes and closes runs, for one agent. */
function runEvents(a: string): TelemetryEvent[] {
  const turnFiber = { fiberId: "chat_n1", requestId: "req-1" };
  return [
    // A Tasks run: accepted, interrupted, replayed, waiting, completed.
    makeEvent("task.accepted", { definition: "etl@v1" }, o(a, 1, { taskId: "task_1" })),
    makeEvent("task.attempt.started", { definition: "etl@v1", attempt: 1 }, o(a, 2, { taskId: "task_1" })),
    makeEvent("task.attempt.interrupted", { definition: "etl@v1", attempt: 1, step: "load" }, o(a, 5, { taskId: "task_1" })),
    makeEvent("task.attempt.started", { definition: "etl@v1", attempt: 2 }, o(a, 5, { taskId: "task_1" })),
    makeEvent("task.waiting", { definition: "etl@v1", reason: "retry", wakeAt: T0 + 60 * S }, o(a, 6, { taskId: "task_1" })),
    makeEvent("task.completed", { definition: "etl@v1" }, o(a, 61, { taskId: "task_1" })),
    // A chat turn whose Task carrier was evicted: the carrier's task events make no run; its internal
    // fiber's stash and interruption (what the SDK hands the recovery hook) are the turn's.
    makeEvent("chat.turn.started", { trigger: "submit", admission: "queue" }, o(a, 10, { requestId: "req-1" })),
    makeEvent(
      "task.attempt.interrupted",
      { definition: "__cf_internal_chat_turn", attempt: 1, step: "model-turn", kind: "chat_turn" },
      o(a, 20, { taskId: "chat_n1" }),
    ),
    makeEvent(
      "fiber.stashed",
      { fiberName: "__cf_internal_chat_turn:req-1", kind: "chat_turn", snapshot: { preview: '{"partial":"hal"}', bytes: 17, truncated: false } },
      o(a, 20, turnFiber),
    ),
    makeEvent("fiber.interrupted", { fiberName: "__cf_internal_chat_turn:req-1", kind: "chat_turn" }, o(a, 20, turnFiber)),
    // A turn that failed, one the SDK aborted.
    makeEvent("chat.turn.started", { trigger: "submit" }, o(a, 30, { requestId: "req-2" })),
    makeEvent("chat.turn.finished", { trigger: "submit", status: "error", durationMs: 2000, error: "model overloaded" }, o(a, 32, { requestId: "req-2" })),
    makeEvent("chat.turn.finished", { trigger: "programmatic", status: "aborted", durationMs: 500 }, o(a, 33, { requestId: "req-3" })),
    // A user turn the SDK recovered twice (stall, then eviction): its recovery turns, their fiber and the recovery's
    // internal Tasks run fold into it; the last recovery turn completes it, its third attempt.
    makeEvent("chat.turn.started", { trigger: "submission" }, o(a, 60, { requestId: "req-4" })),
    makeEvent("chat.recovery.scheduled", { ...chat(1), rootRequestId: "req-4" }, o(a, 61, { incidentId: "req-4:m", requestId: "req-4" })),
    makeEvent("chat.turn.finished", { trigger: "submission", status: "aborted", recovering: true }, o(a, 61, { requestId: "req-4" })),
    makeEvent(
      "task.waiting",
      { definition: "__cf_internal_chat_recovery", internal: true, rootRequestId: "req-4", reason: "sleep", wakeAt: T0 + 63 * S },
      o(a, 62, { taskId: "task_rec", incidentId: "req-4:m" }),
    ),
    makeEvent(
      "chat.turn.started",
      { trigger: "recovery-continue", continuation: true, rootRequestId: "req-4", turnAttempt: 2 },
      o(a, 63, { requestId: "req-4b" }),
    ),
    makeEvent(
      "fiber.interrupted",
      { fiberName: "__cf_internal_chat_turn:req-4b", kind: "chat_turn", rootRequestId: "req-4" },
      o(a, 64, { fiberId: "chat_n4", requestId: "req-4b" }),
    ),
    makeEvent(
      "task.attempt.interrupted",
      { definition: "__cf_internal_chat_turn", attempt: 1, kind: "chat_turn", rootRequestId: "req-4" },
      o(a, 64, { taskId: "chat_n4", requestId: "req-4b" }),
    ),
    makeEvent("chat.recovery.scheduled", { ...chat(2), rootRequestId: "req-4" }, o(a, 65, { incidentId: "req-4:m", requestId: "req-4b" })),
    makeEvent(
      "chat.turn.started",
      { trigger: "recovery-continue", continuation: true, rootRequestId: "req-4", turnAttempt: 3 },
      o(a, 66, { requestId: "req-4c" }),
    ),
    makeEvent(
      "chat.turn.finished",
      { trigger: "recovery-continue", continuation: true, rootRequestId: "req-4", status: "completed", durationMs: 900 },
      o(a, 67, { requestId: "req-4c" }),
    ),
    // A user turn the SDK gave up on inside a recovery turn: exhausted; the aborted recovery turn's finish is sealed.
    makeEvent("chat.turn.started", { trigger: "submission" }, o(a, 70, { requestId: "req-5" })),
    makeEvent("chat.turn.started", { trigger: "recovery-continue", rootRequestId: "req-5", turnAttempt: 2 }, o(a, 72, { requestId: "req-5b" })),
    makeEvent(
      "chat.recovery.exhausted",
      {
        ...chat(2),
        rootRequestId: "req-5",
        reason: "max_attempts_exceeded",
        terminalMessage: { preview: "Sorry, this reply could not be recovered.", bytes: 41, truncated: false },
      },
      o(a, 74, { incidentId: "req-5:m", requestId: "req-5b" }),
    ),
    makeEvent(
      "chat.turn.finished",
      { trigger: "recovery-continue", rootRequestId: "req-5", status: "aborted", sealed: true },
      o(a, 74, { requestId: "req-5b" }),
    ),
    // An AIChatAgent turn: its carrier's acceptance is its start (no chat:turn events), onChatResponse its end.
    makeEvent("task.accepted", { definition: "__cf_internal_chat_turn", kind: "chat_turn" }, o(a, 80, { taskId: "chat_n6", requestId: "req-6" })),
    makeEvent("chat.turn.finished", { status: "completed" }, o(a, 81, { requestId: "req-6" })),
    // A fiber force-idled while its callback kept running; a managed fiber force-idled and stopped.
    makeEvent("fiber.started", { fiberName: "etl", managed: false }, o(a, 40, { fiberId: "f-1" })),
    makeEvent("run.force_idled", { kind: "fiber", runId: "f-1", name: "etl", reason: "stuck import", stopped: false }, o(a, 50, { fiberId: "f-1" })),
    makeEvent("fiber.started", { fiberName: "sync", managed: true }, o(a, 41, { fiberId: "mf-1" })),
    makeEvent("run.force_idled", { kind: "managed_fiber", runId: "mf-1", reason: "stuck sync", stopped: true }, o(a, 51, { fiberId: "mf-1" })),
    // A task reconciliation found ended without a word, and one it found alive.
    makeEvent("task.attempt.started", { definition: "mail@v1", attempt: 1 }, o(a, 42, { taskId: "task_2" })),
    makeEvent(
      "run.reconciled",
      { kind: "task", runId: "task_2", finding: "ended_unreported", detail: "the agent no longer has this task run" },
      o(a, 300, { taskId: "task_2" }),
    ),
    makeEvent("task.attempt.started", { definition: "mail@v1", attempt: 1 }, o(a, 43, { taskId: "task_3" })),
    makeEvent("run.reconciled", { kind: "task", runId: "task_3", finding: "confirmed_running" }, o(a, 301, { taskId: "task_3" })),
  ];
}

type Row = Record<string, unknown>;
async function runRows(agentName: string): Promise<Row[]> {
  const r = await env.DB.prepare(
    `SELECT fiber_id, kind, name, definition, attempt, started_at, ended_at, outcome, error, reason, phase, wake_at, step, confirmed_at,
            snapshot_preview, first_seen, last_seen FROM runs WHERE agent_name = ? ORDER BY fiber_id`,
  )
    .bind(agentName)
    .all<Row>();
  return r.results;
}

describe("runs of every kind", () => {
  it("project to the same rows whatever the order, batching and redelivery", async () => {
    let reference: Row[] | null = null;
    for (const seed of [1, 9, 77, 2026]) {
      const a = `runs-order-${seed}`;
      const events = shuffled(runEvents(a), seed);
      for (let i = 0; i < events.length; i += 4) await ingest(events.slice(i, i + 4));
      await ingest(shuffled(events, seed + 1).slice(0, 7)); // a redelivery
      const rows = await runRows(a);
      if (!reference) reference = rows;
      else expect(rows).toEqual(reference);
    }
    const by = Object.fromEntries(reference!.map((r) => [r.fiber_id, r]));
    expect(Object.keys(by).sort()).toEqual(["f-1", "mf-1", "req-1", "req-2", "req-3", "req-4", "req-5", "req-6", "task_1", "task_2", "task_3"]);
    expect(by["req-4"]).toMatchObject({
      kind: "chat_turn",
      name: "chat turn (submission)",
      outcome: "completed",
      attempt: 3,
      started_at: T0 + 60 * S,
      ended_at: T0 + 67 * S,
      error: null,
      reason: null,
    });
    expect(by["req-5"]).toMatchObject({
      kind: "chat_turn",
      outcome: "exhausted",
      attempt: 2,
      reason: "max_attempts_exceeded",
      error: "Sorry, this reply could not be recovered.",
    });
    expect(by["req-6"]).toMatchObject({ kind: "chat_turn", name: "chat turn", outcome: "completed", attempt: 1, started_at: T0 + 80 * S });
    expect(by.task_1).toMatchObject({
      kind: "task",
      definition: "etl@v1",
      attempt: 2,
      outcome: "completed",
      started_at: T0 + 2 * S,
      ended_at: T0 + 61 * S,
      phase: "waiting",
    });
    expect(by["req-1"]).toMatchObject({
      kind: "chat_turn",
      name: "chat turn (submit)",
      outcome: "interrupted",
      started_at: T0 + 10 * S,
      snapshot_preview: '{"partial":"hal"}',
    });
    expect(by["req-2"]).toMatchObject({ kind: "chat_turn", outcome: "failed", error: "model overloaded", reason: null, started_at: T0 + 30 * S });
    // Without its start event, the turn's duration says when it started; the SDK's word stays the reason.
    expect(by["req-3"]).toMatchObject({
      kind: "chat_turn",
      name: "chat turn (programmatic)",
      outcome: "cancelled",
      reason: "aborted",
      started_at: T0 + 33 * S - 500,
    });
    expect(by["f-1"]).toMatchObject({
      kind: "fiber",
      outcome: "force_idled",
      ended_at: T0 + 50 * S,
      reason: "stuck import (its in-memory work was not stopped)",
    });
    expect(by["mf-1"]).toMatchObject({ kind: "managed_fiber", outcome: "force_idled", reason: "stuck sync" });
    expect(by.task_2).toMatchObject({
      outcome: "ended_unreported",
      reason: "the agent no longer has this task run",
      ended_at: T0 + 300 * S,
      last_seen: T0 + 42 * S,
    });
    // Reconciliation never moves last_seen: "confirmed" is a confirmation newer than the run's last event.
    expect(by.task_3).toMatchObject({ outcome: null, confirmed_at: T0 + 301 * S, last_seen: T0 + 43 * S });
  });

  it("never makes a run of a chat turn's internal fiber or Task carrier", async () => {
    const a = "runs-internal";
    await ingest(runEvents(a));
    const rows = await runRows(a);
    expect(rows.map((r) => r.fiber_id)).not.toContain("chat_n1");
    expect(rows.filter((r) => r.kind === "fiber").map((r) => r.fiber_id)).toEqual(["f-1"]);
    expect((await listRuns(env.DB, { agentName: a, outcome: "running" })).items.map((r) => [r.runId, r.confirmed])).toEqual([["task_3", true]]);
  });

  it("lets any reported outcome supersede ended_unreported, even one dated before the reconciliation that arrives after it", async () => {
    const a = "runs-late-truth";
    const started = makeEvent("fiber.started", { fiberName: "etl" }, o(a, 1, { fiberId: "f-late" }));
    const reconciled = makeEvent("run.reconciled", { kind: "fiber", runId: "f-late", finding: "ended_unreported" }, o(a, 100, { fiberId: "f-late" }));
    const completed = makeEvent("fiber.completed", { fiberName: "etl" }, o(a, 5, { fiberId: "f-late" }));
    await ingest([started, reconciled]);
    expect(await getStoredRun(env.DB, "f-late")).toMatchObject({ outcome: "ended_unreported", status: "ended_unreported" });
    await ingest([completed]);
    expect(await getStoredRun(env.DB, "f-late")).toMatchObject({ outcome: "completed", endedAt: T0 + 5 * S, lastSeen: T0 + 5 * S });
  });

  it("lets reconciliation's reading of a managed fiber its hook settled supersede the tail's 'hook ran, status not reported', in either order", async () => {
    for (const first of ["none", "event", "finding"] as const) {
      const a = `runs-hook-settled-${first}`;
      const id = `mf-hook-${first}`;
      const m = { fiberName: "sync", managed: true };
      const started = makeEvent("fiber.started", m, o(a, 1, { fiberId: id }));
      // One wake, as the tail sees it: the SDK detects the eviction, calls the hook, and says the hook returned. Its
      // messages carry no fiberStatus, so the last cannot say what the hook decided; the tail dates the hook's call.
      const interrupted = makeEvent("fiber.interrupted", m, o(a, 10, { fiberId: id }));
      const attempt = makeEvent("fiber.recovery.attempt", m, o(a, 10, { fiberId: id }));
      const handled = makeEvent("fiber.recovery.handled", { ...m, status: "user", hookStartedAt: T0 + 10 * S }, o(a, 11, { fiberId: id }));
      handled.id = `${attempt.id}~`; // the tail's ids sort by time, then by place in the item: after the attempt
      // The SDK settled it (inspectFiber: error) while the hook ran, before it published the handled message.
      const found = makeEvent(
        "run.reconciled",
        { kind: "managed_fiber", runId: id, finding: "ended", state: "error", error: "resume refused", endedAt: T0 + 10 * S },
        o(a, 20, { fiberId: id }),
      );
      await ingest([started, interrupted, attempt]);
      if (first === "none") {
        // Without reconciliation's reading, it waits as interrupted, never "recovering" after its hook returned.
        await ingest([handled]);
        expect(await getStoredRun(env.DB, id), first).toMatchObject({ outcome: "interrupted" });
        continue;
      }
      await ingest(first === "event" ? [handled] : [found]);
      await ingest(first === "event" ? [found] : [handled]);
      expect(await getStoredRun(env.DB, id), first).toMatchObject({ outcome: "failed", error: "resume refused" });
    }
  });

  it("shows a managed fiber whose failure arrived without the SDK's status as unknown, never failed, until the agent's record says how it ended", async () => {
    const m = { fiberName: "sync", managed: true };
    for (const first of ["event", "finding"] as const) {
      const a = `runs-managed-unconfirmed-${first}`;
      const owner = { agentClass: "ProbeAgent", agentName: a };
      const id = `mf-cancel-${first}`;
      // The tail's reading: cancelFiber aborted it, and the SDK published fiber:run:failed with the abort's reason.
      const failed = makeEvent("fiber.failed", { ...m, error: "cancelled by its caller" }, o(a, 5, { fiberId: id }));
      // The SDK settled it `aborted` as it aborted the signal, just before the event: reconciliation's reading.
      const found = makeEvent(
        "run.reconciled",
        { kind: "managed_fiber", runId: id, finding: "ended", state: "aborted", error: "cancelled by its caller", endedAt: T0 + 4 * S },
        o(a, 20, { fiberId: id }),
      );
      await ingest([makeEvent("fiber.started", m, o(a, 1, { fiberId: id }))]);
      if (first === "event") {
        await ingest([failed]);
        expect(await getStoredRun(env.DB, id, owner)).toMatchObject({
          status: "unknown",
          error: null,
          reason: expect.stringContaining("cancelled by its caller"),
        });
        // Reconciliation asks again about it (knownRunOutcomes: null, awaiting the agent's word); a guess never replaces it.
        expect(await knownRunOutcomes(env.DB, owner, [id])).toEqual(new Map([[id, null]]));
        await ingest([makeEvent("run.reconciled", { kind: "managed_fiber", runId: id, finding: "ended_unreported" }, o(a, 15, { fiberId: id }))]);
        expect(await getStoredRun(env.DB, id, owner)).toMatchObject({ status: "unknown" });
      }
      await ingest(first === "event" ? [found] : [found, failed]);
      expect(await getStoredRun(env.DB, id, owner), first).toMatchObject({ status: "cancelled", error: "cancelled by its caller", endedAt: T0 + 4 * S });
      expect(await knownRunOutcomes(env.DB, owner, [id])).toEqual(new Map([[id, "cancelled"]]));
    }
    // With the SDK's status read after the event (the outbox path), it says so at once.
    const a = "runs-managed-confirmed";
    await ingest([makeEvent("fiber.failed", { ...m, error: "boom", fiberStatus: "error", fiberError: "boom" }, o(a, 5, { fiberId: "mf-err" }))]);
    expect(await getStoredRun(env.DB, "mf-err", { agentClass: "ProbeAgent", agentName: a })).toMatchObject({ status: "failed", error: "boom" });
  });

  it("never shows a failed Tasks run's error class as its error: not known until the agent's record gives the message", async () => {
    const a = "runs-task-error-class";
    const owner = { agentClass: "ProbeAgent", agentName: a };
    const failed = makeEvent("task.failed", { definition: "charge@v1", error: "NonRetryableError" }, o(a, 5, { taskId: "task_f1" }));
    await ingest([makeEvent("task.accepted", { definition: "charge@v1" }, o(a, 1, { taskId: "task_f1" })), failed]);
    expect(await getStoredRun(env.DB, "task_f1", owner)).toMatchObject({
      status: "failed",
      error: null,
      reason: expect.stringContaining("NonRetryableError"),
    });
    expect(await knownRunOutcomes(env.DB, owner, ["task_f1"])).toEqual(new Map([["task_f1", null]]));
    // The agent's record (tasks.get), settled in the same moment the event was published: its message wins.
    await ingest([
      makeEvent(
        "run.reconciled",
        { kind: "task", runId: "task_f1", finding: "ended", state: "failed", error: "card declined: do not honor", endedAt: T0 + 5 * S },
        o(a, 30, { taskId: "task_f1" }),
      ),
    ]);
    expect(await getStoredRun(env.DB, "task_f1", owner)).toMatchObject({ status: "failed", error: "card declined: do not honor" });
    // The message read right after the event (the outbox path) is the error at once.
    await ingest([makeEvent("task.failed", { definition: "charge@v1", error: "Error", errorMessage: "card declined" }, o(a, 6, { taskId: "task_f2" }))]);
    expect(await getStoredRun(env.DB, "task_f2", owner)).toMatchObject({ status: "failed", error: "card declined", reason: null });
  });

  it("shows a chat turn that ended in a word the console does not know as unknown, with the SDK's word, never as completed", async () => {
    const a = "runs-unknown-turn";
    await ingest([
      makeEvent("chat.turn.started", { trigger: "submit" }, o(a, 1, { requestId: "req-odd" })),
      makeEvent("chat.turn.finished", { trigger: "submit", status: "paused", durationMs: 400 }, o(a, 2, { requestId: "req-odd" })),
      // A finish that says the turn is still live contradicts itself: how it ended is not known either.
      makeEvent("chat.turn.finished", { status: "running" }, o(a, 3, { requestId: "req-live" })),
      makeEvent("chat.turn.finished", { status: "completed" }, o(a, 4, { requestId: "req-done" })),
    ]);
    const owner = { agentClass: "ProbeAgent", agentName: a };
    expect(await getStoredRun(env.DB, "req-odd", owner)).toMatchObject({ status: "unknown", outcome: "unknown", reason: "paused", endedAt: T0 + 2 * S });
    expect(await getStoredRun(env.DB, "req-live", owner)).toMatchObject({ status: "unknown", reason: "running" });
    expect(await getStoredRun(env.DB, "req-done", owner)).toMatchObject({ status: "completed", reason: null });
    // The runs list filters by it like any other outcome.
    expect((await listRuns(env.DB, { agentName: a, outcome: "unknown" })).items.map((r) => r.runId).sort()).toEqual(["req-live", "req-odd"]);
  });

  it("counts running runs by kind, confirmed apart, and never a closed one", async () => {
    const a = "runs-overview";
    const before = (await overviewCounts(env.DB, Date.now())).runningByKind;
    const later = makeEvent("task.waiting", { definition: "mail@v1", reason: "sleep", wakeAt: T0 + 400 * S }, o(a, 302, { taskId: "task_3" }));
    await ingest(runEvents(a));
    const after = (await overviewCounts(env.DB, Date.now())).runningByKind;
    // Running: task_3 only (confirmed). Everything else ended, was force-idled, or was found ended.
    expect(after.task).toEqual({ n: before.task.n + 1, capped: false, confirmed: before.task.confirmed + 1 });
    for (const k of ["fiber", "managed_fiber", "chat_turn"] as const) expect(after[k]).toEqual(before[k]);
    // An event after the confirmation: running, but no longer confirmed.
    await ingest([later]);
    const now = (await overviewCounts(env.DB, Date.now())).runningByKind;
    expect(now.task).toEqual({ n: after.task.n, capped: false, confirmed: after.task.confirmed - 1 });
    expect(await getStoredRun(env.DB, "task_3", { agentClass: "ProbeAgent", agentName: a })).toMatchObject({
      status: "running",
      phase: "waiting",
      confirmed: false,
    });
  });
});

describe("incident statuses", () => {
  function incidentEvents(a: string): TelemetryEvent[] {
    const c = (id: string) => ({ incidentId: id, requestId: `req-${id}` });
    return [
      // A chat recovery that ends in a reason-less failure.
      makeEvent("chat.recovery.detected", chat(1), o(a, 1, c("silent"))),
      makeEvent("chat.recovery.attempt", chat(1), o(a, 2, c("silent"))),
      makeEvent("chat.recovery.failed", chat(1), o(a, 3, c("silent"))),
      // Exhausted, then the SDK's reason-less failure of the sealed continuation: still exhausted, its reason kept.
      makeEvent("chat.recovery.detected", chat(1), o(a, 1, c("sealed"))),
      makeEvent("chat.recovery.attempt", chat(1), o(a, 2, c("sealed"))),
      makeEvent("chat.recovery.attempt", chat(2), o(a, 3, c("sealed"))),
      makeEvent("chat.recovery.exhausted", { ...chat(2), reason: "max_attempts_exceeded" }, o(a, 4, c("sealed"))),
      makeEvent("chat.recovery.failed", { ...chat(2), sealed: true }, o(a, 5, c("sealed"))),
      // Force-idled while open.
      makeEvent("chat.recovery.detected", chat(1), o(a, 1, c("idled"))),
      makeEvent("incident.force_idled", { reason: "customer asked to stop" }, o(a, 9, { incidentId: "idled" })),
      // Reconciliation: one found not recovering, one confirmed open.
      makeEvent("chat.recovery.scheduled", chat(3), o(a, 1, c("lost"))),
      makeEvent(
        "incident.reconciled",
        { finding: "not_recovering", detail: "the agent holds no recovery record for this turn" },
        o(a, 200, { incidentId: "lost" }),
      ),
      makeEvent("chat.recovery.attempt", chat(1), o(a, 1, c("alive"))),
      makeEvent("incident.reconciled", { finding: "confirmed_open", detail: "recovery record says attempting" }, o(a, 201, { incidentId: "alive" })),
    ];
  }

  it("are failed, exhausted-then-failed (exhausted), force_idled, ended_unreported or open, whatever the order", async () => {
    let reference: unknown = null;
    for (const seed of [3, 31, 313]) {
      const a = `inc-status-${seed}`;
      const events = shuffled(incidentEvents(a), seed);
      for (let i = 0; i < events.length; i += 3) await ingest(events.slice(i, i + 3));
      await ingest(events.slice(0, 5));
      const rows = (
        await env.DB.prepare(
          "SELECT incident_id, status, reason, closed_by, closed_by_reason, attempts, confirmed_at, last_seen FROM incidents WHERE agent_name = ? ORDER BY incident_id",
        )
          .bind(a)
          .all()
      ).results;
      const shown = (await listIncidents(env.DB, { agentClass: "ProbeAgent", agentName: a }, { limit: 10 })).items.map((i) => [i.incidentId, i.status]).sort();
      if (reference === null) reference = { rows, shown };
      else expect({ rows, shown }).toEqual(reference);
    }
    // Stored: what the SDK said (status, reason), and beside it what closed it from outside (the overlay).
    // Actions and reconciliation observe: they never move last_seen.
    expect((reference as { rows: unknown }).rows).toEqual([
      {
        incident_id: "alive",
        status: "open",
        reason: null,
        closed_by: null,
        closed_by_reason: null,
        attempts: 1,
        confirmed_at: T0 + 201 * S,
        last_seen: T0 + 1 * S,
      },
      {
        incident_id: "idled",
        status: "open",
        reason: null,
        closed_by: "force_idled",
        closed_by_reason: "customer asked to stop",
        attempts: 1,
        confirmed_at: null,
        last_seen: T0 + 1 * S,
      },
      {
        incident_id: "lost",
        status: "open",
        reason: null,
        closed_by: "ended_unreported",
        closed_by_reason: "the agent holds no recovery record for this turn",
        attempts: 3,
        confirmed_at: null,
        last_seen: T0 + 1 * S,
      },
      {
        incident_id: "sealed",
        status: "exhausted",
        reason: "max_attempts_exceeded",
        closed_by: null,
        closed_by_reason: null,
        attempts: 2,
        confirmed_at: null,
        last_seen: T0 + 5 * S,
      },
      {
        incident_id: "silent",
        status: "failed",
        reason: null,
        closed_by: null,
        closed_by_reason: null,
        attempts: 1,
        confirmed_at: null,
        last_seen: T0 + 3 * S,
      },
    ]);
    // Shown: the overlay applies over the SDK's open.
    expect((reference as { shown: unknown }).shown).toEqual([
      ["alive", "open"],
      ["idled", "force_idled"],
      ["lost", "ended_unreported"],
      ["sealed", "exhausted"],
      ["silent", "failed"],
    ]);
  });

  it("keep a failure without a reason reason-less (the console labels it), and count attempts next to the SDK's counter", async () => {
    const a = "inc-label";
    await ingest(incidentEvents(a));
    const owner = { agentClass: "ProbeAgent", agentName: a };
    const silent = (await getIncident(env.DB, "silent", owner))!;
    expect(silent).toMatchObject({ status: "failed", reason: null });
    expect(await getIncident(env.DB, "sealed", owner)).toMatchObject({ status: "exhausted", reason: "max_attempts_exceeded" });

    // Two attempt events, and the SDK's counter says 2: they agree.
    const sealed = (await getIncident(env.DB, "sealed", owner))!;
    expect(await incidentAttempts(env.DB, sealed)).toMatchObject({ counted: 2, reported: 2, disagree: false, usageCapped: false });
    // The SDK says attempt 3 was scheduled, but no attempt event arrived: they disagree, and the page says so.
    const lost = (await getIncident(env.DB, "lost", owner))!;
    expect(await incidentAttempts(env.DB, lost)).toMatchObject({ counted: 0, reported: 3, disagree: true });
    // A chat recovery whose every attempt made progress (issue 15: "3 counted · the SDK's counter says 1 of 3 — They
    // disagree"): the SDK's counter is its budget, back at 1 after each attempt that made progress, and the SDK emits an
    // attempt event for each. Nothing was lost: they do not disagree, and the page says what the counter is.
    await ingest([1, 2, 3].map((t) => makeEvent("chat.recovery.attempt", chat(1), o(a, 10 + t, { incidentId: "progressing", requestId: "req-progressing" }))));
    const progressing = (await getIncident(env.DB, "progressing", owner))!;
    expect(await incidentAttempts(env.DB, progressing)).toMatchObject({ counted: 3, reported: 1, disagree: false, reportedIsBudget: true });
    // A fiber incident: the SDK reports no counter.
    const fiberInc = `fiber:ProbeAgent/${a}/fx`;
    await ingest([
      makeEvent("fiber.recovery.detected", { fiberName: "etl" }, o(a, 1, { fiberId: "fx", incidentId: fiberInc })),
      makeEvent("fiber.recovery.attempt", { fiberName: "etl" }, o(a, 2, { fiberId: "fx", incidentId: fiberInc })),
    ]);
    const f = (await getIncident(env.DB, fiberInc))!;
    expect(await incidentAttempts(env.DB, f)).toMatchObject({ counted: 1, reported: null, disagree: false });
  });
});
