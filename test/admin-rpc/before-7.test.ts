import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { type AdminResult, verifyOutput } from "../../src/admin-rpc/contract";
import { foundRunsOf } from "../../src/admin-rpc/find-runs";
import {
  type FindRunRecords,
  type RecoveryBudgetRecords,
  type ResidencyRecordsAnswer,
  type RunRecords,
  residencyRecords,
  type VerifyRecordsAnswer,
  verifyRecords,
} from "../../src/admin-rpc/records-contract";
import { budgetOf } from "../../src/admin-rpc/recovery-budget";
import { residencyOf } from "../../src/admin-rpc/residency";
import { verifyOutputOf } from "../../src/admin-rpc/run-check";
import { runDetailOf } from "../../src/admin-rpc/run-detail";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Before7TaskAgent } from "../fixtures/admin-rpc-v6/agents";
import { AlarmLoopAgent } from "../fixtures/resident-agents";
import { TruthTaskAgent } from "../fixtures/truth-agents";

/**
 * A console talking to agents on the previous package version (admin contract 6), which answer the read-only reads
 * (find runs, residency, the read-back after an action) as the console's answers, built by the agent: the client
 * falls back to those methods and answers exactly what it builds from this version's records of the same agent.
 */

const uid = () => crypto.randomUUID().slice(0, 8);
type Who = { email: string; role: "viewer" | "operator" };
const viewer: Who = { email: "before-7@example.com", role: "viewer" };
const operator: Who = { email: "before-7@example.com", role: "operator" };
const client = (who = viewer) => consoleAdminClient(env, who, { allowUnregistered: true });

