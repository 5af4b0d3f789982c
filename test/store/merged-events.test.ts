import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { partitionOf, type Store, singleStore } from "../../src/store/partitions";
import type { EventListInput } from "../../src/store/read-models/events";
import { listEventsIn } from "../../src/store/read-models/merged-events";
import type { PageOptions } from "../../src/store/read-models/paging";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { chatIncidentLife, fiberLife } from "../fixtures/events";
import { patient } from "../patience";
import { empty } from "./store-helpers";

/**
 * The events list over a partitioned store (merged-events.ts) against one database. The fleet-wide list is in
 * arrival order; each delivery here carries one agent's events (so one partition's) and arrives after the last, so
 * one database's insertion order is the deliveries' order, and the merged list must list the same events on the
 * same pages. Event times run against arrival on purpose: the page order is arrival, the order within a page time.
 */

const P1 = env.DB_P1!;
const MIN = 60_000;
const T0 = Math.floor((Date.now() - 86_400_000) / MIN) * MIN;
const CLASSES = ["ProbeAgent", "SupportAgent"];

/** Deliveries: one agent's fiber life (and, for some, a chat incident), later agents' events dated earlier. */
function deliveries(): { now: number; events: TelemetryEvent[] }[] {
  return Array.from({ length: 16 }, (_, a) => {
    const agentClass = CLASSES[a % 2]!;
    const agentName = `ev-${a}`;
    const life = [...fiberLife(`f-${a}`, agentName), ...(a % 3 ? chatIncidentLife(`i-${a}`, agentName) : [])];
    const base = T0 + (16 - a) * 10 * MIN;
    return { now: T0 + 200 * MIN + a * 1000, events: life.map((e, i) => ({ ...e, time: base + i * 1000, source: { agentClass, agentName } })) };
  });
}

/** Every page's events (ids), following the cursors to the end. */
async function pages(store: Store, filters: EventListInput, limit: number): Promise<string[][]> {
  const out: string[][] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 200; i++) {
    const p = await listEventsIn(store, filters, { cursor, limit } satisfies PageOptions);
    out.push(p.items.map((e) => `${e.agentName}:${e.type}:${e.time}`));
    if (!p.next) return out;
    cursor = p.next;
  }
  throw new Error("too many pages");
}

const QUERIES: EventListInput[] = [
  { type: "fiber.started,fiber.stashed,chat.recovery.attempt" },
  { type: "chat.recovery.exhausted" },
  { type: "fiber.recovery.attempt", withIncident: "true" },
  { type: "fiber.stashed", since: String(T0 + 60 * MIN), until: String(T0 + 120 * MIN) },
  { type: "fiber.started,chat.recovery.detected", agentClass: "SupportAgent", agentName: "ev-5" },
];

async function readAll(store: Store) {
  const out: Record<string, unknown> = {};
  for (const q of QUERIES) for (const limit of [1, 4, 50]) out[`${JSON.stringify(q)}/${limit}`] = await pages(store, q, limit);
  return out;
}

it("a store of two partitions lists the same events on the same pages as one database", { timeout: patient(120_000) }, async () => {
  const ds = deliveries();
  const parts = new Set(ds.map((d) => partitionOf(d.events[0]!.source.agentClass, d.events[0]!.source.agentName, 2)));
  expect([...parts].sort()).toEqual([0, 1]);
  const ingestAll = async (store: Store) => {
    for (const [k, d] of ds.entries())
      await ingestIntoStore(
        store,
        d.events.map((body, i) => ({ id: `me-${k}-${i}`, body })),
        { now: d.now },
      );
  };

  await empty(env.DB);
  await empty(P1);
  await ingestAll(singleStore(env.DB));
  const single = await readAll(singleStore(env.DB));
  await empty(env.DB);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  await ingestAll(two);
  const merged = await readAll(two);

  // Not vacuous: the lists hold many events over many pages, from agents of both partitions.
  const first = single[`${JSON.stringify(QUERIES[0])}/4`] as string[][];
  expect(first.flat().length).toBeGreaterThan(30);
  expect(first.length).toBeGreaterThan(8);
  expect((single[`${JSON.stringify(QUERIES[3])}/50`] as string[][]).flat().length).toBeGreaterThan(3);
  for (const key of Object.keys(single)) expect(merged[key], key).toEqual(single[key]);
  await empty(env.DB);
  await empty(P1);
});
