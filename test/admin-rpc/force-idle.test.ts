import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { forceIdleNoticeWords } from "../../console/admin-words";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX } from "../../src/admin-rpc/sdk-layout";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows, rejectionOf } from "../helpers";

// Force idle stops work wherever the SDK has a public way, stops the rest by evicting the agent (or says
// plainly that it could not), and reports every run it ended through the real Queue into D1. The fixture
// agents have only the admin mixin: no telemetry of ours, so the events come from the console's client.

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "viewer@example.com", role: "viewer" as const };
const uid = () => crypto.randomUUID().slice(0, 8);
const plain = { allowUnregistered: true };

type EventRow = { type: string; payload: string; fiber_id: string | null; incident_id: string | null; request_id: string | null };
/** The run.force_idled / incident.force_idled events of one agent, once `n` have arrived. */
const forceIdledEvents = (name: string, n: number) =>
  pollRows<EventRow>(
    "SELECT type, payload, fiber_id, incident_id, request_id FROM events WHERE agent_name = ? AND type IN ('run.force_idled', 'incident.force_idled') ORDER BY time, id",
    [name],
    (r) => r.length >= n,
  );

/** The audit rows of one agent, in order (written by the console's client before and after each action). */
const auditRows = async (name: string) =>
  (
    await env.DB.prepare("SELECT before, after, result FROM audit_log WHERE target_name = ? ORDER BY time, rowid")
      .bind(name)
      .all<{ before: string; after: string; result: string }>()
  ).results;

async function work(cls: "DurableWorkAgent" | "NoEvictWorkAgent" = "DurableWorkAgent") {
  const name = `work-${uid()}`;
  return { name, stub: await getAgentByName(env[cls], name), t: { agentClass: cls, agentName: name } };
}

/** Samples a growing counter twice, `ms` apart. */
async function twoSamples(read: () => Promise<number>, ms: number): Promise<[number, number]> {
  const a = await read();
  await scheduler.wait(ms);
  return [a, await read()];
}

