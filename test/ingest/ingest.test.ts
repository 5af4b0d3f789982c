import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingestBatch } from "../../worker/ingest/consumer";
import { chatIncidentLife, fiberLife, makeEvent } from "../fixtures/events";
import { shuffled } from "../fixtures/seeded-random";
import { count, pollRows } from "../helpers";

const asMessages = (events: unknown[]) => events.map((body, i) => ({ id: `m-${i}-${crypto.randomUUID()}`, body }));
/** Projection rows for an agent, normalised for comparison. */
async function projection(agentName: string) {
  const q = (sql: string) =>
    env.DB.prepare(sql)
      .bind(agentName)
      .all()
      .then((r) => r.results);
  return {
    incidents: await q("SELECT kind, status, attempts, max_attempts, reason, first_seen, last_seen FROM incidents WHERE agent_name = ? ORDER BY kind"),
    fibers: await q("SELECT name, started_at, ended_at, outcome, snapshot_preview, first_seen, last_seen FROM runs WHERE agent_name = ? ORDER BY name"),
    agents: await q("SELECT * FROM agents WHERE agent_name = ?"),
    events: await q("SELECT id FROM events WHERE agent_name = ? ORDER BY id"),
  };
}

describe("ingest", () => {
  it("stores a redelivered batch once, through the real Queue", async () => {
    const agentName = `redeliver-${crypto.randomUUID()}`;
    const events = [...chatIncidentLife(`inc-${agentName}`, agentName), ...fiberLife(`f-${agentName}`, agentName)];
    await env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" })));
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [agentName], (r) => r.length === events.length);
    const before = await projection(agentName);

    // The same events again, as a Queue redelivery or an outbox resend would bring them.
    await env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" })));
    await env.TELEMETRY_QUEUE.send(events[0]!, { contentType: "json" });
    const marker = makeEvent("session.status_idle", {}, { agentName });
    await env.TELEMETRY_QUEUE.send(marker, { contentType: "json" });
    await pollRows("SELECT id FROM events WHERE id = ?", [marker.id], (r) => r.length === 1);

    expect(await count("SELECT COUNT(*) AS n FROM events WHERE agent_name = ?", agentName)).toBe(events.length + 1);
    const after = await projection(agentName);
    expect(after.incidents).toEqual(before.incidents);
    expect(after.fibers).toEqual(before.fibers);
  });

  it("gives the same projections whatever order events arrive in, batch by batch", async () => {
    const base = [...chatIncidentLife("inc-order", "x"), ...fiberLife("f-order", "x")];
    let reference: Awaited<ReturnType<typeof projection>> | null = null;
    for (const seed of [1, 7, 42, 1234, 99991]) {
      const agentName = `order-${seed}`;
      // Same facts and times, fresh ids per run; then split into random batches in a random order.
      const events = base.map((e) => ({
        ...e,
        id: `${e.id}-${seed}`,
        source: { ...e.source, agentName },
        corr: {
          ...e.corr,
          ...(e.corr.fiberId ? { fiberId: `${e.corr.fiberId}-${seed}` } : {}),
          ...(e.corr.incidentId ? { incidentId: `${e.corr.incidentId}-${seed}` } : {}),
        },
      }));
      const order = shuffled(events, seed);
      for (let i = 0; i < order.length; i += 3) await ingestBatch(env.DB, asMessages(order.slice(i, i + 3)));
      const p = await projection(agentName);
      const comparable = { incidents: p.incidents, fibers: p.fibers };
      if (!reference) reference = p;
      else expect(comparable).toEqual({ incidents: reference.incidents, fibers: reference.fibers });
    }
    expect(reference!.incidents).toEqual([
      expect.objectContaining({ kind: "chat", status: "exhausted", attempts: 3, max_attempts: 3, reason: "no_progress_timeout" }),
      expect.objectContaining({ kind: "fiber", status: "recovered" }),
    ]);
    expect(reference!.fibers).toEqual([expect.objectContaining({ name: "etl", outcome: "recovered", snapshot_preview: '{"step":2}' })]);
  });

  it("writes a 100-event batch with one bound parameter per statement", async () => {
    const agentName = `wide-${crypto.randomUUID()}`;
    const events = Array.from({ length: 100 }, (_, i) =>
      makeEvent(
        "op.ambiguous",
        { opKind: "tool.call", detail: `op ${i} started, no completion` },
        { agentName, corr: { opId: `${agentName}-op-${i}`, sessionName: agentName } },
      ),
    );
    const r = await ingestBatch(env.DB, asMessages(events));
    expect(r).toMatchObject({ stored: 100, deadLettered: 0 });
    expect(await count("SELECT COUNT(*) AS n FROM op_ambiguities WHERE agent_name = ? AND resolution_at IS NULL", agentName)).toBe(100);
  });

  it("keeps invalid events in dead letters with a reason a person can read, and stores the valid ones", async () => {
    const agentName = `invalid-${crypto.randomUUID()}`;
    const good = makeEvent("session.status_running", { turnSeq: 1 }, { agentName });
    const badPayload = {
      ...makeEvent("chat.recovery.exhausted", { attempt: 1, maxAttempts: 3, recoveryKind: "retry", reason: "x" }, { agentName }),
      payload: { attempt: "three" },
    };
    const unknownType = { ...makeEvent("session.status_idle", {}, { agentName }), type: "session.status_confused" };
    const futureVersion = { ...makeEvent("session.status_idle", {}, { agentName }), v: 99 };
    await env.TELEMETRY_QUEUE.sendBatch(
      [good, badPayload, unknownType, futureVersion, "not json at all"].map((body) => ({ body, contentType: "json" as const })),
    );

    const dead = await pollRows<{ reason: string; event_type: string | null; body: string }>(
      "SELECT reason, event_type, body FROM dead_letters WHERE instr(body, ?) > 0 OR body = 'not json at all' ORDER BY reason",
      [agentName],
      (r) => r.length === 4,
    );
    const reasons = dead.map((d) => d.reason);
    expect(reasons.some((r) => r.includes("payload.attempt"))).toBe(true);
    expect(reasons).toContain('invalid event: unknown event type "session.status_confused"');
    expect(reasons).toContain("invalid event: body is text but not JSON");
    expect(reasons.some((r) => r.startsWith("invalid event: v:"))).toBe(true);
    expect(dead.find((d) => d.event_type === "session.status_confused")).toBeTruthy();
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE id = ?", good.id)).toBe(1);
  });
});
