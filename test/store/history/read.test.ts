import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { HOUR_MS, hourOf, shardOf } from "../../../src/store/history/layout";
import { historyEvents, historySearch } from "../../../src/store/history/read";
import { isBadRequest } from "../../../src/store/read-models/errors";
import { writeHistory } from "../../../worker/ingest/history";
import { makeEvent } from "../../fixtures/events";

const SHARDS = 4;
const counts = { shards: SHARDS };
const bucket = () => env.HISTORY!;
const agent = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });
/** A name whose agent falls in the same shard as `of`'s: their events share objects. */
function sameShard(of: string, prefix: string, n = SHARDS): string {
  for (let i = 0; ; i++) if (shardOf(agent(`${prefix}-${i}`), n) === shardOf(agent(of), n)) return `${prefix}-${i}`;
}
/** A time `hours` hours into a fixed old day, so each test owns its hours. */
const at = (day: number, hours: number, ms = 0) => Date.UTC(2026, 9, day) + hours * HOUR_MS + ms;
const write = (events: TelemetryEvent[], shards = SHARDS) => writeHistory(bucket(), events, { shards, receivedAt: Date.now() });
const idle = (agentName: string, time: number, corr: TelemetryEvent["corr"] = {}) => makeEvent("session.status_idle", {}, { agentName, time, corr });

