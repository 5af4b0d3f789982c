import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { gapAgentsDueForReconcile, knownRunOutcomes } from "../../src/store/read-models";
import { recordReconciliation } from "../../src/store/reconciliations";
import { makeEvent } from "../fixtures/events";
import { ingest } from "./store-helpers";

/**
 * The store's answers for reconciliation's gap filling: which agents have events that never arrived
 * (agents.seq_max - agents.seq_seen > 0), and which of an agent's runs the console knows. The per-event
 * sequence numbers are another change's (ingest writes the counters); these tests set the counters with a
 * D1 UPDATE on agents that reported through the real ingest path.
 */

const uid = () => crypto.randomUUID().slice(0, 8);
const NOW = Date.now();

async function agentWithGap(name: string, opts: { missing: number; lastSeen: number }) {
  await ingest([makeEvent("fiber.started", { fiberName: "etl" }, { agentName: name, corr: { fiberId: `f-${name}` }, time: opts.lastSeen })]);
  await env.DB.prepare("UPDATE agents SET seq_seen = 10, seq_max = ? WHERE agent_name = ?")
    .bind(10 + opts.missing, name)
    .run();
}

describe("agents with a sequence gap", () => {
  it("lists agents with events that never arrived, most recently active first, and not those asked since", async () => {
    const p = `gaps-${uid()}`;
    const t = NOW - 3_600_000;
    await agentWithGap(`${p}-old`, { missing: 2, lastSeen: t });
    await agentWithGap(`${p}-new`, { missing: 5, lastSeen: t + 60_000 });
    await agentWithGap(`${p}-whole`, { missing: 0, lastSeen: t + 120_000 });
    await agentWithGap(`${p}-asked`, { missing: 1, lastSeen: t + 180_000 });
    await recordReconciliation(env.DB, { agentClass: "ProbeAgent", agentName: `${p}-asked`, askedAt: NOW - 1000, findings: 0, error: null });

    const mine = (await gapAgentsDueForReconcile(env.DB, NOW - 600_000, 100)).filter((a) => a.agentName.startsWith(p));
    expect(mine).toEqual([
      { agentClass: "ProbeAgent", agentName: `${p}-new`, missing: 5 },
      { agentClass: "ProbeAgent", agentName: `${p}-old`, missing: 2 },
    ]);
  });

  it("reads at most `scan` agents however many there are (the gap has no index): older gaps wait", async () => {
    const p = `gaps-scan-${uid()}`;
    const t = NOW - 60_000;
    // Two minutes earlier: agents are ordered by activity to the minute (listed_at).
    await agentWithGap(`${p}-quiet`, { missing: 3, lastSeen: t - 120_000 });
    for (let i = 0; i < 3; i++) await agentWithGap(`${p}-busy-${i}`, { missing: 0, lastSeen: t + i });
    const all = await env.DB.prepare("SELECT COUNT(*) AS n FROM agents WHERE last_seen > ?")
      .bind(t - 1)
      .first<{ n: number }>();
    // The three most recently active have no gap: a scan of that many finds none, one more finds the quiet one.
    const scan = all!.n;
    expect((await gapAgentsDueForReconcile(env.DB, NOW, 10, scan)).some((a) => a.agentName === `${p}-quiet`)).toBe(false);
    expect((await gapAgentsDueForReconcile(env.DB, NOW, 10, scan + 1)).some((a) => a.agentName === `${p}-quiet`)).toBe(true);
    const res = await env.DB.prepare("SELECT COUNT(*) AS n FROM agents").first<{ n: number }>();
    expect(res!.n).toBeGreaterThan(scan);
  });
});

describe("the runs of an agent the console knows", () => {
  it("answers each known id with its outcome (null while open) and leaves unknown ids out", async () => {
    const name = `known-${uid()}`;
    await ingest([
      makeEvent("task.accepted", { definition: "etl@v1" }, { agentName: name, corr: { taskId: "t-open" } }),
      makeEvent("task.accepted", { definition: "etl@v1" }, { agentName: name, corr: { taskId: "t-done" } }),
      makeEvent("task.completed", { definition: "etl@v1" }, { agentName: name, corr: { taskId: "t-done" } }),
    ]);
    const known = await knownRunOutcomes(env.DB, { agentClass: "ProbeAgent", agentName: name }, ["t-open", "t-done", "t-never"]);
    expect(Object.fromEntries(known)).toEqual({ "t-open": null, "t-done": "completed" });
    expect((await knownRunOutcomes(env.DB, { agentClass: "ProbeAgent", agentName: `${name}-other` }, ["t-done"])).size).toBe(0);
  });
});
