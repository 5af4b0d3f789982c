import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import type { TruthTaskInput } from "../fixtures/truth-agents";
import { pollRows } from "../helpers";

/**
 * adminFindRuns: what an agent still records of its runs in every state, by id and most recent, as
 * reconciliation asks it. Checked against the SDK's own public answers (tasks.get / tasks.list, inspectFiber)
 * on the truth fixtures, through the audited client the console uses.
 */

type SdkTask = { runId: string; state: string; settledAt?: number; statusMessage?: string; error?: { message: string } };
type TaskStub = {
  settleTelemetry(): Promise<void>;
  startTask(mode: TruthTaskInput["mode"]): Promise<string>;
  sdkTask(id: string): Promise<SdkTask | null>;
  sdkTasks(): Promise<SdkTask[]>;
};
type FiberStub = {
  settleTelemetry(): Promise<void>;
  startManaged(work: "complete" | "fail"): Promise<string>;
  sdkFiber(id: string): Promise<{ status: string; error?: string; settledAt?: number } | null>;
};

const uid = () => crypto.randomUUID().slice(0, 8);
const viewer = { email: "find-runs@example.com", role: "viewer" as const };
const registered = (name: string) => pollRows("SELECT 1 FROM agents WHERE agent_name = ?", [name], (r) => r.length === 1);

describe("adminFindRuns", () => {
  it("answers every Tasks run by id in whatever state the SDK holds it, and says which ids it has no record of", async () => {
    const name = `find-tasks-${uid()}`;
    const stub = (await getAgentByName(env.TruthTaskAgent as never, name)) as unknown as TaskStub;
    const ids = [await stub.startTask("complete"), await stub.startTask("fail"), await stub.startTask("nap")];
    await stub.settleTelemetry();
    await registered(name);
    const r = await consoleAdminClient(env, viewer).findRuns({ agentClass: "TruthTaskAgent", agentName: name }, { ids: [...ids, "task_never_was"] });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.missing).toEqual(["task_never_was"]);
    for (const id of ids) {
      const sdk = (await stub.sdkTask(id))!;
      const run = r.value.runs.find((x) => x.runId === id)!;
      expect(run).toMatchObject({
        kind: "task",
        source: "task",
        state: sdk.state,
        settledAt: sdk.settledAt ?? null,
        statusMessage: sdk.statusMessage ?? null,
        error: sdk.error?.message ?? null,
      });
    }

    const recent = await consoleAdminClient(env, viewer).findRuns({ agentClass: "TruthTaskAgent", agentName: name }, { recent: 10 });
    expect(recent.ok && recent.value.runs.map((x) => [x.runId, x.state]).sort()).toEqual((await stub.sdkTasks()).map((t) => [t.runId, t.state]).sort());
  });

  it("answers a managed fiber in any status, as inspectFiber does", async () => {
    const name = `find-fibers-${uid()}`;
    const stub = (await getAgentByName(env.TruthFiberAgent as never, name)) as unknown as FiberStub;
    const ok = await stub.startManaged("complete");
    const bad = await stub.startManaged("fail");
    await stub.settleTelemetry();
    await registered(name);
    const r = await consoleAdminClient(env, viewer).findRuns({ agentClass: "TruthFiberAgent", agentName: name }, { ids: [ok, bad] });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    for (const id of [ok, bad]) {
      const sdk = (await stub.sdkFiber(id))!;
      expect(r.value.runs.find((x) => x.runId === id)).toMatchObject({
        kind: "managed_fiber",
        state: sdk.status,
        error: sdk.error ?? null,
        settledAt: sdk.settledAt ?? null,
      });
    }
  });

  it("refuses a question that names no runs or too many, with a sentence, at the client and at the agent", async () => {
    const name = `find-bad-${uid()}`;
    const stub = (await getAgentByName(env.TruthTaskAgent as never, name)) as unknown as TaskStub & { adminFindRunRecords(input: unknown): Promise<unknown> };
    await stub.startTask("complete");
    await stub.settleTelemetry();
    await registered(name);
    const client = consoleAdminClient(env, viewer);
    const target = { agentClass: "TruthTaskAgent", agentName: name };
    expect(await client.findRuns(target, {})).toEqual({ ok: false, error: { code: "invalid_input", message: "say which runs: ids, recent, or both" } });
    expect(await client.findRuns(target, { ids: Array.from({ length: 101 }, (_, i) => `r${i}`) })).toMatchObject({
      ok: false,
      error: { code: "invalid_input", message: "ids: at most 100 ids per call" },
    });
    // The agent checks too: a caller other than our client gets the same typed answer, never a thrown error.
    expect(await stub.adminFindRunRecords({ recent: 0 })).toMatchObject({ ok: false, error: { code: "invalid_input" } });
    expect(await stub.adminFindRunRecords({ ids: ["x"], extra: true })).toMatchObject({ ok: false, error: { code: "invalid_input" } });
  });

  it("is unsupported on an agent without the admin mixin", async () => {
    const name = `find-nomixin-${uid()}`;
    const stub = await getAgentByName(env.TelemetryOnlyAgent, name);
    await stub.work();
    await registered(name);
    const r = await consoleAdminClient(env, viewer).findRuns({ agentClass: "TelemetryOnlyAgent", agentName: name }, { recent: 5 });
    expect(r).toMatchObject({ ok: false, error: { code: "unsupported" } });
  });
});
