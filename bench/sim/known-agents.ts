import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { packBodies, SCHEMA_VERSION, type Source, type TelemetryEvent } from "@agent-oncall/telemetry";
import { fnv64 } from "@agent-oncall/telemetry/tail";
import { HEARD_FROM_STEP_MS } from "../../src/store/heard-from";
import type { Env } from "../../worker/env";
import worker from "../../worker/index";

/**
 * The fleet's agents as a fleet that was already running has them, before anything is measured: each known to the
 * registry, last heard from at a random point of its last HEARD_FROM_STEP_MS step. Without it a short run pays every
 * agent's first sighting (a new registry row and its index entries: 1.15 rows per event on the quiet mix in 20 s),
 * which a steady fleet never pays; with it, a run of S seconds moves about S / step of the agents' rows, as a steady
 * fleet does. Seeded through the real Queue consumer, unmetered, with one `sdk.event` per agent (so the registry
 * row is whatever ingest writes, whatever its schema).
 *
 * The seeding is then read back: ingest moves last_seen only by a whole step, so agents an earlier run in the same
 * store already knows keep that run's time, and the phases above would not hold. A second run of the same agents
 * less than a step later moves far more rows than S / step (in `npm run bench`, the quiet streaming run, 4 minutes
 * after the quiet classic run of the same names, rewrote 1,513 of its 3,000 agents' rows where the first rewrote 246:
 * 0.79 rows per event instead of 0.36). That throws, rather than print figures of a fleet that is not the one described.
 */
export async function seedKnownAgents(env: Env, agents: readonly Source[], queue: string, now = Date.now()): Promise<number> {
  const events = agents.map((source, i) => {
    // A phase per agent that does not depend on the run's random stream.
    const phase = Number.parseInt(fnv64(`${source.agentClass}\0${source.agentName}`).slice(0, 8), 16) / 0x1_0000_0000;
    const time = Math.floor(now - 1_000 - phase * (HEARD_FROM_STEP_MS - 2_000));
    return {
      v: SCHEMA_VERSION,
      id: `${time.toString(36).padStart(9, "0")}-${i.toString(36).padStart(6, "0")}-known`,
      time,
      type: "sdk.event",
      source,
      corr: {},
      payload: { sdkType: "sim:known", data: { preview: "{}", bytes: 2, truncated: false } },
    } as TelemetryEvent;
  });
  const bodies = packBodies(events.map((e) => JSON.stringify(e)));
  for (let i = 0; i < bodies.length; i += 100) {
    const slice = bodies.slice(i, i + 100);
    const batch = createMessageBatch(
      queue,
      slice.map((body, k) => ({ id: `known-${i + k}`, timestamp: new Date(now), body, attempts: 1 })),
    );
    const ctx = createExecutionContext();
    await worker.queue!(batch as MessageBatch<unknown>, env, ctx);
    const r = await getQueueResult(batch, ctx);
    if (r.outcome !== "ok" || r.retryBatch.retry || r.retryMessages.length)
      throw new Error("seeding the known agents: the consumer did not take every message");
  }
  const off = await notAsSeeded(env.DB, events);
  if (off.length)
    throw new Error(
      `seeding the known agents: ${off.length} of ${events.length} were already known to this store, last heard from at another time ` +
        `(${off[0]!.agentClass}/${off[0]!.agentName} at ${new Date(off[0]!.lastSeen).toISOString()}, seeded ${new Date(off[0]!.seeded).toISOString()}), ` +
        `so the run would move more of their registry rows than a steady fleet does: give each run in one store agents of its own (another name prefix)`,
    );
  return events.length;
}

/** Names per read-back statement: their JSON stays well under D1's 100 KB per statement. */
const READ_BACK = 1_000;

/** The seeded agents whose registry row does not hold the time they were seeded with. */
async function notAsSeeded(
  db: D1Database,
  events: readonly TelemetryEvent[],
): Promise<{ agentClass: string; agentName: string; lastSeen: number; seeded: number }[]> {
  const off: { agentClass: string; agentName: string; lastSeen: number; seeded: number }[] = [];
  for (let i = 0; i < events.length; i += READ_BACK) {
    const chunk = events.slice(i, i + READ_BACK);
    const seeded = new Map(chunk.map((e) => [`${e.source.agentClass}\0${e.source.agentName}`, e.time]));
    const { results } = await db
      .prepare(
        "SELECT agent_class AS agentClass, agent_name AS agentName, last_seen AS lastSeen FROM agents " +
          "WHERE (agent_class, agent_name) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))",
      )
      .bind(JSON.stringify(chunk.map((e) => [e.source.agentClass, e.source.agentName])))
      .all<{ agentClass: string; agentName: string; lastSeen: number }>();
    for (const r of results) {
      const t = seeded.get(`${r.agentClass}\0${r.agentName}`)!;
      if (r.lastSeen !== t) off.push({ ...r, seeded: t });
    }
    if (results.length < chunk.length) throw new Error(`seeding the known agents: ${chunk.length - results.length} were not in the registry after seeding`);
  }
  return off;
}
