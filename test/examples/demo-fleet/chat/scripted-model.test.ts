import { runInDurableObject } from "cloudflare:test";
import { APICallError } from "@ai-sdk/provider";
import { generateText, streamText } from "ai";
import { describe, expect, it } from "vitest";
import { classifyModelError } from "../../../../examples/demo-fleet/src/chat/classify-error";
import { ScriptStore } from "../../../../examples/demo-fleet/src/chat/script-store";
import { createScriptedModel } from "../../../../examples/demo-fleet/src/chat/scripted-model";
import { rejectionOf } from "../../../helpers";
import { chatAgent, reconnect, stall, text } from "./chat-helpers";

describe("the scripted model behind the AI SDK interface", () => {
  it("streams its chunks through streamText, reports usage, and logs the call", async () => {
    const { stub } = await chatAgent("model-stream");
    await runInDurableObject(stub, async (_agent, state) => {
      const store = new ScriptStore(state.storage.sql);
      store.set("chat", [{ kind: "text", chunks: ["a", "b", "c"], usage: { inputTokens: 1234 } }]);
      const result = streamText({ model: createScriptedModel({ lane: "chat", store }), prompt: "hello" });
      const deltas: string[] = [];
      for await (const d of result.textStream) deltas.push(d);
      expect(deltas).toEqual(["a", "b", "c"]);
      expect((await result.usage).inputTokens).toBe(1234);
      expect(await result.finishReason).toBe("stop");
      expect(store.calls().map((c) => [c.lane, c.kind])).toEqual([["chat", "text"]]);
      expect(store.pending("chat")).toEqual([]);
    });
  });

  it("a stall never finishes until the call is aborted", async () => {
    const { stub } = await chatAgent("model-stall");
    await runInDurableObject(stub, async (_agent, state) => {
      const store = new ScriptStore(state.storage.sql);
      store.set("chat", [{ kind: "stall", chunks: ["thinking"] }]);
      const abort = new AbortController();
      const result = streamText({ model: createScriptedModel({ lane: "chat", store }), prompt: "hello", abortSignal: abort.signal });
      const seen: string[] = [];
      const consumed = (async () => {
        for await (const d of result.textStream) seen.push(d);
      })();
      const settled = await Promise.race([consumed.then(() => "settled"), scheduler.wait(300).then(() => "pending")]);
      expect(settled).toBe("pending");
      expect(seen).toEqual(["thinking"]);
      abort.abort(new Error("caller gave up"));
      await consumed.catch(() => {});
      expect(seen).toEqual(["thinking"]);
    });
  });

  it("fails and overflows like a provider: APICallErrors the app can classify", async () => {
    const { stub } = await chatAgent("model-errors");
    await runInDurableObject(stub, async (_agent, state) => {
      const store = new ScriptStore(state.storage.sql);
      store.set("summary", [
        { kind: "context_overflow", limit: 1000 },
        { kind: "fail", message: "overloaded", statusCode: 529 },
        { kind: "fail", message: "slow down", statusCode: 429 },
        { kind: "fail", message: "Invalid API key", statusCode: 401 },
      ]);
      const model = createScriptedModel({ lane: "summary", store });
      const errors: unknown[] = [];
      for (let i = 0; i < 4; i++) errors.push(await generateText({ model, prompt: "x", maxRetries: 0 }).catch((e: unknown) => e));
      expect(errors.every((e) => APICallError.isInstance(e))).toBe(true);
      expect((errors[0] as APICallError).statusCode).toBe(400);
      expect((errors[0] as Error).message).toMatch(/^prompt is too long: \d+ tokens > 1000 maximum$/);
      expect(errors.map(classifyModelError)).toEqual(["context_overflow", "transient", "rate_limit", undefined]);
      // An empty queue without a fallback fails loudly instead of inventing an answer.
      const empty = await generateText({ model, prompt: "x", maxRetries: 0 }).catch((e: Error) => e);
      expect((empty as Error).message).toContain('no step left on lane "summary"');
      store.set("summary", [], { fallback: { kind: "text", chunks: ["default"] } });
      expect((await generateText({ model, prompt: "x" })).text).toBe("default");
    });
  });

  it("the script lives in the agent's SQLite: it survives an eviction, and bad scripts are refused", async () => {
    const { name, stub } = await chatAgent("model-durable");
    await stub.setScript({ steps: [stall("one"), text("two")] });
    await stub.setScript({ steps: [text("three")], append: true });
    await rejectionOf(stub.evict());
    const woken = await reconnect(name);
    expect((await woken.pendingScript()).map((s) => s.kind)).toEqual(["stall", "text", "text"]);
    const bad = await rejectionOf(woken.setScript({ steps: [{ kind: "explode" } as never] }));
    expect(bad.message).toContain("invalid script");
    expect((await woken.pendingScript()).length).toBe(3);
  });
});
