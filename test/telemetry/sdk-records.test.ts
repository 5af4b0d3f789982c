import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { agentStatusOf, fiberIncidentId, fiberIncidentStatusOf, runStateOf } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { getIncident, type RunWithSnapshot } from "../../src/store/read-models";
import { consoleAdminClient } from "../../worker/admin-client";
import { consoleStoreFromEnv } from "../../worker/store";
import type { RecoveryChoice, TruthTaskInput } from "../fixtures/truth-agents";
import { shownRun } from "../helpers";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { getText } from "../worker/routes/harness";

/**
 * What the SDK records, the console shows: managed fibers under every outcome of `onFiberRecovered` (and a
 * `resolveFiber` later), and Tasks runs' status messages, error messages, phases and steps. Real agents-SDK
 * fixtures (test/fixtures/truth-agents.ts) with both mixins; every expectation is the SDK's own public answer
 * (inspectFiber, listFibers, tasks.get, tasks.list) read in the same test and mapped by src/telemetry/sdk-states.ts,
 * compared with the console's read models.
 */

type SdkFiber = { fiberId: string; status: string; error?: string; settledAt?: number };
type SdkTask = { runId: string; state: string; statusMessage?: string; wakeAt?: number; error?: { name: string; message: string }; settledAt?: number };
type FiberStub = {
  settleTelemetry(): Promise<void>;
  evict(): Promise<void>;
  startManaged(work: "complete" | "hang", recovery?: RecoveryChoice): Promise<string>;
  resolveManaged(id: string, result: { status: "completed" }): Promise<boolean>;
  sdkFiber(id: string): Promise<SdkFiber | null>;
  sdkFibers(): Promise<SdkFiber[]>;
};
type TaskStub = {
  settleTelemetry(): Promise<void>;
  startTask(mode: TruthTaskInput["mode"]): Promise<string>;
  sdkTask(runId: string): Promise<SdkTask | null>;
  sdkTasks(): Promise<SdkTask[]>;
};

const uid = () => crypto.randomUUID().slice(0, 8);

beforeAll(async () => {
  await publishEnvTeamKeys();
});
const viewer = { email: "sdk-records@example.com", role: "viewer" as const };
const fiberAgent = async (name: string) => (await getAgentByName(env.TruthFiberAgent as never, name)) as unknown as FiberStub;
const taskAgent = async (name: string) => (await getAgentByName(env.TruthTaskAgent as never, name)) as unknown as TaskStub;

