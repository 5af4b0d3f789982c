import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pollRows, rejectionOf } from "../../../helpers";
import { chatAgent, eventsOfType, incidentRow, payloadOf, reconnect, stall, text } from "./chat-helpers";

type Usage = { inputTokens: number; outputTokens: number; model?: string; attempt?: number };

describe("recovery cost of a real Think agent: the scripted model reports usage, recovery's share lands on the incident", () => {
  it("an ordinary turn's usage is stored on no incident", async () => {
    const { name, stub } = await chatAgent("cost-plain");
    await stub.setScript({ steps: [text("All ", "green.")] });
    const out = await stub.sendUserMessage("status?");
    const [usage] = await eventsOfType(name, "model.usage");
    expect(usage!.request_id).toBe(out.requestId);
    expect(usage!.incident_id).toBeNull();
    expect(payloadOf<Usage>(usage!)).toMatchObject({ model: "scripted-chat" });
    expect(payloadOf<Usage>(usage!).inputTokens).toBeGreaterThan(0);
    expect(payloadOf<Usage>(usage!).outputTokens).toBe(Math.ceil("All green.".length / 4));
  });

  it("the continuation after an eviction re-spends tokens, summed on its incident with the attempt", async () => {
    const { name, stub } = await chatAgent("cost-evict");
    await stub.setScript({ steps: [stall("The answer is"), text(" forty-two, ", "as computed.")] });
    const start = await stub.startUserMessage("what is the answer?");
    expect(start.model).toBe("stalled");
    await rejectionOf(stub.evict());
    const woken = await reconnect(name);
    expect(await runDurableObjectAlarm(woken)).toBe(true);

    const [detected] = await eventsOfType(name, "chat.recovery.detected");
    const incidentId = detected!.incident_id!;
    const row = await incidentRow(incidentId, (r) => r.status === "recovered");
    expect(row.attempts).toBe(1);

    // The stalled first call never finished, so it reported nothing; the continuation's step did.
    const [usage] = await eventsOfType(name, "model.usage");
    expect(usage!.incident_id).toBe(incidentId);
    expect(usage!.request_id).not.toBe(start.requestId); // the continuation's own turn
    const p = payloadOf<Usage>(usage!);
    expect(p).toMatchObject({ attempt: 1, model: "scripted-chat", outputTokens: Math.ceil(" forty-two, as computed.".length / 4) });
    const sums = await pollRows<{ i: number; o: number }>(
      "SELECT respent_input_tokens AS i, respent_output_tokens AS o FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r[0]?.o === p.outputTokens,
    );
    expect(sums[0]).toEqual({ i: p.inputTokens, o: p.outputTokens });
    expect(sums[0]!.i).toBeGreaterThan(0);
    // The usage is on the incident's timeline, so the incident page shows it per attempt.
    const onTimeline = await env.DB.prepare("SELECT COUNT(*) AS n FROM events WHERE timeline_id = ? AND type = 'model.usage'")
      .bind(incidentId)
      .first<{ n: number }>();
    expect(onTimeline!.n).toBe(1);
  });

  it("a model that calls a tool and then stalls, attempt after attempt, re-spends tokens until recovery gives up", async () => {
    const { name, stub } = await chatAgent("cost-exh");
    await stub.setRecoveryPolicy({ stallTimeoutMs: 200, maxAttempts: 2 });
    const lookup = { kind: "tool_call" as const, toolName: "lookup_notes", input: { topic: "warehouse" } };
    await stub.setScript({ steps: [stall("Querying the warehouse"), lookup, stall(), lookup, stall(), lookup, stall()] });
    await stub.sendUserMessage("why is the warehouse query slow?");

    const [exhausted] = await eventsOfType(name, "chat.recovery.exhausted");
    const incidentId = exhausted!.incident_id!;
    const usage = (await eventsOfType(name, "model.usage")).filter((e) => e.incident_id === incidentId);
    expect(usage.length).toBeGreaterThan(0);
    const total = usage.reduce((t, e) => t + payloadOf<Usage>(e).inputTokens + payloadOf<Usage>(e).outputTokens, 0);
    const sums = await pollRows<{ t: number; status: string }>(
      "SELECT respent_input_tokens + respent_output_tokens AS t, status FROM incidents WHERE incident_id = ?",
      [incidentId],
      (r) => r[0]?.t === total,
    );
    expect(sums[0]!.t).toBeGreaterThan(0);
    expect(["exhausted", "failed"]).toContain(sums[0]!.status);
    expect(new Set(usage.map((e) => payloadOf<Usage>(e).attempt)).size).toBeGreaterThanOrEqual(1);
  });
});
