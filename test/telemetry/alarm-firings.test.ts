import { env } from "cloudflare:workers";
import { AlarmFirings } from "@agent-oncall/telemetry/alarm-firings";
import { ALARM_COALESCE_MS, type TelemetryEvent } from "@agent-oncall/telemetry/contract";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { listEvents } from "../../src/store/read-models/events";
import type { AlarmRate } from "../../src/store/read-models/residency";
import { makeEvent } from "../fixtures/events";
import { LOOP_ALARM_WINDOW_MS } from "../fixtures/resident-agents";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { call } from "../worker/routes/harness";

/**
 * An alarm loop costs one event per callback and window, not one per firing (alarm-firings.ts), and the console's
 * figures stay the agent's own: the firings it counts add up to the firings the agent ran, and /awake's rate is
 * the one its schedule list implies.
 */

const fired = (time: number, callback = "tick") =>
  makeEvent("schedule.executed", { callback, scheduleId: `s-${time}` }, { time }) as TelemetryEvent<"schedule.executed">;
const countOf = (e: TelemetryEvent<"schedule.executed"> | null) => (e ? (e.payload.count ?? 1) : 0);

describe("coalescing alarm firings (default window)", () => {
  it("ships a 30-second loop's first firing at once, then one event per window carrying every firing since", () => {
    const c = new AlarmFirings();
    const shipped: TelemetryEvent<"schedule.executed">[] = [];
    const firings = 3_600_000 / 30_000;
    for (let i = 0; i < firings; i++) {
      const e = c.admit(fired(i * 30_000));
      if (e) shipped.push(e);
    }
    expect(shipped[0]).toMatchObject({ time: 0, payload: { callback: "tick" } });
    expect(shipped[0]!.payload.count).toBeUndefined();
    // One event per window (and the first): 120 firings an hour become 13 events.
    expect(shipped).toHaveLength(1 + Math.floor((3_600_000 - 30_000) / ALARM_COALESCE_MS));
    for (let i = 1; i < shipped.length; i++) expect(shipped[i]!.time - shipped[i - 1]!.time).toBeGreaterThanOrEqual(ALARM_COALESCE_MS);
    // The counts shipped are exactly the firings up to the last event shipped; the rest are held, then drained.
    const last = shipped.at(-1)!.time;
    expect(shipped.reduce((n, e) => n + countOf(e), 0)).toBe(last / 30_000 + 1);
    expect(c.pending()).toBe(firings - (last / 30_000 + 1));
    const drained = c.drain();
    expect(drained).toHaveLength(1);
    expect(drained[0]!.time).toBe((firings - 1) * 30_000);
    expect(countOf(drained[0]!)).toBe(firings - (last / 30_000 + 1));
    expect(c.pending()).toBe(0);
    expect(c.drain()).toEqual([]);
  });

  it("ships every firing of an alarm slower than the window, and counts each callback apart", () => {
    const c = new AlarmFirings();
    const slow = [0, 1, 2, 3].map((i) => c.admit(fired(i * (ALARM_COALESCE_MS + 1000), "report")));
    expect(slow.every((e) => e !== null && e.payload.count === undefined)).toBe(true);
    expect(countOf(c.admit(fired(10, "tick")))).toBe(1);
    expect(c.admit(fired(20, "tick"))).toBeNull();
    expect(countOf(c.admit(fired(30, "other")))).toBe(1);
    expect(c.pending()).toBe(1);
  });
});

const uid = () => crypto.randomUUID().slice(0, 8);

describe("a fast alarm loop through the real pipe", () => {
  it("ships fewer events than firings while /awake counts every firing and keeps the rate of the agent's own schedule", async () => {
    await publishEnvTeamKeys();
    const name = `loop-coalesce-${uid()}`;
    const agent = { agentClass: "AlarmLoopAgent", agentName: name };
    const stub = await getAgentByName(env.AlarmLoopAgent, name);
    await stub.startLoop(1);
    // Real workerd alarms, every second: at least 10 firings, as the agent itself counts them.
    const deadline = Date.now() + patient(30_000);
    while ((await stub.firings()).fired < 12 && Date.now() < deadline) await scheduler.wait(250);
    const [sdk] = await stub.sdkSchedules();
    await stub.stopLoop();
    const own = await stub.firings();
    expect(own.fired).toBeGreaterThanOrEqual(10);

    const awake = async () => {
      const r = await call(`/awake?resident=idle`, { as: "viewer", headers: { Accept: "application/json" } });
      expect(r.status).toBe(200);
      return ((await r.json()) as { items: AlarmRate[] }).items.find((x) => x.agentName === name);
    };
    // What shipped counts every firing but those the agent still holds (at most one window's worth).
    expect(own.held).toBeLessThanOrEqual(Math.ceil(LOOP_ALARM_WINDOW_MS / 1000));
    let mine: AlarmRate | undefined;
    for (const until = Date.now() + patient(10_000); Date.now() < until; await scheduler.wait(100)) {
      mine = await awake();
      if (mine?.firings === own.fired - own.held) break;
    }
    expect(mine).toMatchObject({ ...agent, firings: own.fired - own.held, idle: true, loop: true });

    // The rate is the one the agent's own schedule implies: it re-arms every delayInSeconds.
    expect(sdk).toMatchObject({ callback: "tick", type: "delayed" });
    const expected = 3600 / sdk!.delayInSeconds!;
    const events = await listEvents(env.DB, { ...agent, type: "schedule.executed" }, { limit: 100 });
    console.log(
      `[alarm-coalesce] ${own.fired} firings, ${events.items.length} events shipped (${own.held} held); ${mine!.perHour.toFixed(0)}/h measured, ${expected}/h from the schedule`,
    );
    expect(Math.abs(mine!.perHour - expected) / expected).toBeLessThan(0.1);
    expect(events.items.length).toBeLessThan(own.fired - own.held);
    expect(events.items.reduce((n, e) => n + ((e.payload as { count?: number } | null)?.count ?? 1), 0)).toBe(own.fired - own.held);

    // Settling ships what was held: every firing the agent ran is counted, still in fewer events than firings.
    await stub.settleTelemetry();
    expect((await stub.firings()).held).toBe(0);
    for (const until = Date.now() + patient(10_000); Date.now() < until; await scheduler.wait(100)) {
      mine = await awake();
      if (mine?.firings === own.fired) break;
    }
    expect(mine?.firings).toBe(own.fired);
    const after = await listEvents(env.DB, { ...agent, type: "schedule.executed" }, { limit: 100 });
    expect(after.items.length).toBeLessThan(own.fired);
  });
});
