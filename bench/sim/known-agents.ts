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
  return events.length;
}
