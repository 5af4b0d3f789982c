import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { type HistoryEvent, hourOf, shardOf, shardPrefix, slotOf } from "../../src/store/history/layout";
import { historyEvents } from "../../src/store/history/read";
import { consoleConfig } from "../../worker/config";
import { handleTelemetryBatch } from "../../worker/ingest/consumer";
import { chatIncidentLife, fiberLife, makeEvent } from "../fixtures/events";
import { pollRows } from "../helpers";
import { patient } from "../patience";

/** The configured counts (wrangler.jsonc), as the consumer writes with them. */
const counts = consoleConfig(env).history;
const agentOf = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });
const DAY = 86_400_000;

/** Every stored line of an agent's shard folder for an hour, straight from R2 (no reader in between). */
async function storedLines(agentName: string, time: number): Promise<{ keys: string[]; lines: HistoryEvent[]; meta: Record<string, string>[] }> {
  const prefix = shardPrefix(hourOf(time), counts.shards, shardOf(agentOf(agentName), counts.shards));
  const listed = await env.HISTORY!.list({ prefix, include: ["customMetadata"] });
  const lines: HistoryEvent[] = [];
  const keys: string[] = [];
  const meta: Record<string, string>[] = [];
  for (const o of listed.objects) {
    const obj = await env.HISTORY!.get(o.key);
    const text = await new Response(obj!.body.pipeThrough(new DecompressionStream("gzip"))).text();
    const mine = text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as HistoryEvent)
      .filter((e) => e.agentName === agentName);
    if (!mine.length) continue;
    keys.push(o.key);
    lines.push(...mine);
    meta.push(o.customMetadata!);
  }
  return { keys, lines, meta };
}

async function pollHistory(agentName: string, from: number, to: number, n: number): Promise<HistoryEvent[]> {
  const deadline = Date.now() + patient(10_000);
  for (;;) {
    const r = await historyEvents(env.HISTORY!, counts, { agent: agentOf(agentName), from, to });
    if (r.events.length >= n || Date.now() > deadline) return r.events;
    await scheduler.wait(50);
  }
}

const asMessages = (events: unknown[], tag: string) => events.map((body, i) => ({ id: `${tag}-${i}`, timestamp: Date.now(), attempts: 1, body }));

/** Runs the real consumer on a batch and returns what it acked or retried. */
async function consume(messages: ReturnType<typeof asMessages>, e: Parameters<typeof handleTelemetryBatch>[1] = env) {
  const batch = createMessageBatch("agent-telemetry", messages);
  const ctx = createExecutionContext();
  await handleTelemetryBatch(batch, e);
  return getQueueResult(batch, ctx);
}

