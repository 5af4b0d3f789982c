import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { fiberIncidentId, fiberIncidentStatusOf, runStateOf } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { getIncident } from "../../../src/store/read-models";
import { reconcileAgent } from "../../../worker/reconcile/agent";
import { reconcileStale } from "../../../worker/reconcile/pass";
import { consoleStoreFromEnv } from "../../../worker/store";
import { loseStoredEvents, storedEvents } from "../../fixtures/outbox";
import type { TruthTaskInput, TruthWork } from "../../fixtures/truth-agents";
import { eventsOf, pollRows, pollRunRows, shownRun } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";

/**
 * Reconciliation asks before it judges. A run whose end event never shipped (dropped from the agent's own
 * telemetry outbox, `cf_telemetry_outbox`, before the drain: what a kill at completion does) is closed with
 * the outcome the agent still records; `ended_unreported` only when it records none. A managed fiber settled
 * by resolveFiber whose report was lost closes as the SDK records it. And an agent some of whose events never
 * arrived (a sequence gap) gets its recent runs filled in. Every expectation is the SDK's own public answer
 * (tasks.get/list, inspectFiber) or the agent's own record, read in the same test.
 */

type SdkTask = { runId: string; state: string; settledAt?: number; error?: { message: string } };
type SdkFiber = { fiberId: string; status: string; error?: string; settledAt?: number };
type Transport = {
  settleTelemetry(): Promise<void>;
  holdTransport(on: boolean): Promise<void>;
  loseInTransport(types: string[]): Promise<void>;
  evict(): Promise<void>;
};
type TaskStub = Transport & {
  startTask(mode: TruthTaskInput["mode"]): Promise<string>;
  sdkTask(id: string): Promise<SdkTask | null>;
  sdkTasks(): Promise<SdkTask[]>;
};
type FiberStub = Transport & {
  startManaged(work: TruthWork, recovery?: "undefined"): Promise<string>;
  startRunFiber(work: TruthWork): Promise<string>;
  resolveManaged(id: string, result: { status: "completed" }): Promise<boolean>;
  sdkFiber(id: string): Promise<SdkFiber | null>;
  runFiberTruth(id: string): Promise<{ row: boolean; outcome: string | null; error: string | null }>;
};

const uid = () => crypto.randomUUID().slice(0, 8);
const taskAgent = async (name: string) => (await getAgentByName(env.TruthTaskAgent as never, name)) as unknown as TaskStub;
const fiberAgent = async (name: string) => (await getAgentByName(env.TruthFiberAgent as never, name)) as unknown as FiberStub;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

/**
 * Runs `work` with the telemetry transport held, drops from the agent's outbox the events `drop` selects, then
 * lets the rest ship. `drop` gets each stored event's type and payload.
 */
async function withDropped<T>(
  stub: Transport,
  work: () => Promise<T>,
  drop: (e: { type: string; corr: Record<string, string> }) => boolean,
): Promise<{ value: T; dropped: number }> {
  await stub.holdTransport(true);
  const value = await work();
  // Every event of the work is in the outbox by now (the held sends failed): drop the chosen ones before they ship.
  const dropped = await runInDurableObject(stub as never, async (_agent: unknown, state: DurableObjectState) => {
    const rows = storedEvents(state.storage.sql);
    const gone = rows.filter((r) => drop(JSON.parse(r.body) as { type: string; corr: Record<string, string> }));
    loseStoredEvents(
      state.storage.sql,
      gone.map((r) => r.seq),
    );
    return gone.length;
  });
  await stub.holdTransport(false);
  await stub.settleTelemetry();
  return { value, dropped };
}

/** Waits until the console has stored every event that was going to arrive for this agent. */
async function quiet(agentName: string): Promise<void> {
  let last = "";
  for (let i = 0, stable = 0; i < 100 && stable < 4; i++) {
    const n = JSON.stringify(await env.DB.prepare("SELECT COUNT(*) AS n, MAX(received_at) AS at FROM events WHERE agent_name = ?").bind(agentName).first());
    stable = n === last ? stable + 1 : 0;
    last = n;
    await scheduler.wait(50);
  }
}