describe("historyEvents (one agent's timeline from R2)", () => {
  it("returns the agent's events in the window, in time order, and nothing of another agent in the same objects", async () => {
    const a = `read-a-${crypto.randomUUID()}`;
    const b = sameShard(a, `read-b-${crypto.randomUUID()}`);
    const mine = [0, 1, 2, 3].map((h) => idle(a, at(1, h, 5_000)));
    const theirs = [0, 1, 2, 3].map((h) => idle(b, at(1, h, 6_000)));
    // One batch per hour holding both agents, and one more object with only b: its Bloom filter says "not a".
    for (let h = 0; h < 4; h++) await write([mine[h]!, theirs[h]!]);
    await write([idle(b, at(1, 1, 9_000))]);

    const r = await historyEvents(bucket(), counts, { agent: agent(a), from: at(1, 1), to: at(1, 2, HOUR_MS - 1) });
    expect(r.events.map((e) => e.id)).toEqual([mine[1]!.id, mine[2]!.id]);
    expect(r.events.every((e) => e.agentName === a)).toBe(true);
    expect(r.scan).toMatchObject({ complete: true, hours: 2, coveredFrom: at(1, 1), coveredTo: at(1, 2, HOUR_MS - 1), objectsFetched: 2 });
    expect(r.scan.objectsSkipped).toBeGreaterThanOrEqual(1);

    const desc = await historyEvents(bucket(), counts, { agent: agent(a), from: at(1, 0), to: at(1, 4), dir: "DESC" });
    expect(desc.events.map((e) => e.id)).toEqual([...mine].reverse().map((e) => e.id));
  });

  it("applies the caller's match, the way a run's or an incident's timeline asks for its events", async () => {
    const a = `read-match-${crypto.randomUUID()}`;
    const run = [idle(a, at(2, 0, 1), { fiberId: "f1" }), idle(a, at(2, 0, 2), { fiberId: "f2" }), idle(a, at(2, 0, 3), { fiberId: "f1" })];
    await write(run);
    const got = await historyEvents(bucket(), counts, { agent: agent(a), from: at(2, 0), to: at(2, 1), match: (e) => e.fiberId === "f1" });
    expect(got.events.map((e) => e.id)).toEqual([run[0]!.id, run[2]!.id]);
    expect(got.events[0]).toMatchObject({ type: "session.status_idle", agentClass: "ProbeAgent", agentName: a, fiberId: "f1", payload: {} });
    // What it looked at comes with it, so a page can say so.
    expect(got.scan).toMatchObject({ complete: true, coveredFrom: at(2, 0), coveredTo: at(2, 1) });
  });

  it("stops at its hour limit and says how far it looked, without gaps in what it returns", async () => {
    const a = `read-bound-${crypto.randomUUID()}`;
    const evs = Array.from({ length: 6 }, (_, h) => idle(a, at(3, h, 10)));
    for (const e of evs) await write([e]);
    const asc = await historyEvents(bucket(), counts, { agent: agent(a), from: at(3, 0), to: at(3, 6), limits: { maxHours: 3 } });
    expect(asc.events.map((e) => e.id)).toEqual(evs.slice(0, 3).map((e) => e.id));
    expect(asc.scan).toMatchObject({ complete: false, stop: { limit: "hours", at: 3, of: 7 }, coveredFrom: at(3, 0), coveredTo: at(3, 3) - 1 });
    const desc = await historyEvents(bucket(), counts, { agent: agent(a), from: at(3, 0), to: at(3, 5, HOUR_MS - 1), dir: "DESC", limits: { maxHours: 2 } });
    expect(desc.events.map((e) => e.id)).toEqual([evs[5]!.id, evs[4]!.id]);
    const fewObjects = await historyEvents(bucket(), counts, { agent: agent(a), from: at(3, 0), to: at(3, 6), limits: { maxObjects: 2 } });
    expect(fewObjects.events).toHaveLength(2);
    // Hour 2's only object is left unread: the span ends just before it, where nothing else can be.
    expect(fewObjects.scan).toMatchObject({ complete: false, stop: { limit: "objects", at: 2 }, coveredTo: at(3, 2, 10) - 1, objectsFetched: 2 });
  });

  it("covers part of a busy hour when the hour holds more objects than its limit, from the end its direction reads", async () => {
    const a = `read-busy-${crypto.randomUUID()}`;
    // 8 objects, a batch every 7 minutes: they fall in different slots.
    const evs = Array.from({ length: 8 }, (_, i) => idle(a, at(8, 0, i * 7 * 60_000 + 1)));
    for (const e of evs) await write([e]);
    const range = { agent: agent(a), from: at(8, 0), to: at(8, 1) - 1, limits: { maxObjects: 3 } };
    const asc = await historyEvents(bucket(), counts, range);
    expect(asc.events.map((e) => e.id)).toEqual(evs.slice(0, 3).map((e) => e.id));
    expect(asc.scan).toMatchObject({ complete: false, stop: { limit: "objects", at: 3 }, coveredFrom: at(8, 0), coveredTo: evs[3]!.time - 1 });
    const desc = await historyEvents(bucket(), counts, { ...range, dir: "DESC" });
    expect(desc.events.map((e) => e.id)).toEqual(
      evs
        .slice(5)
        .reverse()
        .map((e) => e.id),
    );
    // The newest unread object's last event (its metadata's maxTime) bounds the span.
    expect(desc.scan).toMatchObject({ complete: false, coveredFrom: evs[4]!.time + 1, coveredTo: at(8, 1) - 1 });
    expect(desc.events.every((e) => e.time >= desc.scan.coveredFrom!)).toBe(true);
    const fewEvents = await historyEvents(bucket(), counts, { ...range, limits: { maxEvents: 5 } });
    expect(fewEvents.events.map((e) => e.id)).toEqual(evs.slice(0, 5).map((e) => e.id));
    expect(fewEvents.scan).toMatchObject({ complete: false, stop: { limit: "events", at: 5 }, coveredTo: evs[5]!.time - 1 });
  });

  it("lists a shard folder only from one slot before its range to the first object past it", async () => {
    const a = `read-slots-${crypto.randomUUID()}`;
    // 12 objects early in the hour, 3 in the window asked for (minute 40 to 41), 5 after it.
    for (let i = 0; i < 12; i++) await write([idle(a, at(7, 0, i * 60_000))]);
    const inside = [0, 1, 2].map((i) => idle(a, at(7, 0, 40 * 60_000 + i * 20_000)));
    for (const e of inside) await write([e]);
    for (let i = 0; i < 5; i++) await write([idle(a, at(7, 0, (45 + i) * 60_000))]);
    const r = await historyEvents(bucket(), counts, { agent: agent(a), from: at(7, 0, 40 * 60_000), to: at(7, 0, 41 * 60_000) });
    expect(r.events.map((e) => e.id)).toEqual(inside.map((e) => e.id));
    // The window's 3 and the first one past it; nothing from the first 12 minutes.
    expect(r.scan.objectsListed).toBe(4);
    expect(r.scan.objectsFetched).toBe(3);
  });

  it("finds hours written under an earlier shard count while HISTORY_PREVIOUS_SHARDS names it", async () => {
    const a = `read-reshard-${crypto.randomUUID()}`;
    const old = idle(a, at(4, 0, 1));
    await write([old], 4);
    const now = await historyEvents(bucket(), { shards: 16 }, { agent: agent(a), from: at(4, 0), to: at(4, 1) });
    expect(now.events).toEqual([]);
    const both = await historyEvents(bucket(), { shards: 16, previousShards: [4] }, { agent: agent(a), from: at(4, 0), to: at(4, 1) });
    expect(both.events.map((e) => e.id)).toEqual([old.id]);
  });
});

