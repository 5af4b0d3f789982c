import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { parseEvent, readUsage, Telemetry, usageFromGenAiAttributes } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { pollRows, rejectionOf } from "../helpers";

describe("readUsage: token usage from what an agent has", () => {
  it("reads the AI SDK's usage shapes", () => {
    // ai ≥ 5 (result.usage, onStepFinish usage), with extra fields it ignores.
    expect(readUsage({ inputTokens: 1200, outputTokens: 80, totalTokens: 1280, cachedInputTokens: 0 })).toEqual({ inputTokens: 1200, outputTokens: 80 });
    // ai 4: promptTokens / completionTokens.
    expect(readUsage({ promptTokens: 30, completionTokens: 7, totalTokens: 37 })).toEqual({ inputTokens: 30, outputTokens: 7 });
    // A provider's nested usage (LanguageModelV2+ finish part).
    expect(readUsage({ inputTokens: { total: 55, noCache: 55 }, outputTokens: { total: 9, text: 9 } })).toEqual({ inputTokens: 55, outputTokens: 9 });
    // A side a provider leaves out counts 0; the model id is kept when the object carries one.
    expect(readUsage({ inputTokens: 12, outputTokens: undefined, modelId: "claude-x" })).toEqual({ inputTokens: 12, outputTokens: 0, model: "claude-x" });
  });

  it("reads OpenTelemetry gen_ai.usage.* span attributes", () => {
    const attrs = {
      "gen_ai.system": "openai",
      "gen_ai.request.model": "gpt-x",
      "gen_ai.response.model": "gpt-x-2026",
      "gen_ai.usage.input_tokens": 4000,
      "gen_ai.usage.output_tokens": 250,
    };
    expect(usageFromGenAiAttributes(attrs)).toEqual({ inputTokens: 4000, outputTokens: 250, model: "gpt-x-2026" });
    expect(readUsage({ "gen_ai.usage.prompt_tokens": 10, "gen_ai.usage.completion_tokens": 2 })).toEqual({ inputTokens: 10, outputTokens: 2 });
    expect(usageFromGenAiAttributes({ "http.method": "POST" })).toBeNull();
    expect(usageFromGenAiAttributes(undefined)).toBeNull();
  });

  it("rejects what is not a token count, whole", () => {
    for (const bad of [
      null,
      undefined,
      42,
      "1200 tokens",
      [],
      {},
      { inputTokens: -1, outputTokens: 5 },
      { inputTokens: Number.NaN, outputTokens: 5 },
      { inputTokens: Number.POSITIVE_INFINITY, outputTokens: 5 },
      { inputTokens: "12", outputTokens: 5 },
      { inputTokens: 10, outputTokens: { total: "x" } },
      { inputTokens: null, outputTokens: null },
      { "gen_ai.usage.input_tokens": -3, "gen_ai.usage.output_tokens": 1 },
    ]) {
      expect(readUsage(bad), JSON.stringify(bad)).toBeNull();
    }
  });
});

