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
  return done;
}
