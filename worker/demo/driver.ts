import { getAgentByName } from "agents";
import type { Env } from "../env";

/** How one demo tick behaves. Set with DEMO_FLEET_SIZE; the driver is on only when DEMO_FLEET is "on". */
export type DemoOptions = { fleetSize: number };

export function demoOptions(env: Env): DemoOptions | null {
  if (env.DEMO_FLEET !== "on") return null;
  const n = Number(env.DEMO_FLEET_SIZE ?? "4");
  return { fleetSize: Number.isInteger(n) && n >= 1 && n <= 50 ? n : 4 };
}

/**
 * One tick of the demo fleet: each agent does something ordinary, and now and
 * then something on-call cares about (a failure, an eviction mid-run).
 */
export async function runDemoTick(env: Env, opts: DemoOptions, random = Math.random): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < opts.fleetSize; i++) {
    const name = `demo-${i + 1}`;
    const agent = await getAgentByName(env.DemoFiberAgent, name);
    const roll = random();
    try {
      if (roll < 0.1) {
        await agent.runJobAndEvict({ label: "reindex" });
        done.push(`${name}: evict`);
      } else if (roll < 0.25) {
        await agent.runJob({ steps: 3, fail: true, label: "sync-crm" }).catch(() => undefined);
        done.push(`${name}: fail`);
      } else {
        await agent.runJob({ steps: 2 + Math.floor(random() * 5), label: "summarize" });
        done.push(`${name}: ok`);
      }
    } catch (e) {
      done.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return done;
}
