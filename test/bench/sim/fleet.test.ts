import { parseEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import demo from "../../../bench/mixes/demo.json";
import { Fleet, meanEventsPerLife, typeShares } from "../../../bench/sim/fleet";
import { parseMix } from "../../../bench/sim/mix";

// The simulator is only worth its figures if what it sends is what agents send: valid contract events,
// numbered per agent, one agent's flush per Queue message, at the rate and in the mix the file asks for.

const mix = parseMix(demo, "bench/mixes/demo.json");
const T0 = Date.now() - 10 * 60_000;

function run(agents: number, seconds: number, rate = mix.eventsPerAgentPerMinute) {
  const fleet = new Fleet(mix, { agents, ratePerAgentPerMinute: rate, t0: T0, seed: 42, namePrefix: "t" });
  const messages = [];
  for (let t = T0 + 500; t <= T0 + seconds * 1000; t += 500) messages.push(...fleet.advance(t));
  return { fleet, messages };
}

describe("the simulated fleet", () => {
  it("sends valid contract events, numbered 1, 2, 3… per agent in time order, one agent's flush per message", () => {
    const { messages } = run(20, 60);
    const seqs = new Map<string, number[]>();
    let sendAt = 0;
    for (const m of messages) {
      expect(m.sendAt, "messages leave in send order").toBeGreaterThanOrEqual(sendAt);
      sendAt = m.sendAt;
      const events = JSON.parse(m.body) as { source: { agentName: string }; seq: number; time: number }[];
      expect(events.length).toBe(m.eventTimes.length);
      expect(new Set(events.map((e) => e.source.agentName)).size, "one agent per message").toBe(1);
      expect(Math.max(...events.map((e) => e.time)) - Math.min(...events.map((e) => e.time)), "within one flush delay").toBeLessThanOrEqual(mix.flushDelayMs);
      for (const e of events) {
        const v = parseEvent(e);
        expect(v.ok, v.ok ? "" : v.reason).toBe(true);
        const list = seqs.get(e.source.agentName) ?? [];
        list.push(e.seq);
        seqs.set(e.source.agentName, list);
      }
    }
    expect(seqs.size).toBe(20);
    for (const list of seqs.values()) expect(list).toEqual(list.map((_, i) => i + 1));
  });

  it("coalesces a fiber's checkpoints to the newest per flush, as the telemetry does: no message holds two of one fiber with nothing of it between", () => {
    const { fleet, messages } = run(20, 60);
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
    const { fleet } = run(50, 180, 60);
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

describe("mix files", () => {
  it("refuse a wrong file with a sentence naming the field", () => {
    expect(() => parseMix({ ...demo, eventsPerAgentPerMinute: -1 }, "bad.json")).toThrow(/bad\.json: eventsPerAgentPerMinute/);
    expect(() => parseMix({ ...demo, lives: { runFiber: 0 } }, "bad.json")).toThrow(/at least one life shape/);
    expect(() => parseMix({ ...demo, lives: { warpDrive: 3 } }, "bad.json")).toThrow(/lives/);
  });
});
