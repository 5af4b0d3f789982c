import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { ingestBatch } from "../../worker/ingest/consumer";
import { ROLLUP_BUCKET_MS } from "../../worker/ingest/rows";
import { makeEvent } from "../fixtures/events";
import { pollRows } from "../helpers";

const asMessages = (events: unknown[]) => events.map((body, i) => ({ id: `m-${i}-${crypto.randomUUID()}`, body }));

type Tokens = { respent_input_tokens: number; respent_output_tokens: number; status: string; attempts: number };
const incident = (id: string) =>
  env.DB.prepare("SELECT respent_input_tokens, respent_output_tokens, status, attempts FROM incidents WHERE incident_id = ?").bind(id).first<Tokens>();
const rollupAmount = async (from: number, to: number) =>
  Number(
    (await env.DB.prepare("SELECT COALESCE(SUM(amount), 0) AS a FROM event_rollups WHERE type = 'model.usage' AND bucket >= ? AND bucket <= ?")
      .bind(from, to)
      .first<{ a: number }>())!.a,
  );

/** A chat incident with two attempts, each re-spending tokens, and usage of an ordinary turn next to it. */
function recoveryWithUsage(agentName: string) {
  const incidentId = `req-${agentName}:msg-1`;
  const base = { maxAttempts: 3, recoveryKind: "continue" as const };
  const inc = { incidentId, requestId: `req-${agentName}` };
  const events: TelemetryEvent[] = [
    // Usage of the original turn, before it was interrupted: not re-spent, never attributed.
    makeEvent("model.usage", { inputTokens: 900, outputTokens: 90 }, { agentName, corr: { requestId: `req-${agentName}` } }),
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr: inc }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr: inc }),
    makeEvent(
      "model.usage",
      { inputTokens: 1000, outputTokens: 40, attempt: 1, model: "scripted-chat" },
      { agentName, corr: { incidentId, requestId: "cont-1" } },
    ),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { agentName, corr: inc }),
    makeEvent(
      "model.usage",
      { inputTokens: 1100, outputTokens: 60, attempt: 2, model: "scripted-chat" },
      { agentName, corr: { incidentId, requestId: "cont-2" } },
    ),
    makeEvent(
      "model.usage",
      { inputTokens: 300, outputTokens: 5, attempt: 2, model: "scripted-chat" },
      { agentName, corr: { incidentId, requestId: "cont-2" } },
    ),
    makeEvent("chat.recovery.completed", { ...base, attempt: 2 }, { agentName, corr: inc }),
    // A later, ordinary turn of the same agent.
    makeEvent("model.usage", { inputTokens: 700, outputTokens: 70 }, { agentName, corr: { requestId: `req2-${agentName}` } }),
  ];
  return { incidentId, events };
}

describe("recovery cost: model.usage during a recovery attempt sums onto its incident", () => {
  it("sums each attempt's tokens onto the incident, once, through the real Queue", async () => {
    const agentName = `cost-${crypto.randomUUID().slice(0, 8)}`;
    const { incidentId, events } = recoveryWithUsage(agentName);
    await env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" })));
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [agentName], (r) => r.length === events.length);
    expect(await incident(incidentId)).toEqual({ respent_input_tokens: 2400, respent_output_tokens: 105, status: "recovered", attempts: 2 });

    // The same events again (a Queue redelivery, an outbox resend) and one of them twice in one batch: nothing adds.
    await ingestBatch(env.DB, asMessages([...events, events[3]!, events[3]!]));
    await env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" })));
    const marker = makeEvent("session.status_idle", {}, { agentName });
    await env.TELEMETRY_QUEUE.send(marker, { contentType: "json" });
    await pollRows("SELECT id FROM events WHERE id = ?", [marker.id], (r) => r.length === 1);
    expect(await incident(incidentId)).toMatchObject({ respent_input_tokens: 2400, respent_output_tokens: 105 });
  });

  it("does not attribute usage outside a recovery attempt to any incident", async () => {
    const agentName = `cost-out-${crypto.randomUUID().slice(0, 8)}`;
    const { events } = recoveryWithUsage(agentName);
    await ingestBatch(env.DB, asMessages(events));
    const rows = (
      await env.DB.prepare("SELECT incident_id, respent_input_tokens AS i, respent_output_tokens AS o FROM incidents WHERE agent_name = ?")
        .bind(agentName)
        .all()
    ).results;
    expect(rows).toEqual([{ incident_id: `req-${agentName}:msg-1`, i: 2400, o: 105 }]);
    // The ordinary turns' usage is stored, on no incident's timeline.
    const free = (
      await env.DB.prepare("SELECT incident_id, timeline_id FROM events WHERE agent_name = ? AND type = 'model.usage' AND incident_id IS NULL")
        .bind(agentName)
        .all()
    ).results;
    expect(free).toEqual([
      { incident_id: null, timeline_id: null },
      { incident_id: null, timeline_id: null },
    ]);
  });

  it("gives the same sums whatever the batching and order, with a new event in a batch of old ones", async () => {
    const agentName = `cost-order-${crypto.randomUUID().slice(0, 8)}`;
    const { incidentId, events } = recoveryWithUsage(agentName);
    // Half first, then everything (the first half again, redelivered, with the new half), newest first.
    await ingestBatch(env.DB, asMessages(events.slice(0, 4)));
    expect(await incident(incidentId)).toMatchObject({ respent_input_tokens: 1000, respent_output_tokens: 40 });
    await ingestBatch(env.DB, asMessages([...events].reverse()));
    expect(await incident(incidentId)).toMatchObject({ respent_input_tokens: 2400, respent_output_tokens: 105 });
  });

  it("rolls re-spent tokens up for the overview, once", async () => {
    const agentName = `cost-roll-${crypto.randomUUID().slice(0, 8)}`;
    // A bucket of its own, far from other tests' events: 3 days after the fixtures' clock start.
    const time = Math.floor((Date.now() - 2 * 86_400_000) / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS + 1234;
    const before = await rollupAmount(time - ROLLUP_BUCKET_MS, time);
    const usage = [
      makeEvent("model.usage", { inputTokens: 500, outputTokens: 25, attempt: 1 }, { agentName, time, corr: { incidentId: `i-${agentName}` } }),
      makeEvent("model.usage", { inputTokens: 400, outputTokens: 20 }, { agentName, time, corr: { requestId: "not-recovering" } }),
    ];
    await ingestBatch(env.DB, asMessages(usage));
    await ingestBatch(env.DB, asMessages(usage));
    expect((await rollupAmount(time - ROLLUP_BUCKET_MS, time)) - before).toBe(525);
  });
});