describe("R2 history written by the telemetry consumer", () => {
  it("holds exactly the accepted events of a batch sent through the real Queue, with their span in metadata", async () => {
    const agentName = `hist-queue-${crypto.randomUUID()}`;
    const events = [...chatIncidentLife(`inc-${agentName}`, agentName), ...fiberLife(`f-${agentName}`, agentName)];
    // Refused by ingest (dead letters): not part of the history either.
    const invalid = { ...makeEvent("session.status_idle", {}, { agentName }), v: 99 };
    await env.TELEMETRY_QUEUE.sendBatch([...events, invalid].map((body) => ({ body, contentType: "json" })));
    const times = events.map((e) => e.time);
    const from = Math.min(...times);
    const to = Math.max(...times);
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [agentName], (r) => r.length === events.length);
    const read = await pollHistory(agentName, from, to, events.length);
    expect(read.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(read.find((e) => e.id === invalid.id)).toBeUndefined();

    // The objects themselves: one line per accepted event, the envelope as the console reads it.
    const hours = new Set(times.map(hourOf));
    const stored = (await Promise.all([...hours].map((h) => storedLines(agentName, h)))).flatMap((s) => s.lines);
    expect(stored.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    const exhausted = stored.find((e) => e.type === "chat.recovery.exhausted")!;
    expect(exhausted).toMatchObject({
      agentClass: "ProbeAgent",
      agentName,
      incidentId: `inc-${agentName}`,
      requestId: "req-1",
      timelineId: `inc-${agentName}`,
      payload: { reason: "no_progress_timeout" },
    });
    const first = await storedLines(agentName, from);
    expect(Number(first.meta[0]!.minTime)).toBe(from);
    expect(Number(first.meta[0]!.events)).toBeGreaterThan(0);
  });

  it("writes the same keys when a batch is delivered again, so the history holds each event once", async () => {
    const agentName = `hist-redeliver-${crypto.randomUUID()}`;
    const events = fiberLife(`f-${agentName}`, agentName);
    const messages = asMessages(events, agentName);
    const first = await consume(messages);
    expect(first.ackAll).toBe(true);
    const before = await storedLines(agentName, events[0]!.time);
    expect(before.lines).toHaveLength(events.length);

    // The Queue redelivers the same batch (as after a consumer crash past the writes, before the ack).
    const again = await consume(messages.map((m) => ({ ...m, attempts: 2 })));
    expect(again.ackAll).toBe(true);
    const after = await storedLines(agentName, events[0]!.time);
    expect(after.keys).toEqual(before.keys);
    expect(after.lines.map((e) => e.id).sort()).toEqual(before.lines.map((e) => e.id).sort());

    // Redelivered split differently (one message at a time): the ledger holds every event, so R2 gets no copy.
    for (const m of messages) await consume([m]);
    const split = await storedLines(agentName, events[0]!.time);
    expect(split.keys).toEqual(before.keys);
    expect(split.lines).toHaveLength(events.length);
    const read = await historyEvents(env.HISTORY!, counts, { agent: agentOf(agentName), from: events[0]!.time, to: events.at(-1)!.time });
    expect(read.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
  });

  it("splits a batch by 10-minute slot and agent shard: one object each, so puts per batch are bounded by slots × shards", async () => {
    const run = crypto.randomUUID();
    const base = hourOf(Date.now() - 3 * DAY) + 59 * 60_000;
    // 40 agents across two slots (and hours): at most 2 × HISTORY_SHARDS objects for the whole batch.
    const events = Array.from({ length: 80 }, (_, i) =>
      makeEvent("session.status_idle", {}, { agentName: `hist-split-${run}-${i % 40}`, time: base + (i % 2) * 120_000 + i }),
    );
    const r = await consume(asMessages(events, run));
    expect(r.ackAll).toBe(true);
    const keys = new Set<string>();
    for (let i = 0; i < 40; i++) for (const t of [base, base + 120_000]) for (const k of (await storedLines(`hist-split-${run}-${i}`, t)).keys) keys.add(k);
    expect(keys.size).toBeLessThanOrEqual(2 * counts.shards);
    expect(keys.size).toBe(new Set(events.map((e) => `${slotOf(e.time)}/${shardOf(e.source, counts.shards)}`)).size);
  });

  it("retries the whole batch when the R2 write fails, and its redelivery stores every event", async () => {
    const agentName = `hist-fault-${crypto.randomUUID()}`;
    const events = chatIncidentLife(`inc-${agentName}`, agentName);
    const messages = asMessages(events, agentName);
    // The real bucket, whose puts fail as an R2 outage would (reads and lists still reach it).
    const failing = new Proxy(env.HISTORY!, {
      get(target, prop) {
        if (prop === "put")
          return async () => {
            throw new Error("R2 put failed: 503 service unavailable");
          };
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const failed = await consume(messages, { ...env, HISTORY: failing });
    expect(failed.retryBatch.retry).toBe(true);
    expect(failed.ackAll).toBe(false);
    expect(failed.explicitAcks).toEqual([]);
    expect((await storedLines(agentName, events[0]!.time)).lines).toEqual([]);

    const redelivered = await consume(messages.map((m) => ({ ...m, attempts: 2 })));
    expect(redelivered.ackAll).toBe(true);
    const read = await historyEvents(env.HISTORY!, counts, { agent: agentOf(agentName), from: events[0]!.time, to: events.at(-1)!.time });
    expect(read.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    // R2 is written before D1: the failed delivery stored nothing in D1, the redelivery stored each event once.
    const n = await env.DB.prepare("SELECT COUNT(*) AS n FROM events WHERE agent_name = ?").bind(agentName).first<{ n: number }>();
    expect(n!.n).toBe(events.length);
  });

  it("keeps an event out of the history when ingest refuses it, even next to accepted ones in one message", async () => {
    const agentName = `hist-packed-${crypto.randomUUID()}`;
    const ok = makeEvent("session.status_idle", {}, { agentName });
    const tooOld = makeEvent("session.status_idle", {}, { agentName, time: Date.now() - 400 * DAY });
    const r = await consume([{ id: `${agentName}-packed`, timestamp: Date.now(), attempts: 1, body: JSON.stringify([ok, tooOld] satisfies TelemetryEvent[]) }]);
    expect(r.ackAll).toBe(true);
    expect((await storedLines(agentName, ok.time)).lines.map((e) => e.id)).toEqual([ok.id]);
    expect((await storedLines(agentName, tooOld.time)).lines).toEqual([]);
  });
});
