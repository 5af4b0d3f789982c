import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import sdkPackage from "../../node_modules/agents/package.json";
import {
  activeFiberIds,
  CHAT_RECOVERY_INCIDENT_KEY_PREFIX,
  chatIncidentIdOf,
  chatTurnRequestIdOf,
  FIBER_DONE_STATUSES,
  KEEP_ALIVE_JOB_ID,
  keepAliveOf,
  runningAlarmJobs,
  TASK_TERMINAL_STATES,
  taskCurrentStep,
} from "../../src/admin-rpc/sdk-layout";
import type { StubbornAgent } from "../fixtures/busy-agents";
import type { DurableWorkAgent } from "../fixtures/durable-work-agent";
import type { ResidentPlainAgent } from "../fixtures/resident-agents";

// The contract of src/admin-rpc/sdk-layout.ts: every SDK fact admin RPC relies on that is not public API,
// checked against the installed SDK. An upgrade that moves one fails here. (The chat facts — Think's
// chat-turn Task definition and agents/chat's record prefix — are pinned in the chat suite, which loads Think:
// test/examples/demo-fleet/chat/force-idle.test.ts.)

const uid = () => crypto.randomUUID().slice(0, 8);
const columns = (sql: SqlStorage, table: string) =>
  sql
    .exec<{ name: string }>(`PRAGMA table_info(${table})`)
    .toArray()
    .map((c) => c.name);

