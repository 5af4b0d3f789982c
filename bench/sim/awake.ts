import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { Source } from "@agent-oncall/telemetry";
import { fnv64, type TailItem } from "@agent-oncall/telemetry/tail";
import type { Env } from "../../worker/env";
import worker from "../../worker/index";
import { handleTail } from "../../worker/tail";
import { meteredDb, newD1Meter } from "./metered";
import type { Mix } from "./mix";

/**
 * What keeping agents awake costs, which a mix's lives leave out (issue 35): measured through the real tail handler
 * and the real Queue consumer, on the simulated store, for agents it already knows.
 * - A silent wake: an alarm invocation in which the SDK published nothing, as a `keepAlive()` heartbeat is (every
 *   30 s by default). The tail handler writes one `silent_wakes` row per such invocation.
 * - An alarm loop's firing: one `schedule:execute` message in the alarm's invocation, sent as one Queue message and
 *   stored like any event, and it moves its agent's row (`alarm_last_at`).
 * Each is one tail invocation (its CPU is the mix's stated tail.cpuMsPerInvocation: workerd's clock stands still
 * while a handler computes, so it cannot be timed here).
 */

/** What one wake or firing costs, measured. */
export type AwakeUnitCost = { count: number; d1RowsWritten: number; d1RowsRead: number; queueMessages: number };
export type AwakeCost = { silentWake: AwakeUnitCost; alarmFiring: AwakeUnitCost };

/** The trace item of an alarm invocation of `agent`'s object, with the SDK messages it published. */
function alarmItem(agent: Source, at: number, messages: unknown[]): TailItem {
  return {
    scriptName: "sim-fleet",
    durableObjectId: fnv64(`${agent.agentClass}\0${agent.agentName}`).repeat(4),
    entrypoint: agent.agentClass,
    eventTimestamp: at,
    event: { scheduledTime: new Date(at) },
    truncated: false,
    diagnosticsChannelEvents: messages.map((message) => ({ timestamp: at, channel: "agents:schedule", message })),
  };
}

/** Runs `count` silent wakes and `count` alarm firings of the given agents through the tail path, metered. */
export async function measureAwake(env: Env, agents: readonly Source[], count: number, queue: { queue: string; maxBatchSize: number }): Promise<AwakeCost> {
  const sent: string[] = [];
  // The tail handler's Queue: what it sends is kept, then handed to the consumer as Queues would deliver it.
  const sink = {
    send: async (body: unknown) => void sent.push(String(body)),
    sendBatch: async (msgs: Iterable<{ body: unknown }>) => {
      for (const m of msgs) sent.push(String(m.body));
    },
  };
  const now = Date.now();
  const firing = (agent: Source, at: number) =>
    alarmItem(agent, at, [
      { type: "schedule:execute", agent: agent.agentClass, name: agent.agentName, payload: { callback: "tick", id: "sim-loop" }, timestamp: at },
    ]);
  // Once per object, unmetered: the handler records which agent an object is the first time it names itself (once
  // per object and isolate, none at steady state); that first sighting is not what a wake or a firing costs.
  const used = agents.slice(0, Math.min(count, agents.length));
  for (const agent of used) await handleTail([firing(agent, now - 120_000)], { ...env, TELEMETRY_QUEUE: sink as unknown as Queue } as Env);
  sent.length = 0;
  const run = async (make: (agent: Source, at: number) => TailItem): Promise<AwakeUnitCost> => {
    const meter = newD1Meter();
    const menv = { ...env, DB: meteredDb(env.DB, meter), TELEMETRY_QUEUE: sink as unknown as Queue } as Env;
    sent.length = 0;
    for (let i = 0; i < count; i++) {
      const agent = used[i % used.length]!;
      const item = make(agent, now - 60_000 + i * 37);
      // One tail invocation per item, as the runtime hands classic tail items over.
      await handleTail([item], menv);
    }
    const messages = sent.splice(0);
    for (let i = 0; i < messages.length; i += queue.maxBatchSize) {
      const slice = messages.slice(i, i + queue.maxBatchSize);
      const batch = createMessageBatch(
        queue.queue,
        slice.map((body, k) => ({ id: `awake-${i + k}`, timestamp: new Date(), body, attempts: 1 })),
      );
      const ctx = createExecutionContext();
      await worker.queue!(batch as MessageBatch<unknown>, menv, ctx);
      await getQueueResult(batch, ctx);
    }
    return { count, d1RowsWritten: meter.rowsWritten / count, d1RowsRead: meter.rowsRead / count, queueMessages: messages.length / count };
  };
  const silentWake = await run((agent, at) => alarmItem(agent, at, []));
  const alarmFiring = await run(firing);
  return { silentWake, alarmFiring };
}

/** Per hour of one fleet agent: wakes and firings the mix's `awake` shares imply, averaged over the whole fleet. */
export function awakePerAgentHour(mix: Mix): { wakes: number; firings: number } {
  const a = mix.awake;
  return { wakes: (a.keepAliveShare * 3_600) / a.keepAliveHeartbeatSeconds, firings: (a.alarmLoopShare * 3_600) / a.alarmLoopSeconds };
}
