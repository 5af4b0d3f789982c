import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { EVENT_TYPES } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { eventsOf, pollRows, probe, rejectionOf, runRowsOf } from "../helpers";

const chat = (attempt: number, extra: Record<string, unknown> = {}) => ({
  incidentId: "req-42:msg-7",
  requestId: "req-42",
  attempt,
  maxAttempts: 3,
  recoveryKind: "retry",
  ...extra,
});

describe("every event kind round-trips from a real agent through the Queue into D1", () => {
  it("produces, ships and stores all kinds, and projects them", async () => {
    const { name, stub } = await probe();

    // Fiber lifecycle and recovery: real runFiber, a real failure, a real eviction and recovery through the alarm.
    await stub.work(2);
    await rejectionOf(stub.work(1, { fail: true }));
    await stub.startHangingFiber(undefined, "probe-hang");
    await stub.startHangingFiber(undefined, "probe-hang-unrecoverable");
    await rejectionOf(stub.evict());
    let fresh = await getAgentByName(env.ProbeAgent, name);
    await runDurableObjectAlarm(fresh);
    fresh = await getAgentByName(env.ProbeAgent, name);

    // SDK events our agents get from AIChatAgent/Think, through the agent's own observability emitter.
    for (const [type, payload] of [
      ["chat:recovery:detected", chat(1)],
      ["chat:recovery:scheduled", chat(1)],
      ["chat:recovery:attempt", chat(1)],
      ["chat:recovery:attempt", chat(2)],
      ["chat:recovery:failed", chat(2, { reason: "stream error" })],
      ["chat:recovery:completed", chat(2, { incidentId: "req-43:msg-8" })],
      ["chat:recovery:skipped", chat(1, { incidentId: "req-44:msg-9", reason: "no_partial" })],
      [
        "chat:recovery:exhausted",
        chat(3, {
          reason: "max_attempts_exceeded",
          partialText: "half an answer with sk-abcdefghijklmnopqrstuvwxyz0123",
          partialParts: [{ type: "text", text: "x" }],
          terminalMessage: "Sorry, I could not finish.",
        }),
      ],
      ["chat:context:compacted", { reason: "reactive", shortened: true, requestId: "req-42", attempt: 1 }],
      ["chat:transcript:repaired", { requestId: "req-42", removedToolCalls: 2, normalizedInputs: 1, toolCallIds: ["t1", "t2"] }],
      ["chat:stream:stalled", { requestId: "req-42", timeoutMs: 30000 }],
      ["alarm:memory_limit_reset", { strikes: 3, limit: 3, sealed: true, error: "Exceeded memory limit" }],
      ["schedule:execute", { callback: "tick", id: "sched-ek1" }],
      ["fiber:recovery:skipped", { fiberId: "old-fiber", fiberName: "stale", reason: "too_old" }],
      // Tasks (this.tasks) and chat turns; the real ones are driven in run-kinds-pipeline.test.ts and the chat suite.
      ["task:accepted", { runId: "task_ek1", definition: "etl@v1", accepted: true }],
      ["task:attempt:started", { runId: "task_ek1", definition: "etl@v1", attempt: 1 }],
      ["task:attempt:interrupted", { runId: "task_ek1", definition: "etl@v1", attempt: 1, step: "load" }],
      ["task:waiting", { runId: "task_ek1", definition: "etl@v1", reason: "retry", wakeAt: Date.now() + 60_000 }],
      ["task:completed", { runId: "task_ek1", definition: "etl@v1" }],
      ["task:failed", { runId: "task_ek2", definition: "etl@v1", error: "NonRetryableError" }],
      ["task:cancelled", { runId: "task_ek3", definition: "etl@v1", reason: "superseded" }],
      ["task:step:started", { runId: "task_ek1", definition: "etl@v1", step: "load", attempt: 1 }],
      ["chat:turn:start", { requestId: "req-turn-1", trigger: "submit", admission: "queue" }],
      ["chat:turn:finish", { requestId: "req-turn-1", trigger: "submit", admission: "queue", status: "completed", durationMs: 420 }],
      ["chat:future:event", { something: "new" }],
      // A recovery an operator paused: the admin mixin's hook throws with RECOVERY_PAUSED_MARK (driven for real in
      // test/admin-rpc/pause-recovery.test.ts); normalised as recovery.skipped_paused, not a failure.
      [
        "fiber:recovery:failed",
        {
          fiberId: "paused-fiber",
          fiberName: "import",
          managed: false,
          error: "recovery paused by an operator until 2030-01-01T00:00:00.000Z: storm",
          reason: "handler_error",
        },
      ],
    ] as const) {
      await fresh.emitSdkEvent(type, payload as Record<string, unknown>);
    }

    // The runtime's own events.
    const s = { sessionName: name };
    await fresh.recordEvent("session.status_running", { turnSeq: 1 }, s);
    await fresh.recordEvent("session.status_rescheduled", { turnSeq: 1, recoveryCount: 1 }, { ...s, incidentId: `turn:ProbeAgent/${name}/1` });
    await fresh.recordEvent("session.status_idle", { turnSeq: 1 }, s);
    await fresh.recordEvent("session.error", { turnSeq: 2, error: "turn recovery exceeded 5 attempts" }, { ...s, incidentId: `turn:ProbeAgent/${name}/2` });
    await fresh.recordEvent("session.status_terminated", {}, s);
    await fresh.recordEvent("op.started", { opKind: "model.request", turnSeq: 1 }, { ...s, opId: "op-1" });
    await fresh.recordEvent("op.completed", { opKind: "model.request", turnSeq: 1, resultRef: "r2://results/op-1" }, { ...s, opId: "op-1" });
    await fresh.recordEvent("op.ambiguous", { opKind: "payment.charge", turnSeq: 2, detail: "started, no completion recorded" }, { ...s, opId: "op-2" });
    await fresh.recordEvent("op.resolved", { opKind: "payment.charge", resolution: "verified_not_ran" }, { ...s, opId: "op-2" });
    const backup = { handle: `ws/${name}/1`, tenant: "acme", environment: "prod", sessionName: name };
    await fresh.recordEvent("backup.created", { ...backup, expiresAt: Date.now() + 7 * 86_400_000, bytes: 1234 }, s);
    await fresh.recordEvent("backup.restored", backup, s);
    await fresh.recordEvent("backup.expired", backup, s);
    await fresh.recordEvent("admin.force_idle", { actor: "oncall@example.com", reason: "stuck turn", result: "ok" }, s);
    await fresh.recordEvent("admin.trigger_alarm", { actor: "oncall@example.com", reason: "recover now", result: "noop" }, s);
    // The console's record of a recovery pause (the audited admin path sends these with the agent as source).
    await fresh.recordEvent("recovery.paused", { actor: "oncall@example.com", reason: "storm", until: Date.now() + 3_600_000 });
    await fresh.recordEvent("recovery.resumed", { actor: "oncall@example.com", reason: "fixed", recovered: ["paused-fiber"] });
    // What the console records about an agent's work (force idle, reconciliation), through the same Queue.
    await fresh.recordEvent("run.force_idled", { kind: "fiber", runId: "old-fiber", reason: "stuck", stopped: true }, { fiberId: "old-fiber" });
    await fresh.recordEvent("incident.force_idled", { reason: "stuck" }, { incidentId: "req-44:msg-9" });
    await fresh.recordEvent("run.reconciled", { kind: "task", runId: "task_ek3", finding: "confirmed_running" }, { taskId: "task_ek3" });
    await fresh.recordEvent("incident.reconciled", { finding: "confirmed_open" }, { incidentId: "req-44:msg-9" });
    await fresh.recordEvent("session.reconciled", { finding: "ended_unreported" }, s);
    // The mixin's report of resolveFiber (the SDK emits nothing for it); driven for real in sdk-records.test.ts.
    await fresh.recordEvent(
      "fiber.resolved",
      { fiberName: "sync", managed: true, kind: "managed_fiber", status: "completed" },
      { fiberId: "mf-ek1", incidentId: `fiber:ProbeAgent/${name}/mf-ek1` },
    );
    await fresh.recordEvent(
      "model.usage",
      { inputTokens: 1200, outputTokens: 80, model: "scripted", attempt: 1 },
      { incidentId: "req-42:msg-7", requestId: "req-cont" },
    );
    // An event too large for a Queue message arrives as its event.too_large placeholder.
    await fresh.recordEvent("session.status_running", { turnSeq: 9, detail: "x".repeat(100_000) }, s);

    // Everything arrives: every kind in the contract is stored at least once.
    await pollRows<{ type: string }>("SELECT DISTINCT type FROM events WHERE agent_name = ?", [name], (rows) =>
      EVENT_TYPES.every((t) => rows.some((r) => r.type === t)),
    );
    const stats = await fresh.settleTelemetry();
    expect(stats.pending).toBe(0);
    expect(stats.sendErrors).toBe(0);

    // Projections.
    const chatInc = await pollRows<{ status: string; attempts: number; max_attempts: number; reason: string; kind: string }>(
      "SELECT * FROM incidents WHERE incident_id = 'req-42:msg-7'",
      [],
      (r) => r[0]?.status === "exhausted",
    );
    expect(chatInc[0]).toMatchObject({ kind: "chat", attempts: 3, max_attempts: 3, reason: "max_attempts_exceeded" });
    // The SDK skipped req-44 before the force idle: it stays skipped with its reason; the force idle is recorded beside it.
    const closed = await env.DB.prepare(
      "SELECT incident_id, status, reason, closed_by, closed_by_reason FROM incidents WHERE incident_id IN ('req-43:msg-8','req-44:msg-9') ORDER BY incident_id",
    ).all();
    expect(closed.results).toEqual([
      { incident_id: "req-43:msg-8", status: "recovered", reason: null, closed_by: null, closed_by_reason: null },
      { incident_id: "req-44:msg-9", status: "skipped", reason: "no_partial", closed_by: "force_idled", closed_by_reason: "stuck" },
    ]);

    const turn = await env.DB.prepare("SELECT status, reason FROM incidents WHERE incident_id = ?").bind(`turn:ProbeAgent/${name}/2`).first();
    expect(turn).toEqual({ status: "exhausted", reason: "turn recovery exceeded 5 attempts" });

    const fiberIncidents = await env.DB.prepare(
      "SELECT i.status, i.reason, f.name FROM incidents i JOIN runs f ON f.fiber_id = i.fiber_id WHERE i.kind = 'fiber' AND i.agent_name = ? AND f.name LIKE 'probe-hang%' ORDER BY f.name",
    )
      .bind(name)
      .all<{ status: string; reason: string | null; name: string }>();
    expect(fiberIncidents.results).toEqual([
      { name: "probe-hang", status: "recovered", reason: null },
      { name: "probe-hang-unrecoverable", status: "failed", reason: expect.stringContaining("cannot resume: upstream session expired") },
    ]);

    const op = await env.DB.prepare("SELECT * FROM op_ambiguities WHERE agent_name = ? AND op_id = 'op-2'").bind(name).first();
    expect(op).toMatchObject({ op_kind: "payment.charge", resolution: "verified_not_ran", session_name: name });
    expect(op?.ambiguous_at).toBeTypeOf("number");

    const b = await env.DB.prepare("SELECT * FROM workspace_backups WHERE handle = ?").bind(backup.handle).first();
    expect(b).toMatchObject({ tenant: "acme", environment: "prod", session_name: name, bytes: 1234 });
    expect(b?.restored_at).toBeTypeOf("number");
    expect(b?.expired_at).toBeTypeOf("number");

    // Runs of every kind, each with how it ended; task steps are not shipped at all.
    // As the console holds them: the ones that completed healthily (task_ek1, req-turn-1) left D1 and are folded from R2.
    const ids = new Set(["task_ek1", "task_ek2", "task_ek3", "req-turn-1", "old-fiber"]);
    const runs = (await runRowsOf(name))
      .filter((r) => ids.has(String(r.fiber_id)))
      .map(({ fiber_id, kind, name, outcome, reason, attempt, confirmed_at }) => ({ fiber_id, kind, name, outcome, reason, attempt, confirmed_at }));
    expect(runs).toEqual([
      { fiber_id: "old-fiber", kind: "fiber", name: "stale", outcome: "force_idled", reason: "stuck", attempt: null, confirmed_at: null },
      { fiber_id: "req-turn-1", kind: "chat_turn", name: "chat turn (submit)", outcome: "completed", reason: null, attempt: 1, confirmed_at: null }, // a chat turn that ran once: its first attempt
      { fiber_id: "task_ek1", kind: "task", name: "etl@v1", outcome: "completed", reason: null, attempt: 1, confirmed_at: null },
      // The SDK holds no record of this run, so its error's message was not read: the class alone is never shown as the error.
      {
        fiber_id: "task_ek2",
        kind: "task",
        name: "etl@v1",
        outcome: "failed",
        reason: expect.stringContaining("NonRetryableError"),
        attempt: null,
        confirmed_at: null,
      },
      { fiber_id: "task_ek3", kind: "task", name: "etl@v1", outcome: "cancelled", reason: "superseded", attempt: null, confirmed_at: expect.any(Number) },
    ]);
    expect((await eventsOf(name)).some((e) => e.type === "sdk.event" && e.payload.includes("task:step:"))).toBe(false);

    // Unknown SDK event kinds are kept, not dropped.
    const generic = (await eventsOf(name)).find((e) => e.type === "sdk.event");
    expect(JSON.parse(generic!.payload)).toMatchObject({ sdkType: "chat:future:event", data: { preview: '{"something":"new"}' } });
  });
});
