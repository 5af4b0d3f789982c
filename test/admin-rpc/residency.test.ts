import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";

/**
 * adminResidency: what keeps an agent resident, checked against the SDK's own public answers
 * (listSchedules, getConnections, ctx.storage.getAlarm) on a foreign alarm-loop agent and a plain Agent.
 */

const uid = () => crypto.randomUUID().slice(0, 8);
const viewer = { email: "residency@example.com", role: "viewer" as const };
const client = () => consoleAdminClient(env, viewer, { allowUnregistered: true });

describe("adminResidency", () => {
  it("shows an alarm loop's schedule as the agent lists it, since when, and the alarm it arms", async () => {
    const name = `loop-${uid()}`;
    const stub = await getAgentByName(env.AlarmLoopAgent, name);
    const before = Date.now();
    await stub.startLoop(30);
    const r = await client().residency({ agentClass: "AlarmLoopAgent", agentName: name });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [sdk] = await stub.sdkSchedules();
    expect(r.value.scheduleCount).toBe((await stub.sdkSchedules()).length);
    expect(r.value.schedules).toHaveLength(1);
    const s = r.value.schedules[0]!;
    expect(s).toMatchObject({ id: sdk!.id, callback: "tick", type: "delayed", delaySeconds: 30, nextAt: sdk!.time * 1000, running: false });
    // Second precision, as the SDK's job row records it.
    expect(s.since).not.toBeNull();
    expect(s.since!).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(s.since!).toBeLessThanOrEqual(Date.now());
    expect(r.value.nextAlarm).not.toBeNull();
    expect(r.value.nextAlarm!).toBeLessThanOrEqual(s.nextAt);
    expect(r.value.work).toEqual([]);
    expect(r.value.connections).toEqual({ count: 0, ids: [], since: null });
    expect(r.value.keepAlive.holders).toBe(0);
    expect(r.value.keepAlive.heartbeatSince).toBeNull();

    // It keeps firing: after its alarm runs, the agent lists a new schedule of the same loop, and nothing runs.
    await stub.stopLoop();
    await stub.startLoop(1);
    await new Promise((done) => setTimeout(done, 1100));
    await runDurableObjectAlarm(stub as never);
    const again = await client().residency({ agentClass: "AlarmLoopAgent", agentName: name });
    expect(again.ok && again.value.schedules.map((x) => [x.id, x.callback, x.delaySeconds])).toEqual(
      (await stub.sdkSchedules()).map((x) => [x.id, x.callback, x.delayInSeconds]),
    );
    await stub.stopLoop();
  });

  it("shows a plain Agent's keepAlive holder and open connection as the SDK has them; a connection's start is unknown", async () => {
    const name = `plain-${uid()}`;
    const stub = await getAgentByName(env.ResidentPlainAgent, name);
    const res = await stub.fetch(new Request(`http://agent/agents/resident-plain-agent/${name}`, { headers: { Upgrade: "websocket" } }));
    const ws = res.webSocket!;
    expect(ws).toBeTruthy();
    ws.accept();
    await stub.holdKeepAlive();
    const r = await client().residency({ agentClass: "ResidentPlainAgent", agentName: name });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.keepAlive.holders).toBe(1);
    expect(r.value.keepAlive.heartbeatSince).not.toBeNull();
    expect(r.value.keepAlive.nextHeartbeat).toBe(await stub.nextAlarm());
    expect(r.value.nextAlarm).toBe(await stub.nextAlarm());
    expect(r.value.hostJobs.map((j) => j.id)).toContain("cf:keep-alive");
    expect(r.value.connections.ids).toEqual(await stub.connectionIds());
    expect(r.value.connections).toMatchObject({ count: 1, since: null });
    expect(r.value.schedules).toEqual([]);

    await stub.releaseKeepAlive();
    ws.close();
    await new Promise((done) => setTimeout(done, 100));
    const after = await client().residency({ agentClass: "ResidentPlainAgent", agentName: name });
    expect(after.ok && after.value.keepAlive.holders).toBe(0);
    expect(after.ok && after.value.connections.count).toBe((await stub.connectionIds()).length);
  });
});
