import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { parseEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import busy from "../../../bench/mixes/busy.json";
import demo from "../../../bench/mixes/demo.json";
import quiet from "../../../bench/mixes/quiet.json";
import { Fleet, meanEventsPerLife, ratePerFifth, streamFlushes, typeShares } from "../../../bench/sim/fleet";
import { type CapturePath, type Mix, parseCaptureFlag, parseMix, withCapture } from "../../../bench/sim/mix";
import { DEFAULT_STREAM_FLUSH_MS, STREAM_FLUSH_MAX } from "../../../worker/stream-flush";

// The simulator is only worth its figures if what it sends is what agents send on the path the mix names: on the
// tail path, unnumbered events with ids derived from the trace item, one message per invocation that has events;
// on the outbox path, numbered per agent, one agent's flush per Queue message; at the rate and in the mix the file
// asks for, flat from the run's first second.

const mix = parseMix(demo, "bench/mixes/demo.json");
const T0 = Date.now() - 10 * 60_000;

function run(agents: number, seconds: number, opts: { rate?: number; capture?: CapturePath; mix?: Mix } = {}) {
  const m = opts.mix ?? mix;
  const fleet = new Fleet(m, {
    agents,
    ratePerAgentPerMinute: opts.rate ?? m.eventsPerAgentPerMinute,
    t0: T0,
    seed: 42,
    namePrefix: "t",
    capture: opts.capture ?? m.capture,
    streamFlush: { flushMs: DEFAULT_STREAM_FLUSH_MS, flushMax: STREAM_FLUSH_MAX },
  });
  const messages = [];
  for (let t = T0 + 500; t <= T0 + seconds * 1000; t += 500) messages.push(...fleet.advance(t));
  return { fleet, messages };
}

type Sent = { id: string; type: string; seq?: number; time: number; source: { agentName: string }; corr: Record<string, string> };

describe("the simulated fleet on the tail path (the default)", () => {
  it("sends valid contract events without numbers, with ids derived from the trace item, one agent invocation per message", () => {
    expect(mix.capture).toBe("tail");
    const { fleet, messages } = run(20, 60);
    let sendAt = 0;
    for (const m of messages) {
      expect(m.sendAt, "messages leave in send order").toBeGreaterThanOrEqual(sendAt);
      sendAt = m.sendAt;
      const events = JSON.parse(m.body) as Sent[];
      expect(events.length).toBe(m.eventTimes.length);
      expect(new Set(events.map((e) => e.source.agentName)).size, "one agent per message").toBe(1);
      // Sent when the invocation ends: after its last event.
      expect(m.sendAt).toBeGreaterThan(Math.max(...events.map((e) => e.time)));
      for (const e of events) {
        const v = parseEvent(e);
        expect(v.ok, v.ok ? "" : v.reason).toBe(true);
        expect(e.seq, "the tail carries no numbers").toBeUndefined();
        // src/telemetry/tail.ts tailEventId: time, place in the item, and a hash of the item and the message.
        expect(e.id).toMatch(/^[0-9a-z]{9}-[0-9a-z]{6}-t[0-9a-f]{16}$/);
      }
    }
    expect(fleet.items, "one message per item that has events").toBe(messages.length);
    expect(fleet.coalesced, "nothing coalesces on the tail path").toBe(0);
  });

  it("puts what follows an eviction in a later invocation: a recovery's events arrive in another message than the run it recovers", () => {
    const { messages } = run(50, 60);
    let split = 0;
    const where = new Map<string, number>();
    messages.forEach((m, i) => {
      for (const e of JSON.parse(m.body) as Sent[]) {
        const fiber = e.corr.fiberId;
        if (!fiber) continue;
        if (e.type === "fiber.interrupted") where.set(fiber, i);
        if (e.type === "fiber.recovery.detected" && where.has(fiber)) {
          expect(where.get(fiber), "the recovery's item is another than the interruption's").not.toBe(i);
          split++;
        }
      }
    });
    expect(split).toBeGreaterThan(0);
  });

  it("packs one invocation's events per message on each mix: never more than a life holds, fewer where recoveries split lives", () => {
    for (const file of [demo, quiet, busy]) {
      const m = parseMix(file);
      const tail = run(100, 30, { mix: m }).fleet;
      const perMessage = tail.events / tail.messages;
      expect(perMessage, m.name).toBeGreaterThanOrEqual(1);
      expect(perMessage, m.name).toBeLessThan(meanEventsPerLife(m));
    }
  });
});

describe("the simulated fleet on the streaming tail", () => {
  const streaming = { deliveryMs: mix.streaming!.deliveryMs, flushMs: DEFAULT_STREAM_FLUSH_MS };

  it("sends an invocation's events while it runs, each flush within delivery + flush time of its first event, with the classic tail's ids", () => {
    const classic = run(30, 60);
    const streamed = run(30, 60, { capture: "streaming" });
    // Every event that happened in the run, the invocations still open at its end included.
    for (const r of [classic, streamed]) r.messages.push(...r.fleet.finish(T0 + 60_000));
    // The same events in the same places of the same invocations (an id's time and position: its hash also covers
    // payloads, a few of which the fleet dates by the wall clock, so two runs differ there).
    const ids = (ms: typeof classic.messages) => ms.flatMap((m) => (JSON.parse(m.body) as Sent[]).map((e) => `${e.id.slice(0, 16)} ${e.type}`)).sort();
    expect(ids(streamed.messages)).toEqual(ids(classic.messages));
    for (const m of streamed.messages) {
      const events = JSON.parse(m.body) as Sent[];
      expect(new Set(events.map((e) => e.source.agentName)).size, "one agent per message").toBe(1);
      const first = Math.min(...events.map((e) => e.time));
      expect(m.sendAt - first).toBeLessThanOrEqual(streaming.deliveryMs + streaming.flushMs);
      expect(m.sendAt).toBeGreaterThanOrEqual(Math.max(...events.map((e) => e.time)) + streaming.deliveryMs);
    }
    // More messages than the classic tail's (an invocation longer than a flush is sent in steps), never fewer.
    expect(streamed.messages.length).toBeGreaterThan(classic.messages.length);
    // And each event leaves sooner: the worst publish-to-send wait is a flush's, not an invocation's.
    const worst = (ms: typeof classic.messages) => Math.max(...ms.flatMap((m) => m.eventTimes.map((t) => m.sendAt - t)));
    expect(worst(streamed.messages)).toBeLessThanOrEqual(streaming.deliveryMs + streaming.flushMs);
    expect(worst(classic.messages)).toBeGreaterThan(worst(streamed.messages));
  });

  it("flushes at the handler's size cap, and at the invocation's end when that comes first", () => {
    const at = (time: number, i: number) => ({ time, id: String(i) }) as unknown as TelemetryEvent;
    const burst = Array.from({ length: 5 }, (_, i) => at(1_000, i));
    const steps = streamFlushes(burst, { deliveryMs: 20, flushMs: 250, flushMax: 2 });
    expect(steps.map((s) => [s.sendAt, s.events.length])).toEqual([
      [1_020, 2],
      [1_020, 2],
      [1_020, 1],
    ]);
    const spread = [at(0, 0), at(100, 1), at(400, 2), at(5_000, 3)];
    expect(streamFlushes(spread, { deliveryMs: 20, flushMs: 250, flushMax: 200 }).map((s) => [s.sendAt, s.events.length])).toEqual([
      [270, 2],
      [670, 1],
      [5_020, 1],
    ]);
  });
});

describe("the simulated fleet on the outbox path", () => {
  it("sends valid contract events, numbered 1, 2, 3… per agent in time order, one agent's flush per message", () => {
    const { messages } = run(20, 60, { capture: "outbox" });
    const seqs = new Map<string, number[]>();
    let sendAt = 0;
    for (const m of messages) {
      expect(m.sendAt, "messages leave in send order").toBeGreaterThanOrEqual(sendAt);
      sendAt = m.sendAt;
      const events = JSON.parse(m.body) as { source: { agentName: string }; seq: number; time: number }[];
      expect(events.length).toBe(m.eventTimes.length);
      expect(new Set(events.map((e) => e.source.agentName)).size, "one agent per message").toBe(1);
      expect(Math.max(...events.map((e) => e.time)) - Math.min(...events.map((e) => e.time)), "within one flush delay").toBeLessThanOrEqual(
        mix.outbox.flushDelayMs,
      );
      for (const e of events) {
        const v = parseEvent(e);
        expect(v.ok, v.ok ? "" : v.reason).toBe(true);
        const list = seqs.get(e.source.agentName) ?? [];
        list.push(e.seq);
        seqs.set(e.source.agentName, list);
      }
    }
    expect(seqs.size).toBe(20);
    // Numbered from the first event each agent sends in the run (lives under way at its start included).
    for (const list of seqs.values()) expect(list).toEqual(list.map((_, i) => i + 1));
  });

  it("coalesces a fiber's checkpoints to the newest per flush, as the telemetry does: no message holds two of one fiber with nothing of it between", () => {
    const { fleet, messages } = run(20, 60, { capture: "outbox" });
    expect(fleet.coalesced).toBeGreaterThan(0);
    for (const m of messages) {
      const last = new Map<string, string>();
      for (const e of JSON.parse(m.body) as { type: string; corr: { fiberId?: string } }[]) {
        if (!e.corr.fiberId) continue;
        expect(e.type === "fiber.stashed" && last.get(e.corr.fiberId) === "fiber.stashed", "two checkpoints of one fiber in a row").toBe(false);
        last.set(e.corr.fiberId, e.type);
      }
    }
  });

  it("emits at the rate asked, within 15% over a few minutes of a small fleet", () => {
    const { fleet } = run(50, 180, { rate: 60, capture: "outbox" });
    // The rate is what agents emit; checkpoints coalesced away before the outbox (fleet.coalesced) are never sent.
    const perAgentPerMinute = (fleet.events + fleet.coalesced) / 50 / 3;
    expect(perAgentPerMinute).toBeGreaterThan(60 * 0.85);
    expect(perAgentPerMinute).toBeLessThan(60 * 1.15);
  });

  it("keeps the demo fleet's measured shares: stashes about a quarter, model usage and ops about a tenth each", () => {
    const s = typeShares(mix);
    expect(s["fiber.stashed"]).toBeGreaterThan(0.22);
    expect(s["fiber.stashed"]).toBeLessThan(0.32);
    for (const t of ["model.usage", "op.started", "op.completed"]) {
      expect(s[t]).toBeGreaterThan(0.05);
      expect(s[t]).toBeLessThan(0.14);
    }
    for (const t of ["chat.recovery.exhausted", "op.ambiguous", "fiber.recovery.handled", "task.completed", "chat.turn.finished", "session.status_idle"])
      expect(s[t], t).toBeGreaterThan(0);
    expect(meanEventsPerLife(mix)).toBeGreaterThan(1);
  });
});

describe("a steady fleet from the first second", () => {
  // Counts, not speed: the events each fifth of a 10 s run offers (by when they happened), against the mix's rate.
  const TOLERANCE = 0.15;
  for (const [file, agents] of [
    [demo, 2_000],
    [quiet, 20_000],
    [busy, 3_000],
  ] as const)
    for (const capture of ["tail", "outbox"] as const)
      it(`offers the ${file.name} mix's rate in every fifth of a 10 s run, the first included, within ${TOLERANCE * 100}% (${capture} path)`, () => {
        const m = parseMix(file);
        const { fleet } = run(agents, 10, { mix: m, capture });
        const expected = (agents * m.eventsPerAgentPerMinute) / 60;
        const fifths = ratePerFifth(fleet.emittedBySecond, 10);
        expect(fifths).toHaveLength(5);
        for (const [k, r] of fifths.entries()) {
          expect(r / expected, `fifth ${k + 1}: ${r.toFixed(0)} events/s against ${expected.toFixed(0)}`).toBeGreaterThan(1 - TOLERANCE);
          expect(r / expected, `fifth ${k + 1}: ${r.toFixed(0)} events/s against ${expected.toFixed(0)}`).toBeLessThan(1 + TOLERANCE);
        }
        // The run starts with lives under way, begun in a warm-up at least as long as the longest life.
        expect(fleet.warmupMs).toBeGreaterThan(0);
      });

  it("sends every event that happened before the run's end, the lives the end cut included, and none after it", () => {
    for (const capture of ["tail", "outbox"] as const) {
      const { fleet, messages } = run(200, 10, { capture });
      const end = T0 + 10_000;
      messages.push(...fleet.finish(end));
      const sent = messages.reduce((n, m) => n + m.eventTimes.length, 0);
      const offered = fleet.emittedBySecond.slice(0, 10).reduce((a, b) => a + b, 0);
      expect(sent + fleet.coalesced, capture).toBe(offered);
      expect(Math.max(...messages.flatMap((m) => m.eventTimes)), capture).toBeLessThan(end);
    }
  });
});

describe("mix files", () => {
  it("refuse a wrong file with a sentence naming the field", () => {
    expect(() => parseMix({ ...demo, eventsPerAgentPerMinute: -1 }, "bad.json")).toThrow(/bad\.json: eventsPerAgentPerMinute/);
    expect(() => parseMix({ ...demo, lives: { runFiber: 0 } }, "bad.json")).toThrow(/at least one life shape/);
    expect(() => parseMix({ ...demo, lives: { warpDrive: 3 } }, "bad.json")).toThrow(/lives/);
  });

  it("state their capture path and what it costs, and refuse a path that is not one, or a path's figures missing", () => {
    for (const file of [demo, quiet, busy]) {
      const m = parseMix(file);
      expect(m.capture, `${m.name} defaults to what npm start uses`).toBe("tail");
      expect(m.tail.invocationsPerEvent).toBeGreaterThan(0);
      expect(m.outbox.agentRowsPerEvent).toBeGreaterThan(0);
    }
    expect(() => parseMix({ ...demo, capture: "kafka" }, "bad.json")).toThrow(/bad\.json: capture: capture must be "tail", "streaming" or "outbox"/);
    const { streaming: _streaming, ...noStreaming } = demo;
    expect(() => withCapture(parseMix(noStreaming), "streaming")).toThrow(/states no "streaming" figures/);
    const { tail: _tail, ...noTail } = demo;
    expect(() => parseMix(noTail, "bad.json")).toThrow(/bad\.json: tail:/);
    expect(() => parseMix({ ...demo, outbox: { ...demo.outbox, flushDelayMs: -1 } }, "bad.json")).toThrow(/outbox\.flushDelayMs/);
    expect(() => parseMix({ ...demo, awake: { ...demo.awake, keepAliveShare: 1.5 } }, "bad.json")).toThrow(/awake\.keepAliveShare/);
  });

  it("let the command line pick the other path, and refuse any other value with a sentence", () => {
    expect(withCapture(mix, parseCaptureFlag("outbox")).capture).toBe("outbox");
    expect(withCapture(mix, parseCaptureFlag(undefined)).capture).toBe("tail");
    expect(withCapture(mix, parseCaptureFlag("streaming")).capture).toBe("streaming");
    expect(() => parseCaptureFlag("kafka")).toThrow(/--capture must be "tail" .*, "streaming" .* or "outbox" .* \(got "kafka"\)/);
  });
});
