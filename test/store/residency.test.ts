import { env } from "cloudflare:workers";
import { AlarmFirings } from "@agent-oncall/telemetry/alarm-firings";
import type { TelemetryEvent } from "@agent-oncall/telemetry/contract";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { ALARM_EVENT, alarmRates, IDLE_EVICTION_MS, residentEstimate, unionMs } from "../../src/store/read-models/residency";
import { makeEvent } from "../fixtures/events";
import { pollRows } from "../helpers";
import { ingestWithCost } from "./store-helpers";

/**
 * The awake list's figures, checked against the agent itself: an alarm loop (AlarmLoopAgent re-schedules itself
 * every N seconds with nothing to do) is flagged, at the rate its own schedule list implies (3600 / N per hour).
 */

const uid = () => crypto.randomUUID().slice(0, 8);

describe("alarm loops", () => {
  it("flags an agent whose alarm keeps firing with nothing to do, at the rate its own schedule implies", async () => {
    const name = `loop-rate-${uid()}`;
    const stub = await getAgentByName(env.AlarmLoopAgent, name);
    await stub.startLoop(1);
    // The alarm fires by itself (real workerd alarms); each firing is a schedule.executed event.
    await pollRows<{ n: number }>(
      "SELECT alarm_first_at, alarm_last_at, (alarm_last_at - alarm_first_at) AS n FROM agents WHERE agent_class = 'AlarmLoopAgent' AND agent_name = ?",
      [name],
      (r) => r.length === 1 && Number(r[0]!.n) >= 4_000,
      20_000,
    );
    const [sdk] = await stub.sdkSchedules();
    await stub.stopLoop();
    await stub.settleTelemetry();
    const agent = { agentClass: "AlarmLoopAgent", agentName: name };
    const firings = await pollRows<{ n: number }>(
      "SELECT SUM(n) AS n FROM event_rollups WHERE type = ? AND dim = ?",
      [ALARM_EVENT, JSON.stringify(["AlarmLoopAgent", name])],
      (r) => Number(r[0]?.n ?? 0) >= 5,
    );
    const { items } = await alarmRates(env.DB, { agent });
    expect(items).toHaveLength(1);
    const rate = items[0]!;
    expect(rate.firings).toBe(Number(firings[0]!.n));
    expect(rate).toMatchObject({ ...agent, idle: true, loop: true });
    // The agent's own schedule list says it re-arms every delayInSeconds: 3600 / N firings per hour.
    expect(sdk).toMatchObject({ callback: "tick", type: "delayed" });
    const expected = 3600 / sdk!.delayInSeconds!;
    console.log(
      `[alarm-rate] ${rate.firings} firings: ${rate.perHour.toFixed(0)}/h measured, ${expected}/h from the agent's schedule (delayInSeconds ${sdk!.delayInSeconds})`,
    );
    expect(Math.abs(rate.perHour - expected) / expected).toBeLessThan(0.2);

    // The fleet list lists it among the loops, and the estimate of its resident time covers its activity.
    const loops = await alarmRates(env.DB, { loopsOnly: true });
    expect(loops.items.some((x) => x.agentName === name)).toBe(true);
    const est = await residentEstimate(env.DB, agent);
    expect(est.segments).toBeGreaterThan(0);
    expect(est.lowMs).toBeGreaterThanOrEqual((rate.lastAt ?? 0) - (rate.firstAt ?? 0));
    expect(est.highMs).toBeGreaterThanOrEqual(est.lowMs);
  });

  it("does not flag an alarm that fires for an agent with an open run", async () => {
    const name = `loop-busy-${uid()}`;
    const stub = await getAgentByName(env.AlarmLoopAgent, name);
    await stub.startWork();
    await stub.startLoop(1);
    await pollRows<{ n: number }>(
      "SELECT SUM(n) AS n FROM event_rollups WHERE type = ? AND dim = ?",
      [ALARM_EVENT, JSON.stringify(["AlarmLoopAgent", name])],
      (r) => Number(r[0]?.n ?? 0) >= 3,
      20_000,
    );
    await stub.stopLoop();
    const { items } = await alarmRates(env.DB, { agent: { agentClass: "AlarmLoopAgent", agentName: name } });
    expect(items[0]).toMatchObject({ idle: false, loop: false });
    await stub.finishWork();
  });
});

describe("resident time estimate", () => {
  it("holds each activity span awake until idle eviction, counting overlaps once", () => {
    const spans = [
      { f: 0, t: 10_000 },
      { f: 50_000, t: 60_000 },
      { f: 1_000_000, t: 1_000_000 },
    ];
    // [0, 80 s] ∪ [50 s, 130 s] merge into [0, 130 s]; the lone event adds 70 s.
    expect(unionMs(spans, IDLE_EVICTION_MS.low, 10_000_000)).toBe(130_000 + 70_000);
    // Cut at the end of the window.
    expect(unionMs([{ f: 0, t: 0 }], IDLE_EVICTION_MS.high, 5_000)).toBe(5_000);
  });
});