/** Polls `read` until `ok` holds of a value (events reach D1 through the Queue); fails with the last value. */
async function until<T>(read: () => Promise<T | null>, ok: (v: T | null) => boolean, what: string, timeout = patient(10_000)): Promise<T> {
  const deadline = Date.now() + timeout;
  let last = await read();
  while (!ok(last) || last === null) {
    if (Date.now() > deadline) expect.fail(`${what}: not reached within ${timeout} ms; last: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await scheduler.wait(50);
    last = await read();
  }
  return last;
}

/** The console's word for a run's status, from the SDK's state word and the one mapping. */
const shown = (kind: "managed_fiber" | "task", word: string) => {
  const m = runStateOf(kind, word);
  expect(m, `the mapping knows the SDK's word "${word}"`).not.toBeNull();
  return m!.outcome ?? "running";
};

/** A managed fiber evicted mid-work, and woken: the SDK runs its recovery hook. */
async function evictedManaged(name: string, recovery: RecoveryChoice): Promise<{ stub: FiberStub; id: string }> {
  const first = await fiberAgent(name);
  const id = await first.startManaged("hang", recovery);
  await first.settleTelemetry();
  await first.evict().catch(() => {});
  const stub = await fiberAgent(name);
  await runDurableObjectAlarm(stub as never);
  await stub.settleTelemetry();
  return { stub, id };
}

describe("managed fibers: the run and its incident follow what the SDK records, for every onFiberRecovered outcome", () => {
  const CHOICES: RecoveryChoice[] = ["undefined", "completed", "error", "aborted", "interrupted", "throws"];
  const seen = new Set<string>();

  for (const choice of CHOICES) {
    it(`onFiberRecovered ${choice === "throws" ? "throws" : choice === "undefined" ? "returns undefined" : `returns { status: "${choice}" }`}`, async () => {
      const name = `sdk-managed-${choice}-${uid()}`;
      const { stub, id } = await evictedManaged(name, choice);
      const sdk = (await stub.sdkFiber(id))!;
      seen.add(sdk.status);
      const owner = { agentClass: "TruthFiberAgent", agentName: name };

      const run = await until(
        () => shownRun(id, owner),
        (r) => r?.status === shown("managed_fiber", sdk.status),
        "run status",
      );
      expect(run).toMatchObject({ kind: "managed_fiber", error: sdk.error ?? null, phase: runStateOf("managed_fiber", sdk.status)!.phase });
      const incident = await until(
        () => getIncident(env.DB, fiberIncidentId("TruthFiberAgent", name, id), owner),
        (i) => i?.status === fiberIncidentStatusOf(sdk.status),
        "incident status",
      );
      expect(incident!.fiberId).toBe(id);
      // The run's timeline says what the SDK made of the recovery, on the recovery's own event.
      const page = await getText(`/runs/${encodeURIComponent(id)}?agentClass=TruthFiberAgent&agentName=${encodeURIComponent(name)}`, "viewer");
      expect(page.text).toContain(`data-testid="event-fiber-status"> · the SDK records the fiber <code>${sdk.status}</code>`);

      // The agent's status where the console shows it (admin RPC), against the SDK's fibers through the one mapping.
      const status = await consoleAdminClient(env, viewer).status(owner);
      expect(status.ok && status.value.status).toBe(
        agentStatusOf({ runRows: 0, taskStates: [], fiberStatuses: (await stub.sdkFibers()).map((f) => f.status) }),
      );
    });
  }

  it("covers the SDK's distinct outcomes (the table above is not one case six times)", () => {
    expect(seen.size).toBeGreaterThanOrEqual(4);
  });

  it("an interrupted fiber resolved later (resolveFiber, which the SDK reports with no event) closes as the agent resolved it", async () => {
    const name = `sdk-managed-resolve-${uid()}`;
    const owner = { agentClass: "TruthFiberAgent", agentName: name };
    const { stub, id } = await evictedManaged(name, "undefined");
    const before = (await stub.sdkFiber(id))!;
    await until(
      () => getIncident(env.DB, fiberIncidentId("TruthFiberAgent", name, id), owner),
      (i) => i?.status === fiberIncidentStatusOf(before.status),
      "incident while interrupted",
    );

    expect(await stub.resolveManaged(id, { status: "completed" })).toBe(true);
    await stub.settleTelemetry();
    const after = (await stub.sdkFiber(id))!;
    expect(after.status).not.toBe(before.status);
    const run = await until(
      () => shownRun(id, owner),
      (r) => r?.status === shown("managed_fiber", after.status),
      "run after resolveFiber",
    );
    expect(run.endedAt).toBe(after.settledAt);
    await until(
      () => getIncident(env.DB, fiberIncidentId("TruthFiberAgent", name, id), owner),
      (i) => i?.status === fiberIncidentStatusOf(after.status),
      "incident after resolveFiber",
    );
    const status = await consoleAdminClient(env, viewer).status(owner);
    expect(status.ok && status.value.status).toBe(agentStatusOf({ runRows: 0, taskStates: [], fiberStatuses: (await stub.sdkFibers()).map((f) => f.status) }));
  });
});

/** Runs due retries (the alarm drives each) until the run settles. */
async function settleRetries(name: string, runId: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const stub = await taskAgent(name);
    const t = await stub.sdkTask(runId);
    if (t && ["completed", "failed", "cancelled"].includes(t.state)) return;
    await scheduler.wait(20);
    await runDurableObjectAlarm(stub as never);
  }
}

describe("Tasks runs: phase, step, status message and error as the SDK records them", () => {
  it("a run whose retried step fails for good shows the SDK's error message, no phase, and the step it failed in", async () => {
    const name = `sdk-task-retry-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const runId = await stub.startTask("retry-fail");
    await settleRetries(name, runId);
    await stub.settleTelemetry();
    const sdk = (await stub.sdkTask(runId))!;
    const run = await until(
      () => shownRun(runId, owner),
      (r) => r?.status === shown("task", sdk.state),
      "failed run",
    );
    expect(run.error).toBe(sdk.error!.message);
    expect(run.phase).toBe(runStateOf("task", sdk.state)!.phase);
    // The step it failed in, as the agent's own journal says it (admin RPC reads it; the public snapshot has none).
    const found = await consoleAdminClient(env, viewer).findRuns(owner, { ids: [runId] });
    expect(found.ok && found.value.runs[0]!.step).toBe(run.step);
    expect(run.step).not.toBeNull();
  });

  it("a completed run is in no phase, whatever its last live state was", async () => {
    const name = `sdk-task-done-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const runId = await stub.startTask("complete");
    await stub.settleTelemetry();
    const sdk = (await stub.sdkTask(runId))!;
    const run = await until(
      () => shownRun(runId, owner),
      (r) => r?.status === shown("task", sdk.state),
      "completed run",
    );
    expect(run.phase).toBe(runStateOf("task", sdk.state)!.phase);
    expect((await consoleStoreFromEnv(env).runs.list(owner)).items.map((r) => [r.runId, r.status, r.phase])).toEqual(
      (await stub.sdkTasks()).map((t) => [t.runId, shown("task", t.state), runStateOf("task", t.state)!.phase]),
    );
  });

  it("a run in a durable sleep is waiting with the status message it set, the agent reads waiting, and the step comes from the agent", async () => {
    const name = `sdk-task-nap-${uid()}`;
    const owner = { agentClass: "TruthTaskAgent", agentName: name };
    const stub = await taskAgent(name);
    const runId = await stub.startTask("nap");
    await stub.settleTelemetry();
    const sdk = (await stub.sdkTask(runId))!;
    const run: RunWithSnapshot = await until(
      () => shownRun(runId, owner),
      (r) => r?.phase === runStateOf("task", sdk.state)!.phase,
      "waiting run",
    );
    expect(run).toMatchObject({ status: shown("task", sdk.state), statusMessage: sdk.statusMessage, wakeAt: sdk.wakeAt });

    // Where the console shows the agent's status: what the SDK holds (a run parked until it wakes) is not idle.
    const live = await consoleAdminClient(env, viewer).live(owner);
    expect(live.ok && live.value.status.status).toBe(agentStatusOf({ runRows: 0, taskStates: (await stub.sdkTasks()).map((t) => t.state), fiberStatuses: [] }));

    // A durable sleep emits no step event: the agent page's reconciliation records the step the agent is at.
    const page = await fetchAgentPage(owner);
    expect(page).toBe(200);
    const found = await consoleAdminClient(env, viewer).findRuns(owner, { ids: [runId] });
    const step = found.ok ? found.value.runs[0]!.step : null;
    expect(step).not.toBeNull();
    await ageRuns(name);
    await fetchAgentPage(owner);
    const withStep = await until(
      () => shownRun(runId, owner),
      (r) => r?.step === step,
      "the step recorded by reconciliation",
    );
    expect(withStep).toMatchObject({ statusMessage: sdk.statusMessage, phase: runStateOf("task", sdk.state)!.phase, confirmed: true });
  });
});

/** Views the agent page as a viewer would (it reconciles what it read, in the background). */
async function fetchAgentPage(owner: { agentClass: string; agentName: string }): Promise<number> {
  return (await getText(`/agents/${owner.agentClass}/${owner.agentName}`, "viewer")).status;
}

/** Moves an agent's runs two minutes into the past: the page reconciles only work older than a minute. */
async function ageRuns(agentName: string): Promise<void> {
  await env.DB.prepare(`UPDATE runs SET last_seen = last_seen - ?1, listed_at = (last_seen - ?1) - ((last_seen - ?1) % 60000) WHERE agent_name = ?2`)
    .bind(120_000, agentName)
    .run();
}
