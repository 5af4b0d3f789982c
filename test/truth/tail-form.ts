import { env } from "cloudflare:workers";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { listenLikeATail, TAIL_CHANNELS } from "../diagnostics-tail";
import { streamItem, type TailPath } from "../stream-tail";
import type { Form, Step, TruthClass } from "./drive";

/**
 * The truth agents on the tail path (issue 34): the admin package alone (`withAdminRpc(Agent)`, the README's
 * adoption), every diagnostics message heard as the SDK publishes it and handed to the console's tail handler
 * (worker/tail.ts) with the real Queue and ingest. One trace item per step of a driver (the agent's own work, an
 * eviction, an alarm run, a console action): each step is one invocation as the runtime would count it. An item
 * names the agent's Durable Object and class, and an alarm's says it is one (`event.scheduledTime`), as the
 * runtime's do.
 *
 * Two ways of handing a step's invocations to the console, the same items either way: the classic tail
 * (`handleTail`, one trace item per invocation) and the streaming tail (`streamTail` via test/stream-tail.ts, each
 * invocation streamed with one flush per message, so a run's start and end always leave in different flushes).
 *
 * Loss on the classic tail is a whole trace item that never arrives: losing an event drops the item that carries it,
 * with every other event of that invocation. On the streaming tail it is a flush that never arrives: only the
 * message it carried (one per flush here) is lost; the invocation's other messages reach the console.
 */

/** The SDK message that carries each contract event a driver may lose; one the SDK does not publish has none. */
const CARRIER: Record<string, string> = {
  "fiber.started": "fiber:run:started",
  "fiber.completed": "fiber:run:completed",
  "task.accepted": "task:accepted",
  "task.attempt.started": "task:attempt:started",
  "task.completed": "task:completed",
};

type Heard = NonNullable<TailItem["diagnosticsChannelEvents"]>[number];
const who = (e: Heard) => e.message as { agent?: unknown; name?: unknown; type?: unknown } | undefined;

/** A Durable Object's id as the runtime names it in a trace item, where the test worker binds the class. */
const objectId = (agentClass: string, agentName: string): string | undefined => {
  const ns = (env as unknown as Record<string, DurableObjectNamespace | undefined>)[agentClass];
  return typeof ns?.idFromName === "function" && typeof ns.get === "function" ? ns.idFromName(agentName).toString() : undefined;
};

/** One trace item of an agent's invocation, as the runtime builds it (locally: no script name). */
function itemOf(agentClass: string, agentName: string, alarm: boolean, events: Heard[]): TailItem {
  return {
    scriptName: null,
    durableObjectId: objectId(agentClass, agentName) ?? crypto.randomUUID().replace(/-/g, ""),
    eventTimestamp: Date.now(),
    truncated: false,
    entrypoint: agentClass,
    ...(alarm ? { event: { scheduledTime: Date.now() } } : {}),
    diagnosticsChannelEvents: events,
  };
}

/**
 * The tail form: listens from creation until `stop`. `dropped` counts what a driver's loss kept from the console:
 * trace items on the classic path, flushes on the streaming path.
 */
export function tailForm(path: TailPath = "classic"): Form & { stop(): void; dropped: number } {
  const tail = listenLikeATail(TAIL_CHANNELS);
  const losing = new Set<string>();
  const form = {
    fiberClass: "AdminTruthFiberAgent" as TruthClass,
    taskClass: "AdminTruthTaskAgent" as TruthClass,
    dropped: 0,
    async lose(_agentClass: TruthClass, _agentName: string, types: string[]): Promise<void> {
      for (const t of types) if (CARRIER[t]) losing.add(CARRIER[t]);
    },
    async stepDone(agentClass: TruthClass, agentName: string, step: Step): Promise<void> {
      // Work the step set going (a recovery hook, a cancelled fiber's end) may publish just after the call returned:
      // the step ends once nothing new was heard for a moment.
      await tail.quiet();
      const heard = tail.item().diagnosticsChannelEvents ?? [];
      tail.clear();
      // Messages are filed under the agent that published them (a straggler of another agent gets its own item).
      const groups = new Map<string, { agentClass: string; agentName: string; events: Heard[] }>();
      for (const e of heard) {
        const m = who(e);
        const a = typeof m?.agent === "string" && typeof m.name === "string" ? { agentClass: m.agent, agentName: m.name } : { agentClass, agentName };
        const key = `${a.agentClass}\0${a.agentName}`;
        if (!groups.has(key)) groups.set(key, { ...a, events: [] });
        groups.get(key)!.events.push(e);
      }
      const items: TailItem[] = [];
      for (const g of groups.values()) {
        const mine = g.agentClass === agentClass && g.agentName === agentName;
        items.push(itemOf(g.agentClass, g.agentName, mine && step === "alarm", g.events));
      }
      // An alarm that published nothing is still an invocation the runtime reports.
      if (step === "alarm" && !groups.has(`${agentClass}\0${agentName}`)) items.push(itemOf(agentClass, agentName, true, []));
      // The next message of each type a driver loses: consumed as it is lost.
      const carries = (e: Heard) => {
        const t = who(e)?.type;
        return typeof t === "string" && losing.delete(t);
      };
      if (path === "streaming") {
        for (const item of items) form.dropped += (await streamItem(item, env as Env, carries)).lostFlushes;
        return;
      }
      const kept = items.filter((item) => {
        // Every carrier in the item is consumed: the whole item is what is lost.
        const lost = (item.diagnosticsChannelEvents ?? []).filter(carries).length > 0;
        if (lost) form.dropped++;
        return !lost;
      });
      if (kept.length) await handleTail(kept, env as Env);
    },
    stop: () => tail.stop(),
  };
  return form;
}