describe("Telemetry.usage: a model call inside a recovery attempt names its incident", () => {
  const tel = () => new Telemetry({ source: { agentClass: "UsageUnit", agentName: "u1" } });

  it("stamps usage of a chat turn, a fiber or a session turn while it is being recovered, and only then", () => {
    const t = tel();
    const plain = t.usage({ inputTokens: 10, outputTokens: 2 }, { requestId: "req-1" })!;
    expect(plain.corr).toEqual({ requestId: "req-1" });
    expect(plain.payload).toEqual({ inputTokens: 10, outputTokens: 2 });

    // Chat: the SDK announces the attempt for the interrupted turn; the continuation runs as a NEW turn.
    const chat = (type: string, attempt: number) => ({
      type,
      payload: { incidentId: "req-1:msg-1", requestId: "req-1", attempt, maxAttempts: 3, recoveryKind: "continue" },
    });
    t.emitSdk(chat("chat:recovery:detected", 1));
    t.emitSdk(chat("chat:recovery:attempt", 1));
    t.emitSdk({ type: "chat:turn:start", payload: { requestId: "req-cont", continuation: true, trigger: "recovery" } });
    const cont = t.usage({ inputTokens: 300, outputTokens: 20 }, { requestId: "req-cont", model: "m1" })!;
    expect(cont.corr).toMatchObject({ incidentId: "req-1:msg-1", requestId: "req-cont" });
    expect(cont.payload).toEqual({ inputTokens: 300, outputTokens: 20, model: "m1", attempt: 1 });
    t.emitSdk(chat("chat:recovery:attempt", 2));
    expect(t.usage({ inputTokens: 1, outputTokens: 1 }, { requestId: "req-cont" })!.payload.attempt).toBe(2);
    t.emitSdk(chat("chat:recovery:completed", 2));
    expect(t.usage({ inputTokens: 1, outputTokens: 1 }, { requestId: "req-cont" })!.corr.incidentId).toBeUndefined();

    // Fiber: between fiber:recovery:attempt and its end.
    const fiber = (type: string) => ({ type, payload: { fiberId: "f-9", fiberName: "research" } });
    t.emitSdk(fiber("fiber:recovery:detected"));
    t.emitSdk(fiber("fiber:recovery:attempt"));
    expect(t.usage({ inputTokens: 5, outputTokens: 5 }, { fiberId: "f-9" })!.corr.incidentId).toBe("fiber:UsageUnit/u1/f-9");
    expect(t.usage({ inputTokens: 5, outputTokens: 5 }, { fiberId: "f-other" })!.corr.incidentId).toBeUndefined();
    t.emitSdk(fiber("fiber:recovery:handled"));
    expect(t.usage({ inputTokens: 5, outputTokens: 5 }, { fiberId: "f-9" })!.corr.incidentId).toBeUndefined();

    // A session turn: from its reschedule to its end.
    const inc = { sessionName: "s1", incidentId: "turn:UsageUnit/u1/4" };
    t.record("session.status_rescheduled", { turnSeq: 4, recoveryCount: 2 }, inc);
    const turn = t.usage({ inputTokens: 7, outputTokens: 3 }, { sessionName: "s1", turnSeq: 4 })!;
    expect(turn.corr).toEqual({ sessionName: "s1", incidentId: "turn:UsageUnit/u1/4" });
    expect(turn.payload).toEqual({ inputTokens: 7, outputTokens: 3, attempt: 2, turnSeq: 4 });
    expect(t.usage({ inputTokens: 7, outputTokens: 3 }, { sessionName: "s1", turnSeq: 5 })!.corr.incidentId).toBeUndefined();
    t.record("session.status_idle", { turnSeq: 4 }, inc);
    expect(t.usage({ inputTokens: 7, outputTokens: 3 }, { sessionName: "s1", turnSeq: 4 })!.corr.incidentId).toBeUndefined();
  });

  it("a continuation turn is not attributed when no chat recovery is under way", () => {
    const t = tel();
    t.emitSdk({ type: "chat:turn:start", payload: { requestId: "req-auto", continuation: true, trigger: "auto-continuation" } });
    expect(t.usage({ inputTokens: 1, outputTokens: 1 }, { requestId: "req-auto" })!.corr.incidentId).toBeUndefined();
  });

  it("ships valid events, sends nothing for usage it cannot read, and never throws", () => {
    const t = tel();
    const e = t.usage({ promptTokens: 3, completionTokens: 4 }, { requestId: "r", model: "  " })!;
    expect(parseEvent(JSON.parse(JSON.stringify(e))).ok).toBe(true);
    const before = t.stats().emitted;
    expect(t.usage({ inputTokens: -5, outputTokens: 1 })).toBeNull();
    expect(t.usage("lots")).toBeNull();
    expect(t.usage({ inputTokens: 1, outputTokens: 1 }, null as never)).toBeNull(); // a broken context: counted, not thrown
    expect(t.stats().emitted).toBe(before);
  });
});

type Row = { type: string; incident_id: string | null; fiber_id: string | null; payload: string };
const usageRows = (name: string, n: number) =>
  pollRows<Row>(
    "SELECT type, incident_id, fiber_id, payload FROM events WHERE agent_name = ? AND type = 'model.usage' ORDER BY time, id",
    [name],
    (r) => r.length >= n,
  );