describe("agents SDK layout facts (pinned to agents 0.32.0)", () => {
  it("is checked against agents 0.32.0", () => {
    expect(sdkPackage.version).toBe("0.32.0");
  });

  it("keeps live runFiber rows in cf_agents_runs, and Tasks steps in cf_agents_task_steps with the columns read", async () => {
    const stub = await getAgentByName(env.DurableWorkAgent, `layout-${uid()}`);
    const runId = await stub.startTask();
    await runInDurableObject(stub, async (agent: DurableWorkAgent, state) => {
      const sql = state.storage.sql;
      expect(columns(sql, "cf_agents_runs")).toEqual(expect.arrayContaining(["id", "name", "snapshot", "created_at"]));
      expect(columns(sql, "cf_agents_task_steps")).toEqual(expect.arrayContaining(["run_id", "step_name", "state", "updated_at"]));
      expect(taskCurrentStep(sql, runId)).toBe("fetch-page-2 (running)");
      // The run states: the terminal ones are exactly what TASK_TERMINAL_STATES says; the rest is live work.
      const ddl = sql.exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'cf_agents_task_runs'").one().sql;
      const states = [...ddl.match(/state IN \(([^)]*)\)/)![1]!.matchAll(/'(\w+)'/g)].map((m) => m[1]);
      expect(states).toEqual(["pending", "running", "waiting", "completed", "failed", "cancelled"]);
      expect([...TASK_TERMINAL_STATES]).toEqual(["completed", "failed", "cancelled"]);
      await agent.tasks.cancel(runId, "test over");
    });
  });

  it("counts keepAlive holders in _keepAliveRefs and keeps the heartbeat in the cf:keep-alive job row, created when first held", async () => {
    const stub = await getAgentByName(env.ResidentPlainAgent, `keepalive-${uid()}`);
    await runInDurableObject(stub, async (agent: ResidentPlainAgent, state) => {
      expect(keepAliveOf(agent)).toEqual({ holders: 0, intervalMs: 30_000, jobId: KEEP_ALIVE_JOB_ID });
      const release = await agent.keepAlive();
      expect(keepAliveOf(agent).holders).toBe(1);
      const row = state.storage.sql
        .exec<{ time: number; created_at: number }>("SELECT time, created_at FROM cf_agents_jobs WHERE id = ?", KEEP_ALIVE_JOB_ID)
        .one();
      expect(row.time).toBe(await state.storage.getAlarm());
      expect(row.created_at * 1000).toBeLessThanOrEqual(Date.now());
      release();
      expect(keepAliveOf(agent).holders).toBe(0);
    });
  });

  it("tracks the runFiber callbacks running in the instance in _runFiberActiveFibers", async () => {
    const stub = await getAgentByName(env.DurableWorkAgent, `active-${uid()}`);
    const id = await stub.startTicker();
    await runInDurableObject(stub, async (agent: DurableWorkAgent) => {
      expect(activeFiberIds(agent)?.has(id)).toBe(true);
      const done = await agent.runFiber("quick", async (ctx) => ctx.id);
      expect(activeFiberIds(agent)?.has(done)).toBe(false);
      // A managed fiber's callback runs as a runFiber callback too, under the fiber's id.
      const fiberId = await agent.startManaged();
      expect(activeFiberIds(agent)?.has(fiberId)).toBe(true);
      await agent.cancelFiber(fiberId, "test over");
    });
    await stub.evict().catch(() => {});
  });

  it("has the managed-fiber statuses FIBER_DONE_STATUSES treats as done", async () => {
    const stub = await getAgentByName(env.DurableWorkAgent, `fibers-${uid()}`);
    const fiberId = await stub.startManaged();
    await runInDurableObject(stub, async (agent: DurableWorkAgent) => {
      expect((await agent.inspectFiber(fiberId))?.status).toBe("running");
      expect(FIBER_DONE_STATUSES.has("running")).toBe(false);
      await agent.cancelFiber(fiberId, "test over");
      const after = (await agent.inspectFiber(fiberId))?.status;
      expect(after).toBe("aborted");
      expect(FIBER_DONE_STATUSES.has(after!)).toBe(true);
    });
  });

  it("marks the queued and scheduled callbacks its alarm loop runs in cf_agents_jobs, and a new alarm re-runs a running one and waits for it", async () => {
    const stub = await getAgentByName(env.StubbornAgent, `jobs-${uid()}`);
    const since = Date.now();
    await stub.startQueuedTurn();
    await runInDurableObject(stub, async (agent: StubbornAgent, state) => {
      expect(runningAlarmJobs(state.storage.sql, since)).toEqual([expect.objectContaining({ owner: "queue", fn: "holdTurn" })]);
      // A mark from before this instance started is not this instance's work.
      expect(runningAlarmJobs(state.storage.sql, Date.now() + 60_000)).toEqual([]);
      // Why trigger alarm must not start an alarm now: the loop takes every due row, running or not, calls the
      // callback a second time and waits for it (the operator waited 15 s for a timeout).
      const alarm = agent.alarm();
      const first = await Promise.race([alarm.then(() => "ended"), scheduler.wait(300).then(() => "waiting")]);
      expect(first).toBe("waiting");
      expect(agent.holdCalls()).toBe(2);
      agent.release();
      await alarm;
    });
    await stub.release();

    const scheduled = await getAgentByName(env.StubbornAgent, `schedules-${uid()}`);
    await scheduled.startScheduledTurn();
    await runInDurableObject(scheduled, async (_agent: StubbornAgent, state) => {
      expect(runningAlarmJobs(state.storage.sql, since)).toEqual([expect.objectContaining({ owner: "scheduler", fn: "holdTurn" })]);
    });
    await scheduled.release();
  });

  it("names chat-recovery records by the encoded incident id, which the record also carries", () => {
    const id = "req-1:user-msg 2/ü";
    const key = `${CHAT_RECOVERY_INCIDENT_KEY_PREFIX}${encodeURIComponent(id)}`;
    expect(chatIncidentIdOf(key, { incidentId: id })).toBe(id);
    expect(chatIncidentIdOf(key, { status: "scheduled" })).toBe(id);
  });

  it("reads a chat turn's request id from the name the SDK gives its fiber, and none from any other fiber", () => {
    expect(chatTurnRequestIdOf("__cf_internal_chat_turn:req-9")).toBe("req-9");
    expect(chatTurnRequestIdOf("__cf_internal_chat_turn:")).toBeNull();
    expect(chatTurnRequestIdOf("import-orders")).toBeNull();
    expect(chatTurnRequestIdOf("my__cf_internal_chat_turn:req-9")).toBeNull();
  });
});
