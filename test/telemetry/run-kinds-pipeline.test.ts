import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { FIBER_RECOVERY_INCIDENT, fiberIncidentId, runStateOf } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { getIncident, listRuns } from "../../src/store/read-models";
import { consoleStoreFromEnv } from "../../worker/store";
import { eventsOf, pollRows, pollRunRows, rejectionOf, runRowsOf } from "../helpers";

/**
 * Tasks runs and managed fibers of real agents-SDK agents reach D1 through the Queue as runs of their kind,
 * each with the outcome that says how it ended.
 */

type RunRow = {
  fiber_id: string;
  kind: string;
  name: string;
  definition: string | null;
  attempt: number | null;
  outcome: string | null;
  error: string | null;
  reason: string | null;
  phase: string | null;
  wake_at: number | null;
  started_at: number | null;
  ended_at: number | null;
  snapshot_preview: string | null;
};

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
/** The run as the console holds it: D1's row, or, once it completed healthily and left D1, folded from R2 (runRowsOf). */
const runRow = (name: string, id: string, check: (r: RunRow) => boolean) =>
  pollRunRows<RunRow>(
    name,
    (r) => r.fiber_id === id,
    (r) => r.length === 1 && check(r[0]!),
    15_000,
  ).then((r) => r[0]!);
const typesOf = async (name: string) => (await eventsOf(name)).map((e) => e.type);

describe("Tasks runs (this.tasks) become task runs", () => {
  it("a completed run: accepted, attempt started, completed; its steps are not shipped", async () => {
    const name = unique("task-ok");
    const stub = await getAgentByName(env.TaskProbeAgent, name);
    const runId = await stub.startTask("complete");
    const row = await runRow(name, runId, (r) => r.outcome === "completed");
    expect(row).toMatchObject({ kind: "task", name: "probe-steps@v1", definition: "probe-steps@v1", attempt: 1, error: null });
    expect(row.ended_at).toBeGreaterThanOrEqual(row.started_at!);
    expect(await typesOf(name)).toEqual(["task.accepted", "task.attempt.started", "task.completed"]);
    // The agent's runs list has it from the R2 history (it left D1 when it completed).
    const owner = { agentClass: "TaskProbeAgent", agentName: name };
    expect((await listRuns(env.DB, { ...owner, kind: "task" })).items).toEqual([]);
    const listed = await consoleStoreFromEnv(env).runs.list({ ...owner, kind: "task" });
    expect(listed.items).toEqual([expect.objectContaining({ runId, kind: "task", status: "completed", confirmed: false })]);
  });

  it("a run that fails for good is failed, with the error message the SDK records (not only the error's name)", async () => {
    const name = unique("task-fail");
    const stub = await getAgentByName(env.TaskProbeAgent, name);
    const runId = await stub.startTask("fail");
    const row = await runRow(name, runId, (r) => r.outcome === "failed");
    const sdk = await stub.sdkTask(runId);
    expect(row.outcome).toBe(runStateOf("task", sdk!.state)?.outcome);
    expect(row.kind).toBe("task");
    expect(row.error).toBe(sdk!.error!.message);
    expect(await typesOf(name)).toContain("task.failed");
  });

  it("a napping run is waiting until its wake time, and cancelling it ends it as cancelled with the reason", async () => {
    const name = unique("task-nap");
    const stub = await getAgentByName(env.TaskProbeAgent, name);
    const before = Date.now();
    const runId = await stub.startTask("nap");
    const waiting = await runRow(name, runId, (r) => r.phase === "waiting");
    expect(waiting.outcome).toBeNull();
    expect(waiting.wake_at).toBeGreaterThanOrEqual(before + 3_500_000);
    expect((await listRuns(env.DB, { agentName: name, outcome: "running" })).items).toEqual([
      expect.objectContaining({ runId, phase: "waiting", status: "running" }),
    ]);

    expect(await stub.cancelTask(runId, "no longer needed")).toBe(true);
    const cancelled = await runRow(name, runId, (r) => r.outcome === "cancelled");
    expect(cancelled).toMatchObject({ reason: "no longer needed", kind: "task" });
    expect((await listRuns(env.DB, { agentName: name, outcome: "running" })).items).toEqual([]);
  });

  it("a run interrupted by an eviction is replayed in a new attempt and completes; the interrupted step is kept", async () => {
    const name = unique("task-evict");
    let stub = await getAgentByName(env.TaskProbeAgent, name);
    const runId = await stub.startTask("hang-once");
    expect((await rejectionOf(stub.evict())).message).toContain("test eviction");

    stub = await getAgentByName(env.TaskProbeAgent, name);
    await runDurableObjectAlarm(stub);
    const row = await runRow(name, runId, (r) => r.outcome === "completed");
    expect(row).toMatchObject({ kind: "task", attempt: 2 });
    const events = await eventsOf(name);
    const interrupted = events.find((e) => e.type === "task.attempt.interrupted");
    expect(JSON.parse(interrupted!.payload)).toMatchObject({ definition: "probe-steps@v1", attempt: 1, step: "store" });
    expect(events.map((e) => e.type)).toEqual(["task.accepted", "task.attempt.started", "task.attempt.interrupted", "task.attempt.started", "task.completed"]);
  });
});

