import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import quiet from "../../../bench/mixes/quiet.json";
import { fleetAgent, runNamePrefix } from "../../../bench/sim/fleet";
import { seedKnownAgents } from "../../../bench/sim/known-agents";
import { parseMix } from "../../../bench/sim/mix";
import { HEARD_FROM_STEP_MS } from "../../../src/store/heard-from";
import type { Env } from "../../../worker/env";
import { QUEUES } from "../../../worker/topology";

// The simulator's runs start from a registry as a steady fleet has it: each agent last heard from at its own point of
// the last step, so a run of S seconds rewrites about S / step of the agents' rows. `npm run bench` runs one seed on
// both tails in one store; when both runs used the same agents, the second inherited the first's times and its quiet
// fleet wrote 0.79 rows per event instead of 0.36.

const mix = parseMix(quiet, "bench/mixes/quiet.json");
const e = env as unknown as Env;
const unique = () => `k${Math.random().toString(36).slice(2, 8)}`;
const fleet = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => fleetAgent(mix, i, prefix));

async function lastSeen(prefix: string): Promise<number[]> {
  const { results } = await e.DB.prepare("SELECT last_seen AS t FROM agents WHERE agent_name LIKE ?").bind(`${prefix}-%`).all<{ t: number }>();
  return results.map((r) => r.t);
}

describe("the simulator's known agents", () => {
  it("are each last heard from at their own point of the last step, spread over it", async () => {
    const prefix = unique();
    const now = Date.now();
    expect(await seedKnownAgents(e, fleet(prefix, 300), QUEUES.telemetry.name, now)).toBe(300);
    const times = await lastSeen(prefix);
    expect(times).toHaveLength(300);
    for (const t of times) {
      expect(t).toBeLessThan(now);
      expect(t).toBeGreaterThan(now - HEARD_FROM_STEP_MS);
    }
    // Spread over the step: every fifth of it holds some (a minute's run moves about a fifth of the rows).
    const fifths = new Set(times.map((t) => Math.floor(((now - t) / HEARD_FROM_STEP_MS) * 5)));
    expect([...fifths].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it("refuse agents an earlier run in the same store already knows, since their times would not be the seeded ones", async () => {
    const agents = fleet(unique(), 50);
    const first = Date.now() - 4 * 60_000;
    await seedKnownAgents(e, agents, QUEUES.telemetry.name, first);
    // A second run 4 minutes later, as the bench's quiet streaming run came after its classic one.
    await expect(seedKnownAgents(e, agents, QUEUES.telemetry.name, first + 4 * 60_000)).rejects.toThrow(
      /of 50 were already known to this store.*give each run in one store agents of its own/,
    );
  });

  it("of one seed on both tails are different agents, named alike, so both runs seed", async () => {
    const seed = Math.floor(Math.random() * 1e6);
    const tail = runNamePrefix(seed, "tail");
    const streaming = runNamePrefix(seed, "streaming");
    expect(tail).not.toBe(streaming);
    expect(tail.length, "the same name length: the runs' bytes compare").toBe(streaming.length);
    const now = Date.now();
    await seedKnownAgents(e, fleet(tail, 50), QUEUES.telemetry.name, now - 60_000);
    expect(await seedKnownAgents(e, fleet(streaming, 50), QUEUES.telemetry.name, now)).toBe(50);
    expect(await lastSeen(streaming)).toHaveLength(50);
  });
});