describe("what an alarm firing costs D1", () => {
  it("writes what any lone event writes plus the agents row (its exact last firing, which the rate needs); the per-agent rollup adds no row", async () => {
    const agentName = `alarm-cost-${uid()}`;
    const base = Math.floor((Date.now() - 3_600_000) / 3_600_000) * 3_600_000;
    // One firing per batch, as a loop every 30 s sends them; the first of each kind creates its rows, so measure the second.
    const lone = async (type: "schedule.executed" | "sdk.event", at: number) => {
      const e =
        type === "schedule.executed"
          ? makeEvent("schedule.executed", { callback: "tick", scheduleId: "s1" }, { agentName, time: at })
          : makeEvent("sdk.event", { sdkType: "custom:thing", data: { preview: "{}", bytes: 2, truncated: false } }, { agentName: `${agentName}-b`, time: at });
      return ingestWithCost([e], at + 1000);
    };
    await lone("schedule.executed", base);
    await lone("sdk.event", base);
    const alarm = await lone("schedule.executed", base + 30_000);
    const other = await lone("sdk.event", base + 30_000);
    console.log(
      `[alarm-cost] lone schedule.executed: ${alarm.rowsWritten} rows written ${JSON.stringify(alarm.rowsWrittenByTable)}; lone sdk.event: ${other.rowsWritten}`,
    );
    expect(alarm.stored).toBe(1);
    // Another lone event within HEARD_FROM_STEP_MS of the last leaves the agents row alone (src/store/heard-from.ts);
    // a firing moves alarm_last_at, which /awake's rate and "still firing" read exactly: that row, no index entry.
    expect(other.rowsWrittenByTable.agents ?? 0).toBe(0);
    expect(alarm.rowsWrittenByTable.agents).toBe(1);
    expect(alarm.rowsWritten).toBe(other.rowsWritten + 1);
  });

  it("costs a 30-second loop about a tenth of the rows once its firings ship as counts, at the same rate", async () => {
    const base = Math.floor((Date.now() - 2 * 3_600_000) / 300_000) * 300_000;
    const hour = Array.from({ length: 120 }, (_, i) => base + i * 30_000);
    const at = (agentName: string, t: number, count?: number) =>
      makeEvent("schedule.executed", { callback: "tick", scheduleId: `s-${t}`, ...(count ? { count } : {}) }, { agentName, time: t });
    // An hour of firings, one batch per shipped event: every firing (before), or what the agent ships by default (after).
    const each = `alarm-each-${uid()}`;
    const counted = `alarm-counted-${uid()}`;
    const coalescer = new AlarmFirings();
    let before = 0;
    let after = 0;
    let shipped = 0;
    for (const t of hour) {
      before += (await ingestWithCost([at(each, t)], t + 1000)).rowsWritten;
      const e = coalescer.admit(at(counted, t) as TelemetryEvent<"schedule.executed">);
      if (!e) continue;
      shipped++;
      const r = await ingestWithCost([e], t + 1000);
      expect(r.stored).toBe(1);
      after += r.rowsWritten;
      // A redelivery counts nothing more.
      await ingestWithCost([e], t + 2000);
    }
    const now = hour.at(-1)! + 10_000;
    const rate = async (agentName: string) => (await alarmRates(env.DB, { agent: { agentClass: "ProbeAgent", agentName }, now })).items[0]!;
    const [a, b] = [await rate(each), await rate(counted)];
    console.log(
      `[alarm-cost] an hour of a 30 s loop: 120 events, ${before} rows (${(before / 120).toFixed(2)}/firing) shipped one per firing; ` +
        `${shipped} events, ${after} rows (${(after / 120).toFixed(2)}/firing) as counts; ${a.perHour.toFixed(1)}/h vs ${b.perHour.toFixed(1)}/h`,
    );
    expect(shipped).toBeLessThanOrEqual(13);
    expect(after * 5).toBeLessThan(before);
    // Every firing up to the last shipped one is counted, and both measure the loop's 120 an hour.
    expect(a).toMatchObject({ firings: 120, firstAt: base, loop: true });
    expect(b).toMatchObject({ firings: 120 - coalescer.pending(), firstAt: base, loop: true });
    expect(Math.abs(b.perHour - 120) / 120).toBeLessThan(0.1);
    expect(a.perHour).toBeCloseTo(120, 6);
  });
});
