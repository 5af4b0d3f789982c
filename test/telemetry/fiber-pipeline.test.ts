import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { eventsOf, pollRows, pollRunRows, probe, rejectionOf } from "../helpers";

describe("fiber events from a real agent reach D1 through the Queue", () => {
  it("a completed runFiber yields started, stashed and completed events and a runs row", async () => {
    const { name, stub } = await probe();
    const result = await stub.work(3);
    expect(result.sum).toBe(6);

    // It completed healthily, so it left D1 with its end: the console folds it from the R2 history.
    const rows = await pollRunRows<{ fiber_id: string; outcome: string; name: string; snapshot_preview: string; started_at: number; ended_at: number }>(
      name,
      (r) => r.fiber_id === result.fiberId,
      (r) => r[0]?.outcome === "completed" && r[0]?.snapshot_preview !== null,
    );
    expect(await env.DB.prepare("SELECT 1 FROM runs WHERE fiber_id = ?").bind(result.fiberId).first()).toBeNull();
    expect(rows[0]!.name).toBe("probe-work");
    expect(JSON.parse(rows[0]!.snapshot_preview)).toEqual({ step: 3, sum: 6 });
    expect(rows[0]!.ended_at).toBeGreaterThanOrEqual(rows[0]!.started_at);

    // Three checkpoints in one synchronous run ship as one event with the last snapshot, in order.
    const types = (await eventsOf(name)).map((e) => e.type);
    expect(types).toEqual(["fiber.started", "fiber.stashed", "fiber.completed"]);

    const agents = await env.DB.prepare("SELECT * FROM agents WHERE agent_name = ?").bind(name).all<{ agent_class: string }>();
    expect(agents.results).toEqual([expect.objectContaining({ agent_class: "ProbeAgent" })]);
  });

  it("a failing runFiber keeps the error, and the agent still sees its own error unchanged", async () => {
    const { stub } = await probe();
    expect((await rejectionOf(stub.work(2, { fail: true }))).message).toBe("probe failure: step budget exceeded");
    const rows = await pollRows<{ outcome: string; error: string }>(
      "SELECT outcome, error FROM runs WHERE name = 'probe-work' AND outcome = 'failed' AND error LIKE '%step budget%'",
      [],
      (r) => r.length > 0,
    );
    expect(rows[0]!.error).toContain("probe failure");
  });

  it("an evicted fiber is recovered by the alarm, and recovery forms one incident with a stable id", async () => {
    const { name } = await probe();
    let stub = await getAgentByName(env.ProbeAgent, name);
    await stub.startHangingFiber();
    const [run] = await stub.runRows();
    expect(run?.name).toBe("probe-hang");
    expect((await rejectionOf(stub.evict())).message).toContain("test eviction");

    stub = await getAgentByName(env.ProbeAgent, name);
    await runDurableObjectAlarm(stub);
    expect(await stub.runRows()).toEqual([]);

    const incidentId = `fiber:ProbeAgent/${name}/${run!.id}`;
    const inc = await pollRows<{ status: string; kind: string; fiber_id: string }>(
      "SELECT * FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r[0]?.status === "recovered",
    );
    expect(inc[0]!.kind).toBe("fiber");
    expect(inc[0]!.fiber_id).toBe(run!.id);

    const fiber = await pollRows<{ outcome: string; snapshot_preview: string }>(
      "SELECT * FROM runs WHERE fiber_id = ?",
      [run!.id],
      (r) => r[0]?.outcome === "recovered",
    );
    expect(JSON.parse(fiber[0]!.snapshot_preview)).toEqual({ phase: "waiting", secret: null });

    const types = (await eventsOf(name)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["fiber.started", "fiber.stashed", "fiber.recovery.detected", "fiber.recovery.handled"]));
  });
});
