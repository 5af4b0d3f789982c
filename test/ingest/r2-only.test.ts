import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { type EventRow, eventsBy } from "../../src/store/read-models/events";
import { listEventsIn } from "../../src/store/read-models/merged-events";
import { residentEstimate } from "../../src/store/read-models/residency";
import { handleTelemetryBatch, ingestBatch } from "../../worker/ingest/consumer";
import { historyTierFromEnv, storeFromEnv } from "../../worker/store";
import { fiberLife } from "../fixtures/events";

// TIMELINE_SEGMENTS=off with the HISTORY bucket bound: D1 keeps no event bodies, and the readers that used the hot
// store's segments read R2 instead (written before D1, so nothing is in D1 that R2 lacks).

const r2Only = { ...env, TIMELINE_SEGMENTS: "off" } as typeof env;
const asMessages = (events: unknown[], tag: string) => events.map((body, i) => ({ id: `${tag}-${i}`, timestamp: Date.now(), attempts: 1, body }));

async function consume(messages: ReturnType<typeof asMessages>) {
  const batch = createMessageBatch("agent-telemetry", messages);
  const ctx = createExecutionContext();
  await handleTelemetryBatch(batch, r2Only);
  return getQueueResult(batch, ctx);
}

/** A fiber's life, 20 s apart from `base`, under its own agent. */
function life(agentName: string, base: number): TelemetryEvent[] {
  return fiberLife(`f-${agentName}`, agentName).map((e, i) => ({ ...e, time: base + i * 20_000 }));
}

const segmentsOf = async (agentName: string) =>
  Number(await env.DB.prepare("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ?").bind(agentName).first("n"));

describe("with TIMELINE_SEGMENTS off, R2 alone holds events", () => {
  it("stores no segment in D1, and each event once in R2 after a redelivery", async () => {
    const agentName = `r2-only-${crypto.randomUUID().slice(0, 8)}`;
    const events = life(agentName, Date.now() - 3_600_000);
    const messages = asMessages(events, agentName);
    expect((await consume(messages)).ackAll).toBe(true);
    expect((await consume(messages.map((m) => ({ ...m, attempts: 2 })))).ackAll).toBe(true);
    expect(await segmentsOf(agentName)).toBe(0);
    // The run's projection is there (D1 keeps what is open or needs a person), and its timeline reads from R2.
    const run = await env.DB.prepare("SELECT outcome FROM runs WHERE agent_name = ?").bind(agentName).first<{ outcome: string | null }>();
    expect(run).not.toBeNull();
    const tier = historyTierFromEnv(r2Only)!;
    expect(tier.segments).toBe(false);
    const owner = { agentClass: "ProbeAgent", agentName };
    const timeline = await eventsBy(env.DB, { tag: "t", column: "fiberId", value: `f-${agentName}`, owner, dir: "ASC" }, { limit: 50 }, tier);
    expect(timeline.items.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(timeline.history).toMatchObject({ fromHistory: events.length, fromHot: 0 });
  });

  it("lists the fleet's newest events from R2, newest first, page by page, each once", async () => {
    const run = crypto.randomUUID().slice(0, 8);
    // Two agents in a window of their own (a day ago), interleaved in time.
    const base = Math.floor((Date.now() - 86_400_000) / 600_000) * 600_000 + 7_000;
    const a = life(`r2-list-a-${run}`, base);
    const b = life(`r2-list-b-${run}`, base + 10_000);
    expect((await consume(asMessages([...a, ...b], run))).ackAll).toBe(true);
    const tier = historyTierFromEnv(r2Only)!;
    const filters = { type: "fiber.stashed,fiber.recovery.attempt", since: String(base), until: String(base + 600_000) };
    const want = [...a, ...b]
      .filter((e) => e.type === "fiber.stashed" || e.type === "fiber.recovery.attempt")
      .sort((x, y) => y.time - x.time)
      .map((e) => e.id);
    const seen: EventRow[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await listEventsIn(storeFromEnv(r2Only), filters, { limit: 2, cursor }, tier);
      expect(page.rowsRead).toBe(0);
      expect(page.history?.scan?.objectsFetched ?? 0).toBeLessThanOrEqual(24);
      seen.push(...page.items);
      if (!page.next) break;
      cursor = page.next;
    }
    expect(seen.map((e) => e.id)).toEqual(want);
  });

  it("estimates residency from R2 as it did from the hot store's segments", async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const now = Date.now();
    const base = now - 5 * 3_600_000;
    // The same activity under two agents: one stored D1-only (segments), one with R2 alone.
    const d1 = life(`resident-d1-${run}`, base);
    const r2 = life(`resident-r2-${run}`, base);
    await ingestBatch(env.DB, asMessages(d1, `${run}-d1`));
    expect((await consume(asMessages(r2, `${run}-r2`))).ackAll).toBe(true);
    const fromSegments = await residentEstimate(env.DB, { agentClass: "ProbeAgent", agentName: `resident-d1-${run}` }, now);
    const fromR2 = await residentEstimate(env.DB, { agentClass: "ProbeAgent", agentName: `resident-r2-${run}` }, now, historyTierFromEnv(r2Only, now));
    expect(fromSegments.lowMs).toBeGreaterThan(0);
    expect({ low: fromR2.lowMs, high: fromR2.highMs, capped: fromR2.capped }).toEqual({ low: fromSegments.lowMs, high: fromSegments.highMs, capped: false });
    expect(fromR2.rowsRead).toBe(0);
  });
});
