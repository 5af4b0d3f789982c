import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { agentHref } from "../../../console/links";
import { alarmRates } from "../../../src/store/read-models/residency";
import { alertAlarmLoops } from "../../../worker/alerts/alarm-loop";
import { pollRows } from "../../helpers";

// The alarm_loop alert end to end in workerd: a foreign agent (AlarmLoopAgent) re-schedules itself every second with
// nothing to do, its firings reach D1 through the real Queue and ingest, the awake read model flags it, and the alert
// goes through the real alerts Queue to the real webhook receiver (test/alert-receiver.ts), once per agent and day.

type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];

describe("alarm loop alert", () => {
  it("fires once per agent and day for an agent its own schedule keeps in a loop, and not for an agent with work", async () => {
    const name = `loop-alert-${crypto.randomUUID().slice(0, 8)}`;
    const busyName = `loop-alert-busy-${crypto.randomUUID().slice(0, 8)}`;
    const agent = { agentClass: "AlarmLoopAgent", agentName: name };
    const stub = await getAgentByName(env.AlarmLoopAgent, name);
    const busy = await getAgentByName(env.AlarmLoopAgent, busyName);
    await busy.startWork();
    await stub.startLoop(1);
    await busy.startLoop(1);
    for (const n of [name, busyName])
      await pollRows<{ n: number }>(
        "SELECT SUM(n) AS n FROM event_rollups WHERE type = 'schedule.executed' AND dim = ?",
        [JSON.stringify(["AlarmLoopAgent", n])],
        (r) => Number(r[0]?.n ?? 0) >= 4,
        20_000,
      );
    const [sdk] = await stub.sdkSchedules();
    expect(sdk).toMatchObject({ callback: "tick", type: "delayed", delayInSeconds: 1 });
    const now = Date.now();
    const { items } = await alarmRates(env.DB, { now, loopsOnly: true });
    expect(items.map((a) => a.agentName)).toContain(name);
    expect(items.map((a) => a.agentName)).not.toContain(busyName);

    const raised = await alertAlarmLoops(env, now);
    expect(raised.queued).toBeGreaterThanOrEqual(2);
    const rows = await pollRows<{ channel: string; kind: string; status: string }>(
      "SELECT channel, kind, status FROM alert_deliveries WHERE agent_name = ? ORDER BY channel",
      [name],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    expect(rows.map((d) => [d.channel, d.kind])).toEqual([
      ["slack", "alarm_loop"],
      ["webhook", "alarm_loop"],
    ]);
    const json = (await received(name)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "alarm_loop",
      subject: `AlarmLoopAgent/${name}`,
      url: `https://oncall.example.com${agentHref(agent, "", "awake")}`,
    });
    const details = json.details as { perHour: number; firings: number };
    expect(Math.abs(details.perHour - 3600) / 3600).toBeLessThan(0.2);

    // The next check the same day: no second alert for the same agent; none ever for the agent with work.
    await scheduler.wait(1500);
    const again = await alertAlarmLoops(env, Date.now());
    expect(again.queued).toBe(0);
    expect((await received(name)).length).toBe(2);
    expect(await received(busyName)).toEqual([]);
    await stub.stopLoop();
    await busy.stopLoop();
    await busy.finishWork();
  });
});