describe("managed fibers (startFiber) become managed_fiber runs", () => {
  it("completed and failed managed fibers keep their kind, snapshot and error", async () => {
    const name = unique("managed");
    const stub = await getAgentByName(env.ManagedFiberProbeAgent, name);
    const ok = await stub.runManaged();
    const bad = await stub.runManaged(true).catch(() => null);
    const done = await runRow(name, ok, (r) => r.outcome === "completed" && r.snapshot_preview !== null);
    expect(done).toMatchObject({ kind: "managed_fiber", name: "probe-managed" });
    expect(JSON.parse(done.snapshot_preview!)).toEqual({ page: 1, of: 2 });
    const failed = await pollRows<RunRow>("SELECT * FROM runs WHERE agent_name = ? AND outcome = 'failed'", [name], (r) => r.length === 1);
    expect(failed[0]).toMatchObject({ kind: "managed_fiber", name: "probe-managed-fail" });
    expect(failed[0]!.error).toContain("crm sync refused");
    if (bad) expect(failed[0]!.fiber_id).toBe(bad);
    // The failed one stays in D1; the completed one left it and is read from R2.
    expect((await listRuns(env.DB, { agentName: name, kind: "managed_fiber" })).items.map((r) => r.status).sort()).toEqual(["failed"]);
    expect(
      (await runRowsOf(name))
        .filter((r) => r.kind === "managed_fiber")
        .map((r) => r.outcome)
        .sort(),
    ).toEqual(["completed", "failed"]);
  });

  it("a managed fiber evicted mid-run whose recovery hook does nothing stays as the SDK keeps it (interrupted), its incident open", async () => {
    const name = unique("managed-evict");
    let stub = await getAgentByName(env.ManagedFiberProbeAgent, name);
    const fiberId = await stub.startHangingManaged();
    await runRow(name, fiberId, (r) => r.kind === "managed_fiber" && r.outcome === null);
    expect((await rejectionOf(stub.evict())).message).toContain("test eviction");

    stub = await getAgentByName(env.ManagedFiberProbeAgent, name);
    await runDurableObjectAlarm(stub);
    // The SDK's default onFiberRecovered returns nothing: it keeps the fiber interrupted, waiting for resolveFiber.
    const sdk = await stub.sdkFiber(fiberId);
    const expected = runStateOf("managed_fiber", sdk!.status)!.outcome;
    const row = await runRow(name, fiberId, (r) => r.outcome === expected);
    expect(row.kind).toBe("managed_fiber");
    expect((await listRuns(env.DB, { agentName: name, outcome: "running" })).items).toEqual([]);
    const incident = await getIncident(env.DB, fiberIncidentId("ManagedFiberProbeAgent", name, fiberId));
    expect(incident?.status).toBe(FIBER_RECOVERY_INCIDENT[sdk!.status as keyof typeof FIBER_RECOVERY_INCIDENT]);
  });
});
