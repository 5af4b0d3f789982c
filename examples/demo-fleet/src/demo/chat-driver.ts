import { getAgentByName } from "agents";
import type { Env } from "../env";

/** Scripted-model steps the chat demo uses (see src/session/chat/script.ts). */
const text = (...chunks: string[]) => ({ kind: "text" as const, chunks, delayMs: 120 });
const stall = (...chunks: string[]) => ({ kind: "stall" as const, chunks });
/**
 * What the model answers once a lane's script is used up. A tick replaces an agent's script while the turn an earlier
 * tick evicted or stalled may still be recovering: the two turns then share one script, and without this the second
 * failed with "scripted model: no step left", an error no scenario plans.
 */
const plainAnswer = text("Happy to help.");

/** The agent whose slow recoveries the console's "likely to exhaust" card forecasts: outside the fleet loop, so no tick resets its policy or script. */
export const SLOW_RECOVERY_AGENT = "assistant-slow";

/**
 * A model that stalls on every call, cut by the stall watchdog every `stallTimeoutMs`: each cut is retried as a
 * transient error the SDK counts against maxAttempts, so the attempts come a watchdog apart. At the defaults (45 s,
 * 5 attempts) a rate is measurable at the 2nd attempt, about 90 s in, and the incident exhausts about 3 minutes
 * later: a dozen polls of the card (every 15 s) see the forecast before the outcome. The no-progress window is
 * widened past the whole recovery so the attempt cap, the bound the forecast projects, is what ends it.
 */
export const SLOW_RECOVERY = { stallTimeoutMs: 45_000, maxAttempts: 5 };

/**
 * Starts a slowly exhausting chat recovery on the slow agent unless one is still under way (stall steps still
 * queued, or a recovery record still scheduled or attempting). Returns what it did.
 */
export async function startSlowRecovery(env: Env, opts: { agentName?: string; stallTimeoutMs?: number; maxAttempts?: number } = {}): Promise<string> {
  const name = opts.agentName ?? SLOW_RECOVERY_AGENT;
  const { stallTimeoutMs, maxAttempts } = { ...SLOW_RECOVERY, ...opts };
  const chat = await getAgentByName(env.ChatAgent, name);
  const busy = (await chat.pendingScript()).length > 0 || (await chat.recoveryIncidents()).some((r) => r.status === "scheduled" || r.status === "attempting");
  if (busy) return `${name}: slow recovery under way`;
  await chat.setRecoveryPolicy({ stallTimeoutMs, maxAttempts, noProgressTimeoutMs: Math.min(3_600_000, stallTimeoutMs * (maxAttempts + 3)) });
  // The first call and one per attempt the cap allows, then the one that exceeds it: all stall.
  await chat.setScript({ steps: [stall("Rebuilding the search index"), ...Array.from({ length: maxAttempts }, () => stall())], fallback: plainAnswer });
  void chat.sendUserMessage("rebuild the search index").catch(() => undefined);
  return `${name}: slow recovery started`;
}

/**
 * One tick of the chat part of the demo: ordinary turns, and now and then an
 * eviction mid-stream (recovered on the next wake), a model that keeps
 * stalling (after a tool lookup each attempt) until recovery gives up, or a context overflow that compacts.
 */
export async function runChatTick(env: Env, fleetSize: number, random = Math.random): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < fleetSize; i++) {
    const name = `assistant-${i + 1}`;
    const chat = await getAgentByName(env.ChatAgent, name);
    const roll = random();
    try {
      // A stalled stream is cut after 300 ms and recovered at most twice.
      await chat.setRecoveryPolicy({ stallTimeoutMs: 300, maxAttempts: 2 });
      if (roll < 0.12) {
        await chat.setScript({ steps: [stall("Compiling the weekly report: "), text("sections 1-4 done.")], fallback: plainAnswer });
        await chat.startUserMessage("compile the weekly report");
        await chat.evict("planned fault: demo eviction mid-stream");
        done.push(`${name}: evicted mid-stream`);
      } else if (roll < 0.2) {
        // Each recovery attempt looks the notes up again (a model step that bills tokens) and stalls again,
        // until recovery gives up: the incident shows what the attempts re-spent.
        const lookup = { kind: "tool_call" as const, toolName: "lookup_notes", input: { topic: "warehouse" } };
        await chat.setScript({ steps: [stall("Querying the warehouse"), lookup, stall(), lookup, stall(), lookup, stall()], fallback: plainAnswer });
        void chat.sendUserMessage("why is the warehouse query slow?").catch(() => undefined);
        done.push(`${name}: stalling model`);
      } else if (roll < 0.3) {
        await chat.setScript({ lane: "summary", steps: [text("Earlier: the customer asked about refunds and shipping.")], fallback: plainAnswer });
        await chat.setScript({ steps: [{ kind: "context_overflow" }, text("Refunds take 5 days; shipping is on time.")], fallback: plainAnswer });
        await chat.sendUserMessage("summarise this very long thread");
        done.push(`${name}: context overflow`);
      } else {
        await chat.setScript({ steps: [text("Happy to help. ", "Your ticket is updated.")], fallback: plainAnswer });
        await chat.sendUserMessage("update my ticket");
        done.push(`${name}: ok`);
      }
    } catch (e) {
      // A planned eviction surfaces as a broken call; the next tick's wake lets the SDK recover the turn.
      done.push(`${name}: ${e instanceof Error ? e.message.slice(0, 60) : String(e)}`);
    }
  }
  // About once every 20 ticks (80 s at the dev stack's 4 s), one slow recovery at a time: a forecast to watch.
  if (random() < 0.05)
    done.push(await startSlowRecovery(env).catch((e: unknown) => `${SLOW_RECOVERY_AGENT}: ${e instanceof Error ? e.message.slice(0, 60) : String(e)}`));
  return done;
}