describe("force idle on Tasks runs and managed fibers", () => {
  it("lists a Tasks run at its current step and a managed fiber with its snapshot", async () => {
    const { stub, t } = await work();
    const runId = await stub.startTask("docs.example.com");
    const fiberId = await stub.startManaged();
    const admin = consoleAdminClient(env, viewer, plain);

    const runs = await admin.listRuns(t);
    expect(runs.ok).toBe(true);
    if (!runs.ok) return;
    expect(runs.value.tasks).toEqual([
      expect.objectContaining({ runId, kind: "task", definition: "crawl", state: "running", currentStep: "fetch-page-2 (running)" }),
    ]);
    expect(runs.value.managedFibers).toEqual([expect.objectContaining({ fiberId, name: "sync-crm", status: "running" })]);
    // A managed fiber keeps a runFiber row while its callback runs: listed once, as what it is.
    expect(runs.value.runs).toEqual([expect.objectContaining({ id: fiberId, kind: "managed_fiber" })]);

    const fiber = await admin.getRun(t, fiberId);
    expect(fiber.ok && fiber.value).toMatchObject({ id: fiberId, kind: "managed_fiber", snapshot: { page: 3, of: 9 } });
    const task = await admin.getRun(t, runId);
    expect(task.ok && task.value).toMatchObject({ id: runId, kind: "task", snapshot: { state: "running", currentStep: "fetch-page-2 (running)" } });

    const status = await admin.status(t);
    expect(status.ok && status.value.capabilities).toEqual({
      contract: 11,
      forceIdleHook: false,
      derivedStatus: false,
      tasks: true,
      managedFibers: true,
      chatRecovery: false,
      plainFiberStop: "evict",
      resolveOps: false,
      pauseRecovery: true,
    });
  });

  it("cancels both through the SDK's public APIs, reports them stopped, and emits run.force_idled for each into D1", async () => {
    const { name, stub, t } = await work();
    const runId = await stub.startTask();
    const fiberId = await stub.startManaged();

    const r = await consoleAdminClient(env, operator, plain).forceIdle(t, { reason: "crawler hammering the site" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.ended).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "task", runId, name: "crawl", stopped: true, how: "cancelled" }),
        expect.objectContaining({ kind: "managed_fiber", runId: fiberId, name: "sync-crm", stopped: true, how: "cancelled" }),
      ]),
    );
    expect(r.value.ended).toHaveLength(2);
    expect(r.value).toMatchObject({ noop: false, evicted: false, notice: null, cancelledFibers: [fiberId], after: { status: "idle", runCount: 0 } });
    // Read back after the action: both settled, as the SDK's public APIs say.
    expect(r.value.result).toBe("ok");
    expect(r.value.after.checks).toEqual(
      expect.arrayContaining([
        { id: runId, kind: "task", name: "crawl", now: "stopped", sdkState: "cancelled", source: "tasks.get" },
        { id: fiberId, kind: "managed_fiber", name: "sync-crm", now: "stopped", sdkState: "aborted", source: "inspectFiber" },
      ]),
    );
    // The agent itself agrees, through the SDK's own views.
    expect(await stub.taskState(runId)).toBe("cancelled");
    expect(await stub.managedStatus(fiberId)).toBe("aborted");

    const events = await forceIdledEvents(name, 2);
    const byKind = Object.fromEntries(events.map((e) => [JSON.parse(e.payload).kind, { ...e, payload: JSON.parse(e.payload) }]));
    // Each carries how it was stopped, and what the SDK said of it when the console read the agent back.
    expect(byKind.task.payload).toEqual({
      kind: "task",
      runId,
      name: "crawl",
      reason: "crawler hammering the site",
      stopped: true,
      how: "cancelled",
      sdkState: "cancelled",
    });
    expect(byKind.managed_fiber.payload).toEqual({
      kind: "managed_fiber",
      runId: fiberId,
      name: "sync-crm",
      reason: "crawler hammering the site",
      stopped: true,
      how: "cancelled",
      sdkState: "aborted",
    });
    expect(byKind.managed_fiber.fiber_id).toBe(fiberId);

    const again = await consoleAdminClient(env, operator, plain).forceIdle(t, { reason: "again" });
    expect(again.ok && again.value.noop).toBe(true);
  });

  it("counts only the recovery incidents it closed: a record of one the SDK had already closed is removed, reported apart, and gets no incident.force_idled", async () => {
    const { name, stub, t } = await work();
    const open = `req-${uid()}:user-msg-1`;
    const exhausted = `req-${uid()}:user-msg-2`;
    const completed = `req-${uid()}:user-msg-3`;
    const put = (incidentId: string, status: string, attempt: number) =>
      stub.putRecord(`${CHAT_RECOVERY_INCIDENT_KEY_PREFIX}${encodeURIComponent(incidentId)}`, { incidentId, status, attempt, reason: null });
    await put(open, "attempting", 2);
    await put(exhausted, "exhausted", 3);
    await put(completed, "completed", 1);

    const r = await consoleAdminClient(env, operator, plain).forceIdle(t, { reason: "stop retrying that chat" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    // What was open and is closed now: one; the SDK had closed the other two before the action.
    expect(r.value.incidents).toEqual([{ incidentId: open, kind: "chat" }]);
    expect(r.value.alreadyClosed.sort((a, b) => a.status.localeCompare(b.status))).toEqual([
      { incidentId: completed, status: "completed" },
      { incidentId: exhausted, status: "exhausted" },
    ]);
    // Every record is gone after it, as the agent read back says.
    expect(r.value.after.chatRecoveryIncidents).toEqual([]);
    // The audit keeps the before-state as the agent had it: each record with the SDK's status.
    const [audit] = await auditRows(name);
    const before = JSON.parse(audit!.before) as { chatRecoveryIncidents: { incidentId: string; status: string }[] };
    expect(before.chatRecoveryIncidents.map((c) => [c.incidentId, c.status]).sort()).toEqual(
      [
        [completed, "completed"],
        [exhausted, "exhausted"],
        [open, "attempting"],
      ].sort(),
    );
    // Only the incident the action closed is recorded as force idled.
    const [event] = await forceIdledEvents(name, 1);
    expect(event).toMatchObject({ type: "incident.force_idled", incident_id: open });
    expect(JSON.parse(event!.payload)).toEqual({ reason: "stop retrying that chat" });
    await scheduler.wait(300);
    expect((await forceIdledEvents(name, 1)).filter((e) => e.type === "incident.force_idled").map((e) => e.incident_id)).toEqual([open]);
  });
});

