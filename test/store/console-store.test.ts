import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { consoleStore } from "../../src/store/console-store";
import { partitionOf, type Store, singleStore } from "../../src/store/partitions";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { fiberLife } from "../fixtures/events";
import { patient } from "../patience";
import { empty } from "./store-helpers";

/**
 * The store API pages ask (src/store/console-store.ts): a run's and an incident's page, asked by id and agent, read
 * the agent's partition and answer what one database holding everything answers; without the R2 history, an id D1
 * does not hold is "nowhere", with nothing looked at.
 */

const P1 = env.DB_P1!;
const MIN = 60_000;
const T0 = Math.floor((Date.now() - 3_600_000) / MIN) * MIN;
const apiOf = (store: Store) => consoleStore({ store, history: { shards: 1, previousShards: [] }, hotWindowHours: 48, futureSkewMs: 0, now: T0 + 10 * MIN });

/** Eight agents, each with one fiber run that was interrupted and recovered (an incident each). */
function fleet(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let a = 0; a < 8; a++)
    for (const [i, e] of fiberLife(`cs-f-${a}`, `cs-${a}`).entries())
      out.push({ ...e, time: T0 + a * 1_000 + i * 100, source: { agentClass: "ProbeAgent", agentName: `cs-${a}` } });
  return out;
}

/** What a run's page and an incident's page read through the store API, for every agent of the fleet. */
async function pagesOf(store: Store) {
  const api = apiOf(store);
  const out: Record<string, unknown> = {};
  for (let a = 0; a < 8; a++) {
    const owner = { agentClass: "ProbeAgent", agentName: `cs-${a}` };
    const run = await api.runs.get(`cs-f-${a}`, owner);
    const got = await api.incidents.get(`fiber:ProbeAgent/cs-${a}/cs-f-${a}`, owner);
    const incident = got.where === "hot" ? got.incident : null;
    const timeline = incident ? await api.incidents.timeline(incident) : null;
    out[`cs-${a}`] = {
      where: run.where,
      run: run.where === "hot" ? { id: run.run.fiberId, agent: run.run.agentName, events: run.events.items.map((e) => e.type) } : null,
      incident: incident ? { id: incident.incidentId, agent: incident.agentName, timeline: timeline!.items.map((e) => e.type) } : null,
      agent: (await api.agents.find(owner))?.agentName ?? null,
    };
  }
  return out;
}

it("reads a run's and an incident's page from the agent's partition, as one database answers them", { timeout: patient(60_000) }, async () => {
  const events = fleet();
  const msgs = () => events.map((body, i) => ({ id: `cs-${i}`, body }));
  expect(new Set(events.map((e) => partitionOf(e.source.agentClass, e.source.agentName, 2))).size).toBe(2);

  await empty(env.DB);
  await empty(P1);
  await ingestIntoStore(singleStore(env.DB), msgs(), { now: T0 + 10 * MIN });
  const single = await pagesOf(singleStore(env.DB));

  await empty(env.DB);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  await ingestIntoStore(two, msgs(), { now: T0 + 10 * MIN });
  const merged = await pagesOf(two);

  // Not vacuous: every run and incident was found in D1, with its own agent's events.
  for (let a = 0; a < 8; a++) {
    const page = single[`cs-${a}`] as {
      where: string;
      run: { agent: string; events: string[] };
      incident: { agent: string; timeline: string[] };
      agent: string;
    };
    expect(page.where).toBe("hot");
    expect(page.run.agent).toBe(`cs-${a}`);
    expect(page.run.events).toContain("fiber.started");
    expect(page.incident.timeline).toContain("fiber.recovery.handled");
    expect(page.agent).toBe(`cs-${a}`);
  }
  expect(merged).toEqual(single);

  // Without the R2 history bound, an id D1 does not hold is nowhere, and nothing was looked at.
  const api = apiOf(two);
  expect(await api.runs.get("cs-no-such-run", undefined)).toEqual({ where: "nowhere", found: null });
  expect(await api.incidents.get("cs-no-such-incident")).toEqual({ where: "nowhere", found: null });
  expect(await api.agents.find({ agentClass: "OtherAgent", agentName: "cs-0" })).toBeNull();
  await empty(env.DB);
  await empty(P1);
});
