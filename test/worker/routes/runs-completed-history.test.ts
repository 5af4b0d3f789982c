import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

/** One agent's runs through the real consumer (D1 and R2): healthy completions leave D1, the rest stay. */
async function deliver(agentName: string, events: TelemetryEvent[]) {
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${agentName}-${body.id}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
}

const runRows = async (agentName: string) =>
  (await env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ? ORDER BY fiber_id").bind(agentName).all<{ fiber_id: string }>()).results.map(
    (r) => r.fiber_id,
  );

type ListJson = { items: { runId: string; status: string }[]; next: string | null; completedFromHistory?: { found: number; hours: number } };

async function list(query: string): Promise<ListJson> {
  const res = await call(`/runs?${query}`, { as: "viewer", headers: { accept: "application/json" } });
  expect(res.status).toBe(200);
  return (await res.json()) as ListJson;
}

async function agentWithThreeRuns() {
  const agentName = `mix-${crypto.randomUUID()}`;
  const t0 = Date.now() - 30 * 60_000;
  const at = (s: number, fiberId: string) => ({ agentName, time: t0 + s * 1000, corr: { fiberId } });
  await deliver(agentName, [
    makeEvent("fiber.started", { fiberName: "done" }, at(1, "a-done")),
    makeEvent("fiber.completed", { fiberName: "done" }, at(2, "a-done")),
    makeEvent("fiber.started", { fiberName: "broke" }, at(3, "b-broke")),
    makeEvent("fiber.failed", { fiberName: "broke", error: "boom" }, at(4, "b-broke")),
    makeEvent("fiber.started", { fiberName: "going" }, at(5, "c-going")),
  ]);
  return agentName;
}

describe("an agent's runs list with the runs that completed healthily", () => {
  it("lists D1's runs and the completed ones from history, newest first, and says the span it read", async () => {
    const agentName = await agentWithThreeRuns();
    // D1 holds what is running or needs a person.
    expect(await runRows(agentName)).toEqual(["b-broke", "c-going"]);
    const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
    const all = await list(owner);
    expect(all.items.map((r) => [r.runId, r.status])).toEqual([
      ["c-going", "running"],
      ["b-broke", "failed"],
      ["a-done", "completed"],
    ]);
    expect(all.completedFromHistory).toMatchObject({ found: 1, hours: 24 });
    expect((await list(`${owner}&outcome=completed`)).items.map((r) => r.runId)).toEqual(["a-done"]);
    // Running runs are D1's alone: no history read.
    const running = await list(`${owner}&outcome=running`);
    expect(running.items.map((r) => r.runId)).toEqual(["c-going"]);
    expect(running.completedFromHistory).toBeUndefined();
    const html = await (await call(`/runs?${owner}`, { as: "viewer" })).text();
    expect(mustTestId(html, "runs-completed-from-history").attrs["data-found"]).toBe("1");
  });

  it("pages on across both stores with the list's own cursors, each run once", async () => {
    const agentName = await agentWithThreeRuns();
    const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 6; i++) {
      const page: ListJson = await list(`${owner}&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.items.map((r) => r.runId));
      cursor = page.next;
      if (!cursor) break;
    }
    expect(seen).toEqual(["c-going", "b-broke", "a-done"]);
  });

  it("a fleet-wide list reads the fleet's completed runs from history and says so", async () => {
    const html = await (await call("/runs", { as: "viewer" })).text();
    expect(mustTestId(html, "runs-completed-from-history").attrs["data-scope"]).toBe("fleet");
  });
});