describe("force idle on a plain runFiber callback (no hook, no SDK cancel)", () => {
  it("really stops it by evicting the agent once its row is gone, and says so", async () => {
    const { name, stub, t } = await work();
    const runId = await stub.startTicker();
    const [a, b] = await twoSamples(() => stub.ticks(), 150);
    expect(b).toBeGreaterThan(a); // it ticks

    const r = await consoleAdminClient(env, operator, plain).forceIdle(t, { reason: "runaway ticker" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.ended).toEqual([expect.objectContaining({ kind: "fiber", runId, name: "ticker", stopped: true, how: "evicted", why: "evicted" })]);
    expect(r.value.evicted).toBe(true);
    // Read back from the instance that woke after the eviction: nothing of it remains.
    expect(r.value.result).toBe("ok");
    expect(r.value.after).toMatchObject({
      verified: true,
      status: "idle",
      checks: [{ id: runId, now: "stopped", sdkState: "gone", source: "none" }],
      busy: [],
    });
    // Why it kept running, as a fact (the console words it: test/console/admin-words.test.ts).
    expect(r.value.notice).toEqual({ code: "unstopped", cause: "no_hook" });
    expect(forceIdleNoticeWords(r.value)).toMatch(/^1 run \(ticker\) kept running: .* The agent is being evicted to stop it/);

    // Stopped for real: the count stays put (a fresh stub wakes a fresh instance, which recovers nothing).
    await scheduler.wait(200);
    const fresh = await getAgentByName(env.DurableWorkAgent, name);
    const [c, d] = await twoSamples(() => fresh.ticks(), 300);
    expect(d).toBe(c);
    expect(await consoleAdminClient(env, viewer, plain).listRuns(t)).toMatchObject({ ok: true, value: { runs: [] } });

    const [event] = await forceIdledEvents(name, 1);
    expect(JSON.parse(event!.payload)).toEqual({
      kind: "fiber",
      runId,
      name: "ticker",
      reason: "runaway ticker",
      stopped: true,
      how: "evicted",
      sdkState: "gone",
    });
    expect(event!.fiber_id).toBe(runId);
  });

  it("with evictToStop off, reports it not stopped, in one plain sentence, and it keeps running", async () => {
    const { name, stub, t } = await work("NoEvictWorkAgent");
    const runId = await stub.startTicker();
    try {
      const r = await consoleAdminClient(env, operator, plain).forceIdle(t, { reason: "runaway ticker" });
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.value.ended).toEqual([expect.objectContaining({ kind: "fiber", runId, stopped: false, how: "still_running", why: "unstoppable" })]);
      expect(r.value.evicted).toBe(false);
      expect(r.value.notice).toEqual({ code: "unstopped", cause: "no_hook" });
      expect(forceIdleNoticeWords(r.value)).toBe(
        "1 run (ticker) still runs in memory: the SDK has no way to cancel a runFiber callback from outside and this agent has no onAdminForceIdle hook. Its row is removed, so it is not recovered, but it runs until it returns or the agent is evicted.",
      );
      // The row is gone, but the callback still ticks: the agent, read back, says it runs, and the result is partial.
      expect(r.value.result).toBe("partial");
      expect(r.value.after).toMatchObject({
        status: "running",
        runCount: 0,
        capabilities: { plainFiberStop: "none" },
        checks: [{ id: runId, now: "running", source: "in_memory" }],
      });
      const [a, b] = await twoSamples(() => stub.ticks(), 150);
      expect(b).toBeGreaterThan(a);
      const [event] = await forceIdledEvents(name, 1);
      expect(JSON.parse(event!.payload)).toMatchObject({ kind: "fiber", runId, stopped: false, sdkState: "running" });
    } finally {
      await rejectionOf(stub.evict());
    }
  });
});