describe("historySearch (id lookups over a bounded range of hours)", () => {
  it("finds every agent's events carrying a trace id, newest first, and skips objects without it", async () => {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const run = crypto.randomUUID();
    const hit1 = idle(`search-a-${run}`, at(5, 10, 1), { traceId });
    const hit2 = idle(`search-b-${run}`, at(5, 12, 2), { traceId, requestId: `req-${run}` });
    const noise = Array.from({ length: 20 }, (_, i) => idle(`search-n-${run}-${i}`, at(5, 10 + (i % 3), 3 + i)));
    await write([hit1, ...noise.slice(0, 10)]);
    await write([hit2, ...noise.slice(10)]);
    await write(noise.slice(0, 5).map((e) => ({ ...e, id: `${e.id}-x` })));

    const r = await historySearch(bucket(), { traceId, to: String(at(5, 13)) });
    expect(r.events.map((e) => e.id)).toEqual([hit2.id, hit1.id]);
    expect(r.scan).toMatchObject({ complete: true, hours: 24, coveredFrom: at(5, 13) - 23 * HOUR_MS, coveredTo: at(5, 13) });
    expect(r.scan.objectsSkipped).toBeGreaterThanOrEqual(1);

    const byRequest = await historySearch(bucket(), { requestId: `req-${run}`, from: String(at(5, 0)), to: String(at(5, 23)) });
    expect(byRequest.events.map((e) => e.id)).toEqual([hit2.id]);
    // An id pasted without its kind finds the events carrying it as any of them.
    const anyKind = await historySearch(bucket(), { id: `req-${run}`, from: String(at(5, 0)), to: String(at(5, 23)) });
    expect(anyKind.events.map((e) => e.id)).toEqual([hit2.id]);
    expect((await historySearch(bucket(), { id: traceId, to: String(at(5, 13)) })).events.map((e) => e.id)).toEqual([hit2.id, hit1.id]);
    const outside = await historySearch(bucket(), { traceId, from: String(at(5, 11)), to: String(at(5, 11, HOUR_MS - 1)) });
    expect(outside.events).toEqual([]);
    expect(outside.scan.hours).toBe(1);
  });

  it("refuses a lookup that names no id, two ids, or a window that ends before it starts, with a sentence", async () => {
    const bad = async (input: Record<string, string>) => {
      try {
        await historySearch(bucket(), input);
      } catch (e) {
        expect(isBadRequest(e)).toBe(true);
        return (e as Error).message;
      }
      throw new Error("accepted");
    };
    expect(await bad({})).toMatch(/exactly one of traceId, requestId, taskId, opId/);
    expect(await bad({ traceId: "t", opId: "o" })).toMatch(/got traceId, opId/);
    expect(await bad({ opId: "o", from: "2026-11-02T00:00:00Z", to: "2026-11-01T00:00:00Z" })).toMatch(/from must not be after to/);
  });

  it("bounds its work: at most the hours and list calls of its limits", async () => {
    const opId = `op-${crypto.randomUUID()}`;
    const hit = idle(`search-op-${opId}`, at(6, 1, 1), { opId });
    await write([hit]);
    const r = await historySearch(bucket(), { opId, to: String(at(6, 5)) }, { limits: { maxHours: 3 } });
    expect(r.events).toEqual([]);
    expect(r.scan).toMatchObject({ complete: false, stop: { limit: "hours", at: 3, of: 24 }, coveredFrom: hourOf(at(6, 3)) });
    const wider = await historySearch(bucket(), { opId, to: String(at(6, 5)) });
    expect(wider.events.map((e) => e.id)).toEqual([hit.id]);
    expect(wider.scan.lists).toBe(24);
  });
});
