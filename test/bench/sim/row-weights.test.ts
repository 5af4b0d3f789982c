import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { rowWeights } from "../../../bench/sim/row-weights";

// Without dbstat the simulator splits the store's measured growth between tables by these weights: they must follow
// what the rows hold, so a table of small rows is not billed a large table's bytes.

const T = Date.UTC(2026, 9, 1);

async function insertRuns(prefix: string, n: number, preview: string, outcome: string | null) {
  await env.DB.prepare(
    `INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, snapshot_preview, first_seen, last_seen)
     SELECT ?1 || value, 'WeightAgent', 'w1', 'fiber', 'job', ?2, ?3, ${T}, ${T} FROM json_each(?4)`,
  )
    .bind(prefix, outcome, preview, JSON.stringify(Array.from({ length: n }, (_, i) => i)))
    .run();
}

describe("row weights", () => {
  beforeAll(async () => {
    await env.DB.batch([env.DB.prepare("DELETE FROM runs"), env.DB.prepare("DELETE FROM op_ambiguities")]);
  });

  it("weigh a row by its values and index entries: a long snapshot adds its bytes, a short op row stays small", async () => {
    await insertRuns("short-", 10, "", "completed");
    const short = (await rowWeights(env.DB)).runs!;
    await env.DB.prepare("DELETE FROM runs").run();
    await insertRuns("long-", 10, "x".repeat(2000), "completed");
    const long = (await rowWeights(env.DB)).runs!;
    // Each run's row holds the 2,000 bytes once (no index holds the snapshot).
    expect(long - short).toBeGreaterThan(1990);
    expect(long - short).toBeLessThan(2010);
    await env.DB.prepare(
      `INSERT INTO op_ambiguities (op_id, agent_class, agent_name, first_seen, last_seen) VALUES ('op-1', 'WeightAgent', 'w1', ${T}, ${T})`,
    ).run();
    const weights = await rowWeights(env.DB);
    expect(weights.op_ambiguities).toBeGreaterThan(50);
    expect(weights.op_ambiguities).toBeLessThan(short);
  });

  it("count a partial index's entry only for the rows it holds: a running run weighs its open and outcome entries more", async () => {
    await env.DB.prepare("DELETE FROM runs").run();
    await insertRuns("done-", 10, "", "completed");
    const done = (await rowWeights(env.DB)).runs!;
    await env.DB.prepare("DELETE FROM runs").run();
    await insertRuns("open-", 10, "", null);
    const open = (await rowWeights(env.DB)).runs!;
    // runs_open and runs_kind_outcome each hold a running run, never a completed one: two entries of about 35 bytes
    // (less the 9 bytes of "completed" the finished row holds).
    expect(open - done).toBeGreaterThan(45);
    expect(open - done).toBeLessThan(120);
  });
});
