import { getAgentByName } from "agents";
import type { Env } from "../env";
import type { TurnScript } from "../session";
import { runChatTick } from "./chat-driver";

/** How one demo tick behaves: DEMO_FLEET_SIZE sets the fleet. */
export type DemoOptions = { fleetSize: number };

export function demoOptions(env: Env, size?: string): DemoOptions {
  const n = Number(size ?? env.DEMO_FLEET_SIZE ?? "4");
  return { fleetSize: Number.isInteger(n) && n >= 1 && n <= 50 ? n : 4 };
}

const SCRIPTS: Record<string, TurnScript> = {
  lookup: {
    chunks: ["Let me look that up. "],
    tool: { name: "search", args: { q: "order status" } },
    final: ["Your order shipped yesterday."],
    chunkDelayMs: 150,
  },
  note: {
    chunks: ["Writing that down. "],
    tool: { name: "write_note", args: { path: "notes/customer.md", content: "Prefers email follow-ups." } },
    final: ["Saved to your notes."],
    chunkDelayMs: 100,
  },
  refund: {
    chunks: ["Issuing the refund. "],
    tool: { name: "charge_card", args: { amountCents: -2599 } },
    final: ["Refund of $25.99 issued."],
    chunkDelayMs: 100,
  },
  chat: { chunks: ["Sure, ", "happy ", "to help ", "with that."], chunkDelayMs: 200 },
};

type Scenario = { script: keyof typeof SCRIPTS; evict?: { point: "mid_stream" | "after_op_started" | "turn_start"; kind?: string; times: number } };

/** What a session does this tick: mostly ordinary work, sometimes what on-call cares about. */
function pick(roll: number): Scenario {
  if (roll < 0.08) return { script: "chat", evict: { point: "mid_stream", times: 1 } }; // evicted mid-stream, recovers
  if (roll < 0.13) return { script: "refund", evict: { point: "after_op_started", kind: "tool.charge_card", times: 1 } }; // paid op ambiguous
  if (roll < 0.16) return { script: "chat", evict: { point: "turn_start", times: 7 } }; // poison turn: exhausts the recovery budget
  if (roll < 0.35) return { script: "note" };
  if (roll < 0.45) return { script: "refund" };
  if (roll < 0.7) return { script: "lookup" };
  return { script: "chat" };
}

/**
 * One tick of the demo fleet: session agents talking through the runtime,
 * with planned evictions now and then, and fiber agents running jobs.
 * Waking an evicted agent is also what lets the SDK recover it.
 */
export async function runDemoTick(env: Env, opts: DemoOptions, random = Math.random): Promise<string[]> {
  const done: string[] = [];
  await Promise.all(
    Array.from({ length: opts.fleetSize }, async (_, i) => {
      const name = `support-${i + 1}`;
      try {
        const s = await getAgentByName(env.DemoSessionAgent, name);
        if ((await s.status()) !== "idle") return done.push(`${name}: busy`);
        // Someone checked an ambiguous charge with the payment provider: it did not go through.
        const [ambiguous] = await s.ambiguousOps();
        if (ambiguous && random() < 0.3) {
          await s.resolveOp(ambiguous.opId, "verified_not_ran");
          return done.push(`${name}: resolved ${ambiguous.kind}`);
        }
        if (random() < 0.05) {
          await s.snapshotWorkspaceNow("demo: manual backup");
          return done.push(`${name}: backup`);
        }
        const sc = pick(random());
        await s.setScript(SCRIPTS[sc.script]!);
        await s.planEviction(sc.evict ?? null);
        const r = await s.sendMessage(`demo request (${sc.script})`);
        done.push(`${name}: ${sc.script}${sc.evict ? ` + eviction at ${sc.evict.point}` : ""}${r.ok ? "" : ` (${r.error.message})`}`);
      } catch (e) {
        // An eviction the demo planned surfaces here as a broken call; the next tick's wake recovers the agent.
        done.push(`${name}: ${e instanceof Error ? e.message.slice(0, 80) : String(e)}`);
      }
    }),
  );
  done.push(...(await runChatTick(env, Math.max(1, Math.ceil(opts.fleetSize / 3)), random)));
  const jobs = await getAgentByName(env.DemoFiberAgent, `jobs-${1 + Math.floor(random() * 2)}`);
  const roll = random();
  try {
    if (roll < 0.1) await jobs.runJobAndEvict({ label: "reindex" });
    else await jobs.runJob({ steps: 3, fail: roll < 0.25, label: roll < 0.25 ? "sync-crm" : "summarize" });
    done.push(`jobs: ${roll < 0.1 ? "evict" : roll < 0.25 ? "fail" : "ok"}`);
  } catch (e) {
    done.push(`jobs: ${e instanceof Error ? e.message.slice(0, 80) : String(e)}`);
  }
  return done;
}