/** One reconciliation of this agent as the cron makes it, judging work of any age. */
async function reconcile(agentClass: string, agentName: string) {
  await quiet(agentName);
  const r = await reconcileAgent(env, { agentClass, agentName }, { now: Date.now() + 1, minAgeMs: 0 });
  expect(r.error).toBeNull();
  await quiet(agentName);
  return r;
}

describe("a run whose end event never shipped is closed with the outcome the agent still records", () => {
  it("a Tasks run: completed, as tasks.get says, when it settled", async () => {
    const name = `lost-task-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const { value: runId, dropped } = await withDropped(
      stub,
      () => stub.startTask("complete"),
      (e) => e.type === "task.completed",
    );
    expect(dropped).toBe(1);
    // As the events that did arrive tell it: still open.
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NULL", [name, runId], (r) => r.length === 1);

    const r = await reconcile("TruthTaskAgent", name);
    const sdk = (await stub.sdkTask(runId))!;
    const run = (await shownRun(runId, owner))!;
    expect(run.status).toBe(runStateOf("task", sdk.state)!.outcome);
    expect(run.endedAt).toBe(sdk.settledAt);
    expect(run.phase).toBe(runStateOf("task", sdk.state)!.phase);
    expect(r.findings).toContainEqual(expect.objectContaining({ type: "run.reconciled", runId, finding: "ended", state: sdk.state }));
    // On the run's timeline, as an event of its own.
    const events = (await eventsOf(name)).filter((e) => e.type === "run.reconciled").map((e) => JSON.parse(e.payload));
    expect(events).toEqual([expect.objectContaining({ runId, finding: "ended", state: sdk.state })]);
  });

  it("a failed Tasks run: failed with the SDK's message", async () => {
    const name = `lost-task-fail-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const { value: runId } = await withDropped(
      stub,
      () => stub.startTask("fail"),
      (e) => e.type === "task.failed",
    );
    await reconcile("TruthTaskAgent", name);
    const sdk = (await stub.sdkTask(runId))!;
    expect(await shownRun(runId, owner)).toMatchObject({ status: runStateOf("task", sdk.state)!.outcome, error: sdk.error!.message });
  });

  it("a managed fiber: as inspectFiber says", async () => {
    const name = `lost-managed-${uid()}`;
    const owner = { agentClass: "TruthFiberAgent", agentName: name };
    const stub = await fiberAgent(name);
    const { value: id } = await withDropped(
      stub,
      () => stub.startManaged("complete"),
      (e) => e.type === "fiber.completed",
    );
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NULL", [name, id], (r) => r.length === 1);
    await reconcile("TruthFiberAgent", name);
    const sdk = (await stub.sdkFiber(id))!;
    expect(await shownRun(id, owner)).toMatchObject({ status: runStateOf("managed_fiber", sdk.status)!.outcome, endedAt: sdk.settledAt });
  });

  it("a plain runFiber, which the SDK forgets once it ended: as the agent's own record says (adminRunRecord)", async () => {
    const name = `lost-fiber-${uid()}`;
    const owner = { agentClass: "TruthFiberAgent", agentName: name };
    const stub = await fiberAgent(name);
    const { value: id } = await withDropped(
      stub,
      () => stub.startRunFiber("complete"),
      (e) => e.type === "fiber.completed",
    );
    await reconcile("TruthFiberAgent", name);
    const own = await stub.runFiberTruth(id);
    expect(own.row).toBe(false);
    expect((await shownRun(id, owner))?.status).toBe(own.outcome);
  });

  it("a run the agent has no record of at all is ended, not reported", async () => {
    const name = `lost-forgotten-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const { value: runId } = await withDropped(
      stub,
      () => stub.startTask("complete"),
      (e) => e.type === "task.completed",
    );
    // As the events that did arrive tell it: still open (stored before reconciliation asks).
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NULL", [name, runId], (r) => r.length === 1);
    // The agent forgets it (its retention deleted the run), as the SDK's public API then says.
    await runInDurableObject(stub as never, async (agent: unknown) => {
      await (agent as { tasks: { delete(o: object): Promise<number> } }).tasks.delete({ status: ["completed"] });
    });
    expect(await stub.sdkTask(runId)).toBeNull();
    await reconcile("TruthTaskAgent", name);
    expect(await shownRun(runId, owner)).toMatchObject({
      status: "ended_unreported",
      reason: "the agent has no record of this task run; how it ended was not reported",
    });
  });
});

describe("a managed fiber settled later by resolveFiber, whose report was lost", () => {
  it("its incident, open while the SDK kept it interrupted, closes with its run as the SDK now records it", async () => {
    const name = `lost-resolve-${uid()}`;
    const owner = { agentClass: "TruthFiberAgent", agentName: name };
    let stub = await fiberAgent(name);
    const id = await stub.startManaged("hang", "undefined");
    await stub.settleTelemetry();
    await stub.evict().catch(() => {});
    stub = await fiberAgent(name);
    await runDurableObjectAlarm(stub as never);
    await stub.settleTelemetry();
    const incidentId = fiberIncidentId("TruthFiberAgent", name, id);
    const interrupted = (await stub.sdkFiber(id))!;

    // Reconciliation confirms what the SDK keeps: the incident stays open while the fiber waits for resolveFiber.
    await reconcile("TruthFiberAgent", name);
    expect((await getIncident(env.DB, incidentId, owner))?.status).toBe(fiberIncidentStatusOf(interrupted.status));
    expect((await shownRun(id, owner))?.status).toBe(runStateOf("managed_fiber", interrupted.status)!.outcome);

    await stub.loseInTransport(["fiber.resolved"]);
    expect(await stub.resolveManaged(id, { status: "completed" })).toBe(true);
    await stub.settleTelemetry();
    const resolved = (await stub.sdkFiber(id))!;
    expect(resolved.status).not.toBe(interrupted.status);
    await reconcile("TruthFiberAgent", name);
    expect((await getIncident(env.DB, incidentId, owner))?.status).toBe(fiberIncidentStatusOf(resolved.status));
    expect(await shownRun(id, owner)).toMatchObject({ status: runStateOf("managed_fiber", resolved.status)!.outcome, endedAt: resolved.settledAt });
  });
});

describe("an agent some of whose events never arrived (a sequence gap)", () => {
  it("a reconcile pass visits it and fills in the recent runs the console never heard of, as the agent records them", async () => {
    const name = `gap-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const known = await stub.startTask("complete");
    await stub.settleTelemetry();
    // It completed healthily: it left D1, and the console reads it from R2.
    await pollRunRows<{ fiber_id: string; outcome: string | null }>(
      name,
      (r) => r.fiber_id === known && r.outcome !== null,
      (r) => r.length === 1,
    );
    // Every event of a second and a third run is lost before it ships.
    const { value: unseen } = await withDropped(
      stub,
      async () => [await stub.startTask("complete"), await stub.startTask("nap")],
      (e) => e.type.startsWith("task."),
    );
    await quiet(name);
    expect((await consoleStoreFromEnv(env).runs.list(owner)).items.map((r) => r.runId)).toEqual([known]);

    // The gap as ingest records it (agents.seq_max - agents.seq_seen). The per-event sequence numbers are another
    // change's; until it lands, this test sets the agent's counters directly.
    await env.DB.prepare("UPDATE agents SET seq_max = COALESCE(seq_max, seq_seen) + 6 WHERE agent_class = ? AND agent_name = ?")
      .bind(owner.agentClass, name)
      .run();
    const passes = await reconcileStale(env, { afterMs: 60_000, batch: 20, unknownAfterMs: 60 * 60_000 });
    expect(passes.find((p) => p.target.agentName === name)?.error).toBeNull();
    await quiet(name);

    const sdk = await stub.sdkTasks();
    const shown = await consoleStoreFromEnv(env).runs.list(owner);
    expect(shown.items.map((r) => [r.runId, r.status, r.phase]).sort()).toEqual(
      sdk.map((t) => [t.runId, runStateOf("task", t.state)!.outcome ?? "running", runStateOf("task", t.state)!.phase]).sort(),
    );
    // A run it closed says where its end came from.
    const ended = sdk.filter((t) => unseen.includes(t.runId) && runStateOf("task", t.state)!.outcome !== null);
    expect(ended.length).toBeGreaterThan(0);
    for (const t of ended) expect((await shownRun(t.runId, owner))?.reason).toContain("its events never arrived");
  });
});