describe("a foreign agent's recovery re-spends tokens, and the console sums them on its incident", () => {
  it("usage in the recovery hook after a real eviction lands on the fiber incident; usage before and after does not", async () => {
    const name = `costly-${crypto.randomUUID().slice(0, 8)}`;
    const stub = await getAgentByName(env.CostlyAgent, name);
    const fiberId = await stub.startResearch("queue latency");
    await rejectionOf(stub.evict());
    const woken = await getAgentByName(env.CostlyAgent, name);
    await runDurableObjectAlarm(woken);
    const incidentId = `fiber:CostlyAgent/${name}/${fiberId}`;
    await pollRows(
      "SELECT status FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r.length === 1 && (r[0] as { status: string }).status === "recovered",
    );
    await (await getAgentByName(env.CostlyAgent, name)).ask("is it fixed?");

    const rows = await usageRows(name, 3);
    expect(rows.map((r) => r.incident_id)).toEqual([null, incidentId, null]);
    const respent = JSON.parse(rows[1]!.payload) as { inputTokens: number; outputTokens: number; model: string };
    expect(respent.model).toBe("scripted-research");
    expect(respent.inputTokens).toBeGreaterThan(0);
    const inc = await pollRows<{ i: number; o: number }>(
      "SELECT respent_input_tokens AS i, respent_output_tokens AS o FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r[0]?.i === respent.inputTokens,
    );
    expect(inc[0]).toEqual({ i: respent.inputTokens, o: respent.outputTokens });
    // Only the recovery's tokens: the incident is the only one of this agent, and it carries exactly one call.
    const all = await env.DB.prepare("SELECT COUNT(*) AS n FROM incidents WHERE agent_name = ?").bind(name).first<{ n: number }>();
    expect(all!.n).toBe(1);
  });

  it("the demo SessionAgent: a turn recovered after an eviction re-spends only the model request it runs again", async () => {
    const name = `cost-s-${crypto.randomUUID().slice(0, 8)}`;
    const agent = () => getAgentByName(env.FaultySessionAgent, name);
    const s = await agent();
    await s.setScript({ chunks: ["Let me check. "], tool: { name: "search", args: { q: "status" } }, final: ["All systems normal."] });
    await s.setFault({ point: "after_op_completed", kind: "tool.search", times: 1 });
    try {
      await s.sendMessage("please check", { wait: true });
    } catch {
      /* the planned eviction breaks the call */
    }
    // Wake it until the recovered turn ends (the SDK recovers the orphaned fiber on alarm).
    const incidentId = `turn:FaultySessionAgent/${name}/1`;
    for (let i = 0; i < 100; i++) {
      const rows = await env.DB.prepare("SELECT status FROM incidents WHERE incident_id = ?").bind(incidentId).all<{ status: string }>();
      if (rows.results[0]?.status === "recovered") break;
      try {
        await runDurableObjectAlarm(await agent());
      } catch {
        /* mid-eviction */
      }
      await scheduler.wait(50);
    }
    const rows = await usageRows(name, 2);
    // Step 1 ran before the eviction (ordinary spend); after recovery the ledger replays it and the tool, and
    // only step 2 runs the model again, inside the recovery attempt.
    expect(rows.map((r) => [r.incident_id, (JSON.parse(r.payload) as { attempt?: number }).attempt ?? null])).toEqual([
      [null, null],
      [incidentId, 1],
    ]);
    const step2 = JSON.parse(rows[1]!.payload) as { inputTokens: number; outputTokens: number };
    const inc = await pollRows<{ i: number; o: number }>(
      "SELECT respent_input_tokens AS i, respent_output_tokens AS o FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r[0]?.o === step2.outputTokens,
    );
    expect(inc[0]).toEqual({ i: step2.inputTokens, o: step2.outputTokens });
    expect(step2.outputTokens).toBe(Math.ceil("All systems normal.".length / 4));
  });
});
