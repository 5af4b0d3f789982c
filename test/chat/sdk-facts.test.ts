import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { chatSnapshotRoot, readTaskRun } from "@agent-oncall/telemetry/chat-turns";
import { AIChatAgent } from "@cloudflare/ai-chat";
import { Think } from "@cloudflare/think";
import { getAgentByName } from "agents";
import { CHAT_RECOVERY_TASK_NAME } from "agents/chat";
import { describe, expect, it } from "vitest";
import aiChatPackage from "../../node_modules/@cloudflare/ai-chat/package.json";
import thinkPackage from "../../node_modules/@cloudflare/think/package.json";
import { CHAT_RECOVERY_TASK, CHAT_TURN_SNAPSHOT_KEY_PREFIX, CHAT_TURN_TASK, chatTurnRootOf } from "../../src/admin-rpc/sdk-layout";
import type { AiChatFixture, ThinkChatFixture } from "../fixtures/chat-agents";
import { until } from "./drive";

/**
 * The chat SDK facts the telemetry (src/telemetry/chat-turns.ts, with-telemetry.ts) and force idle
 * (src/admin-rpc/chat-stop.ts, inspect.ts) rely on and that are not public API, checked against the installed
 * Think 0.23 and AIChatAgent (@cloudflare/ai-chat 0.12) on live turns. An upgrade that moves one fails here.
 */

const uid = () => crypto.randomUUID().slice(0, 8);
const slow = { kind: "text" as const, chunks: Array.from({ length: 50 }, (_, i) => `w${i} `), delayMs: 100 };

describe("chat SDK facts (Think 0.23, @cloudflare/ai-chat 0.12)", () => {
  it("is checked against these versions", () => {
    expect(thinkPackage.version).toBe("0.23.0");
    expect(aiChatPackage.version).toBe("0.12.2");
  });

  it("names the chat machinery as sdk-layout.ts says: the turn carrier, the recovery transport", () => {
    for (const C of [Think, AIChatAgent]) expect((C as unknown as { CHAT_FIBER_NAME: string }).CHAT_FIBER_NAME).toBe(CHAT_TURN_TASK);
    expect(CHAT_RECOVERY_TASK_NAME).toBe(CHAT_RECOVERY_TASK);
  });

  it("offers the public stop calls force idle uses: Think's submissions and cancelChat, abortRequest on both, onChatResponse on AIChatAgent", () => {
    for (const m of ["listSubmissions", "inspectSubmission", "cancelSubmission", "cancelChat", "abortRequest"])
      expect(typeof (Think.prototype as unknown as Record<string, unknown>)[m], m).toBe("function");
    for (const m of ["abortRequest", "onChatResponse", "saveMessages"])
      expect(typeof (AIChatAgent.prototype as unknown as Record<string, unknown>)[m], m).toBe("function");
    expect(typeof (AIChatAgent.prototype as unknown as Record<string, unknown>).listSubmissions).toBe("undefined");
  });

  for (const cls of ["ThinkChatFixture", "AiChatFixture"] as const) {
    it(`${cls}: a live turn's carrier names its request id in its Tasks metadata, and its snapshot names the user turn it runs for`, async () => {
      const name = `facts-${uid()}`;
      const stub = (await getAgentByName(env[cls] as never, name)) as unknown as {
        setScript(s: unknown[]): Promise<void>;
        submit?(t: string): Promise<unknown>;
        sendAndStream?(t: string): Promise<unknown>;
        meter(): Promise<{ chunks: number }>;
        evict(): Promise<void>;
      };
      await stub.setScript([slow]);
      if (cls === "ThinkChatFixture") await stub.submit!("a long one");
      else await stub.sendAndStream!("a long one");
      await until(async () => (await stub.meter()).chunks >= 2, 10_000);
      await runInDurableObject(stub as never, async (agent: ThinkChatFixture | AiChatFixture, state) => {
        const [carrier] = await agent.tasks.list({ definition: CHAT_TURN_TASK, status: ["running"] });
        expect(carrier).toBeDefined();
        const row = readTaskRun(state.storage.sql, carrier!.runId);
        const requestId = (JSON.parse(String(row!.metadata)) as { requestId: string }).requestId;
        expect(requestId).toBe(carrier!.metadata?.requestId);
        // The turn snapshot the SDK keeps for the carrier: not a recovery, so it runs for itself.
        const snapshot = await state.storage.get(`${CHAT_TURN_SNAPSHOT_KEY_PREFIX}${carrier!.runId}`);
        expect(chatTurnRootOf(snapshot)).toBe(requestId);
        expect(chatSnapshotRoot(snapshot)).toEqual({ requestId, root: requestId });
        // The SDK's recovery root is set only while a recovery callback runs (with-telemetry.ts reads it then).
        expect((agent as unknown as { _activeChatRecoveryRootRequestId?: string })._activeChatRecoveryRootRequestId).toBeUndefined();
      });
      await stub.evict().catch(() => {});
    });
  }
});
