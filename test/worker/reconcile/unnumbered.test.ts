import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { reconcileAgent } from "../../../worker/reconcile/agent";
import { makeEvent } from "../../fixtures/events";
import { pollRows, pollRunRows } from "../../helpers";

// An agent with the admin package and no telemetry package (its events captured from its Worker's tail) numbers no
// events, so no gap can show that some never arrived: a run all of whose events were lost (a SIGKILL of the local
// Queue) is found only by asking. Reconciliation fills in its recent runs, as the SDK records them, on every visit.

const uid = () => crypto.randomUUID().slice(0, 8);
type Stub = { startCompletedManagedFiber(): Promise<string>; inspectFiber(id: string): Promise<{ status: string } | null> };

describe("an agent whose events carry no numbers", () => {
  it("a reconciliation fills in a run whose every event was lost, with the outcome the SDK records", async () => {
    const name = `unnumbered-${uid()}`;
    const owner = { agentClass: "PlainAdminAgent", agentName: name };
    const stub = (await getAgentByName(env.PlainAdminAgent as never, name)) as unknown as Stub;
    // The console knows the agent from one run's events (as the tail delivered them); the next run's never arrive.
    const started = { ...makeEvent("fiber.started", { fiberName: "import", managed: false }, { agentName: name, corr: { fiberId: "seen" } }), source: owner };
    const ended = { ...makeEvent("fiber.completed", { fiberName: "import", managed: false }, { agentName: name, corr: { fiberId: "seen" } }), source: owner };
    await ingestBatch(
      env.DB,
      [started, ended].map((e) => ({ id: `m-${e.id}`, body: JSON.stringify(e) })),
    );
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = 'seen' AND outcome = 'completed'", [name], (r) => r.length === 1);
    const lost = await stub.startCompletedManagedFiber();
    expect((await stub.inspectFiber(lost))?.status).toBe("completed");

    const r = await reconcileAgent(env, owner, { now: Date.now() + 1, minAgeMs: 0 });
    expect(r.error).toBeNull();
    // As the console holds it: a run that ended healthily is read from the R2 history, the rest from D1.
    const rows = await pollRunRows<{ fiber_id: string; kind: string; outcome: string | null; reason: string | null }>(
      name,
      (r) => r.fiber_id === lost && r.outcome !== null,
      (x) => x.length === 1,
    );
    expect(rows[0]).toMatchObject({ kind: "managed_fiber", outcome: "completed" });
    expect(rows[0]!.reason).toContain("its events never arrived");
  });
});
