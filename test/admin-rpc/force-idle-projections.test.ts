import { env } from "cloudflare:workers";
import { runStateOf } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { getIncident } from "../../src/store/read-models";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows } from "../helpers";

// What the console shows open must close when force idle ends it: a Tasks run, a managed fiber and a plain
// runFiber callback that the agent's own telemetry reported running, and a chat recovery it reported open.
// Real agent, real Queue into D1; the console's client emits the terminal events.

const operator = { email: "oncall@example.com", role: "operator" as const };

type RunRow = { fiber_id: string; kind: string; outcome: string | null; reason: string | null };

describe("force idle closes every projection it touches", () => {
  it("each run ends as the SDK records it (cancelled through its own API) or force_idled where it keeps no record; the recovery incident is force_idled", async () => {
    const name = `observed-${crypto.randomUUID().slice(0, 8)}`;
    const stub = await getAgentByName(env.ObservedWorkAgent, name);
    const taskId = await stub.startTask();
    const managedId = await stub.startManaged();
    const tickerId = await stub.startTicker();
    const incidentId = `req-${crypto.randomUUID().slice(0, 8)}:user-msg-1`;
    await stub.openChatRecovery(incidentId);

    // As the agent's own events tell it: three runs running, one incident open.
    const open = await pollRows<RunRow>(
      "SELECT fiber_id, kind, outcome, reason FROM runs WHERE agent_name = ? AND outcome IS NULL ORDER BY kind",
      [name],
      (r) => r.length === 3,
    );
    expect(open.map((r) => [r.kind, r.fiber_id])).toEqual([
      ["fiber", tickerId],
      ["managed_fiber", managedId],
      ["task", taskId],
    ]);
    await pollRows("SELECT 1 FROM incidents WHERE agent_name = ? AND incident_id = ? AND status = 'open'", [name, incidentId], (r) => r.length === 1);

    const r = await consoleAdminClient(env, operator).forceIdle({ agentClass: "ObservedWorkAgent", agentName: name }, { reason: "runaway import" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.ended.map((e) => [e.kind, e.runId, e.stopped]).sort()).toEqual([
      ["fiber", tickerId, true],
      ["managed_fiber", managedId, true],
      ["task", taskId, true],
    ]);
    expect(r.value.incidents).toEqual([{ incidentId, kind: "chat" }]);

    // The Tasks run and the managed fiber were cancelled through the SDK, which records it: the console shows
    // what the SDK says (its public APIs, mapped by sdk-states.ts), not its own word for the action. The plain
    // runFiber callback has no SDK record once its row is gone: force_idled, with the operator's reason.
    // The ticker could only be stopped by evicting the agent, which happens just after the answer: read it after that.
    expect(r.value.evicted).toBe(true);
    await scheduler.wait(100);
    const after = await getAgentByName(env.ObservedWorkAgent, name);
    const sdkTask = runStateOf("task", await after.taskState(taskId))?.outcome;
    const sdkManaged = runStateOf("managed_fiber", await after.managedStatus(managedId))?.outcome;
    expect([sdkTask, sdkManaged]).toEqual([expect.any(String), expect.any(String)]);
    const closed = await pollRows<RunRow>(
      "SELECT fiber_id, kind, outcome, reason FROM runs WHERE agent_name = ? AND outcome IS NOT NULL ORDER BY kind",
      [name],
      (rows) => rows.length === 3 && rows[1]!.outcome === sdkManaged && rows[2]!.outcome === sdkTask,
    );
    expect(closed.map((c) => [c.kind, c.outcome])).toEqual([
      ["fiber", "force_idled"],
      ["managed_fiber", sdkManaged],
      ["task", sdkTask],
    ]);
    expect(closed[0]!.reason).toBe("runaway import");
    // Nothing of this agent is left running, and the incident is closed by the operator's action.
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND outcome IS NULL").bind(name).first<{ n: number }>())?.n).toBe(0);
    // Closed by the overlay, beside the SDK's own word (still open: it never said otherwise); shown force_idled.
    await pollRows(
      "SELECT 1 FROM incidents WHERE agent_name = ? AND incident_id = ? AND status = 'open' AND closed_by = 'force_idled' AND closed_by_reason = 'runaway import'",
      [name, incidentId],
      (rows) => rows.length === 1,
    );
    expect(await getIncident(env.DB, incidentId, { agentClass: "ObservedWorkAgent", agentName: name })).toMatchObject({
      status: "force_idled",
      sdkStatus: "open",
      closedByReason: "runaway import",
    });
    // Nothing later reopens anything.
    await scheduler.wait(300);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND outcome IS NULL").bind(name).first<{ n: number }>())?.n).toBe(0);
  });
});