/** This version's *Records method, called on the same agent (its class hides it from RPC), and its value. */
async function records<T>(stub: DurableObjectStub, method: (this: unknown, input?: unknown) => Promise<AdminResult<T>>, input?: unknown): Promise<T> {
  const r = await runInDurableObject(stub as never, (agent: unknown) => method.call(agent, input));
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

describe("a console and an agent on the previous package version", () => {
  it("finds runs through adminFindRuns, answering what this version builds from the agent's records", async () => {
    const name = `before7-find-${uid()}`;
    const stub = await getAgentByName(env.Before7TaskAgent, name);
    const ids = [await stub.startTask("complete"), await stub.startTask("fail"), await stub.startTask("nap")];
    const input = { ids: [...ids, "task_never_was"], recent: 10 };
    const old = await client().findRuns({ agentClass: "Before7TaskAgent", agentName: name }, input);
    expect(old.ok).toBe(true);
    if (!old.ok) return;
    expect(old.value.missing).toEqual(["task_never_was"]);
    expect(old.value.runs.map((r) => r.runId).sort()).toEqual([...ids].sort());
    const now = foundRunsOf(await records<FindRunRecords>(stub as never, TruthTaskAgent.prototype.adminFindRunRecords, input));
    expect(old.value).toEqual(now);
  });

  it("reads residency through adminResidency, answering what this version builds from the agent's records", async () => {
    const name = `before7-resident-${uid()}`;
    const stub = await getAgentByName(env.Before7AlarmLoopAgent, name);
    await stub.startLoop(30);
    const old = await client().residency({ agentClass: "Before7AlarmLoopAgent", agentName: name });
    expect(old.ok).toBe(true);
    if (!old.ok) return;
    expect(old.value.schedules).toHaveLength(1);
    // Read as the client reads them: through the records' schema (the running work arrives as records, contract 10).
    const now = residencyOf(residencyRecords.parse(await records<ResidencyRecordsAnswer>(stub as never, AlarmLoopAgent.prototype.adminResidencyRecords)));
    // Only when it was read, and which instance answered (the previous mixin numbers its own), may differ.
    const { readAt: _a, instance: _i, ...rest } = old.value;
    const { readAt: _b, instance: _j, ...same } = now;
    expect(rest).toEqual(same);
    await stub.stopLoop();
  });

  it("verifies force idle through adminVerify: the runs read back are judged as this version judges their records", async () => {
    const name = `before7-verify-${uid()}`;
    const stub = await getAgentByName(env.Before7TaskAgent, name);
    const hanging = await stub.startTask("hang");
    const done = await stub.startTask("complete");
    const r = await client(operator).forceIdle({ agentClass: "Before7TaskAgent", agentName: name }, { reason: "before-7 read-back" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    // Read back through adminVerify (not the status-only fallback), run by run.
    expect(r.value.after.verified).toBe(true);
    expect(r.value.after.checks.find((c) => c.id === hanging)).toMatchObject({ now: "stopped", source: "tasks.get", sdkState: "cancelled" });

    const input = { ids: [hanging, done, "never_was"] };
    const old = await runInDurableObject(stub as never, (agent: Before7TaskAgent) => agent.adminVerify(input));
    const now = verifyOutputOf(verifyRecords.parse(await records<VerifyRecordsAnswer>(stub as never, TruthTaskAgent.prototype.adminVerifyRecords, input)));
    expect(old.ok).toBe(true);
    if (!old.ok) return;
    // Both read as the client reads them, through their schemas.
    const { instance: _i, ...rest } = verifyOutput.parse(old.value);
    const { instance: _j, ...same } = now;
    expect(rest).toEqual(same);
  });

  it("reads a recovery budget through adminRecoveryBudget, answering what this version builds from the agent's records", async () => {
    const name = `before7-budget-${uid()}`;
    const stub = await getAgentByName(env.Before7TaskAgent, name);
    // A chat-recovery record as the SDK keeps it in KV (this task agent has no chat of its own to recover).
    const record = {
      incidentId: "inc-1",
      status: "failed",
      reason: "max_attempts_exceeded",
      attempt: 3,
      maxAttempts: 3,
      firstSeenAt: 1000,
      progress: 7,
      workBaseline: 2,
    };
    await runInDurableObject(stub as never, (_agent: unknown, state: DurableObjectState) => state.storage.put("cf:chat-recovery:incident:inc-1", record));
    const old = await client().recoveryBudget({ agentClass: "Before7TaskAgent", agentName: name }, { incidentId: "inc-1" });
    expect(old.ok).toBe(true);
    if (!old.ok) return;
    expect(old.value.records).toMatchObject([{ incidentId: "inc-1", status: "failed", attempt: 3, work: 5, lastProgressAt: 1000 }]);
    const now = budgetOf(await records<RecoveryBudgetRecords>(stub as never, TruthTaskAgent.prototype.adminRecoveryBudgetRecords, { incidentId: "inc-1" }));
    expect({ ...old.value, now: 0 }).toEqual({ ...now, now: 0 });
  });

  it("reads one run through adminGetRun, answering what this version builds from the agent's records, and not_found alike", async () => {
    const name = `before7-run-${uid()}`;
    const stub = await getAgentByName(env.Before7TaskAgent, name);
    const id = await stub.startTask("nap");
    const target = { agentClass: "Before7TaskAgent", agentName: name };
    const old = await client().getRun(target, id);
    expect(old.ok).toBe(true);
    if (!old.ok) return;
    expect(old.value).toMatchObject({ id, kind: "task", truncated: false, snapshot: { state: "waiting", definition: "truth-crawl@v1" } });
    const now = runDetailOf(await records<RunRecords>(stub as never, TruthTaskAgent.prototype.adminGetRunRecords, { id }));
    expect({ ...old.value, ageMs: 0 }).toEqual({ ...now, ageMs: 0 });
    expect(await client().getRun(target, "never_was")).toMatchObject({
      ok: false,
      error: { code: "not_found", facts: { kind: "no_live_run", id: "never_was" } },
    });
  });

  it("resolves an op through adminResolveOp: the same answers as this version's from the same ledger, refusals alike", async () => {
    const op = operator;
    const answers = [];
    for (const agentClass of ["LedgerAgent", "Before7LedgerAgent"] as const) {
      const name = `before7-ledger-${uid()}`;
      const stub = await getAgentByName(env[agentClass] as DurableObjectNamespace<import("../fixtures/ledger-agent").LedgerAgent>, name);
      await stub.lostCall("op-1", "payments.refund", false);
      const target = { agentClass, agentName: name };
      answers.push([
        await client(op).resolveOp(target, { opId: "op-1", resolution: "verified_ran", resultRef: "re_1", reason: "provider shows it" }),
        await client(op).resolveOp(target, { opId: "op-1", resolution: "verified_not_ran", reason: "second thoughts" }),
        await client(op).resolveOp(target, { opId: "op-nobody", resolution: "verified_not_ran", reason: "checked" }),
      ]);
    }
    const [now, old] = answers;
    expect(now![0]).toMatchObject({ ok: true, value: { recorded: "verified_ran", resultRef: "re_1", after: { status: "settled" } } });
    expect(now![1]).toEqual({
      ok: false,
      error: {
        code: "invalid_input",
        message: 'op "op-1" is not ambiguous',
        facts: { kind: "op_not_ambiguous", opId: "op-1", status: "settled", resolution: "verified_ran" },
      },
    });
    expect(now![2]).toMatchObject({ ok: false, error: { code: "not_found", message: 'no op "op-nobody" in the ledger' } });
    expect(old).toEqual(now);
  });
});
