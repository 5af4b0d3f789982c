import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AwakeFacts } from "../../../console/pages/awake";
import type { AlarmRate } from "../../../src/store/read-models/residency";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// "Why is this agent awake" through the real Worker with real Access tokens, on the foreign alarm-loop fixture
// (AlarmLoopAgent re-schedules itself every second with nothing to do): the agent page's panel says what the
// agent itself reports, and /awake?resident=idle lists it, flagged, at its own schedule's rate.

const name = `awake-route-${uid()}`;
const agent = { agentClass: "AlarmLoopAgent", agentName: name };
const json = async <T>(path: string) => {
  const r = await call(path, { as: "viewer", headers: { Accept: "application/json" } });
  return { status: r.status, body: (await r.json()) as T };
};

beforeAll(async () => {
  await publishEnvTeamKeys();
  const stub = await getAgentByName(env.AlarmLoopAgent, name);
  await stub.startLoop(1);
  await pollRows(
    "SELECT SUM(n) AS n FROM event_rollups WHERE type = 'schedule.executed' AND dim = ?",
    [JSON.stringify(["AlarmLoopAgent", name])],
    (r: { n: number }[]) => Number(r[0]?.n ?? 0) >= 4,
    20_000,
  );
});

afterAll(async () => {
  await (await getAgentByName(env.AlarmLoopAgent, name)).stopLoop();
});

describe("/awake and the agent's awake panel", () => {
  it("lists the looping agent among those resident with nothing to do, at its schedule's rate", async () => {
    const { status, body } = await json<{ items: AlarmRate[] }>("/awake?resident=idle");
    expect(status).toBe(200);
    const mine = body.items.find((a) => a.agentName === name);
    expect(mine).toMatchObject({ ...agent, loop: true, idle: true });
    const [sdk] = await (await getAgentByName(env.AlarmLoopAgent, name)).sdkSchedules();
    expect(Math.abs(mine!.perHour - 3600 / sdk!.delayInSeconds!) / (3600 / sdk!.delayInSeconds!)).toBeLessThan(0.25);

    const html = await getText("/awake?resident=idle", "viewer");
    expect(html.status).toBe(200);
    expect(findAll(html.text, "data-agent", `AlarmLoopAgent/${name}`)[0]?.attrs["data-loop"]).toBe("true");
  });

  it("counts the loops on the overview, in a card that links to exactly the loops it counts", async () => {
    const { body } = await json<{ items: AlarmRate[] }>("/awake?resident=idle");
    const page = await getOverview("viewer");
    expect(page.status).toBe(200);
    const card = /<a\s([^>]*data-testid="count-Alarm loops"[^>]*)>/.exec(page.text);
    expect(card).not.toBeNull();
    const attrs = Object.fromEntries([...card![1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!.replace(/&amp;/g, "&")]));
    expect(attrs.href).toBe("/awake?resident=idle");
    expect(body.items.some((a) => a.agentName === name && a.loop)).toBe(true);
    expect(Number(attrs["data-figure"])).toBe(body.items.length);
    expect(attrs.class).toContain("alert");
  });

  it("shows on the agent page what the agent reports keeps it resident, with since when", async () => {
    const page = await getText(`/agents/AlarmLoopAgent/${name}`, "viewer");
    expect(page.status).toBe(200);
    expect(page.text).toContain(`/agents/AlarmLoopAgent/${name}/awake`);

    const { status, body } = await json<AwakeFacts>(`/agents/AlarmLoopAgent/${name}/awake`);
    expect(status).toBe(200);
    if ("error" in body.residency) throw new Error(body.residency.error);
    const sdk = await (await getAgentByName(env.AlarmLoopAgent, name)).sdkSchedules();
    expect(body.residency.schedules.map((s) => [s.id, s.callback, s.delaySeconds])).toEqual(sdk.map((s) => [s.id, s.callback, s.delayInSeconds]));
    expect(body.alarms).toMatchObject({ loop: true });
    expect(body.resident.highMs).toBeGreaterThanOrEqual(body.resident.lowMs);

    const panel = await getText(`/agents/AlarmLoopAgent/${name}/awake`, "viewer");
    const awake = mustTestId(panel.text, "awake-panel");
    expect([awake, ...findAll(awake.html, "data-loop")].some((e) => e.attrs["data-loop"] === "true")).toBe(true);
  });

  it("refuses a bad filter with a sentence, and an unknown agent with 404", async () => {
    const bad = await getText("/awake?resident=sometimes", "viewer");
    expect(bad.status).toBe(400);
    expect((await call("/agents/AlarmLoopAgent/never-was/awake", { as: "viewer" })).status).toBe(404);
  });
});
