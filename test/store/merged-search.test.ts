import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { partitionOf, type Store, singleStore } from "../../src/store/partitions";
import { searchIn } from "../../src/store/read-models/search";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { patient } from "../patience";
import { empty } from "./store-helpers";

/**
 * Search over a partitioned store (search.ts searchIn) against one database: the same fleet is ingested into a store
 * of one D1 database and into one of two, and every query (exact ids several agents share, ids only events carry,
 * trace ids, prefixes, agent names and "Class/name") must find the same matches in the same order.
 */

const P1 = env.DB_P1!;
const MIN = 60_000;
const NOW = Math.floor(Date.now() / MIN) * MIN - 5 * MIN;
const CLASSES = ["ProbeAgent", "SupportAgent"];
const TRACE = "0123456789abcdef0123456789abcdef";

/** 24 agents: ids shared across agents (so across partitions), ids only events carry, one trace through many agents. */
function fleet(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let a = 0; a < 24; a++) {
    const agentClass = CLASSES[Math.floor(a / 12)]!;
    // Each name is in both classes (the agent-name lookup finds several), and every agent is in one partition.
    const agentName = `srch-${a % 12}`;
    const add = (e: TelemetryEvent, i: number) => out.push({ ...e, time: NOW - 60 * MIN + a * 1000 + i * 10, source: { agentClass, agentName } });
    const fiberId = a % 4 === 0 ? "run-shared-0001" : `run-${a}-abcdef`;
    const requestId = a % 3 === 0 ? "req-shared-777" : `req-${a}`;
    add(
      makeEvent(
        "fiber.started",
        { fiberName: "etl" },
        { corr: { fiberId, requestId, ...(a % 5 === 0 ? { traceId: TRACE, spanId: "0123456789abcdef" } : {}) } },
      ),
      0,
    );
    const incidentId = a % 6 === 1 ? "inc-shared-42" : `inc-${a}-xyz`;
    add(makeEvent("chat.recovery.detected", { maxAttempts: 3, recoveryKind: "retry", attempt: 1 }, { corr: { incidentId, requestId: `rq-${a}` } }), 1);
    // An op id no projection holds (never ambiguous): only its event carries it, with the session it belongs to.
    add(makeEvent("op.started", { opKind: "tool.charge" }, { corr: { opId: a % 2 ? "op-only-events" : `op-${a}`, sessionName: `sess-${a % 7}` } }), 2);
    add(makeEvent("session.status_running", { turnSeq: 1 }, { corr: { sessionName: `sess-${a % 7}` } }), 3);
    if (a % 4 === 2)
      add(makeEvent("op.ambiguous", { opKind: "tool.charge", detail: "x" }, { corr: { opId: "op-amb-shared", sessionName: `sess-${a % 7}` } }), 4);
  }
  return out;
}

const QUERIES = [
  "run-shared-0001",
  "inc-shared-42",
  "req-shared-777",
  "op-only-events",
  "op-amb-shared",
  TRACE,
  "sess-3",
  "srch-5",
  "SupportAgent/srch-5",
  "ProbeAgent/srch-4",
  "run-shared",
  "inc-shared",
  "inc-1",
  "sess-",
  "nothing-at-all-here",
];

async function readAll(store: Store) {
  const out: Record<string, unknown> = {};
  for (const q of QUERIES) {
    const { rowsRead: _, ...r } = await searchIn(store, q);
    out[q] = r;
  }
  return out;
}

it("a store of two partitions finds exactly what one database finds, in the same order", { timeout: patient(120_000) }, async () => {
  const events = fleet();
  const msgs = () => events.map((body, i) => ({ id: `ms-${i}`, body }));
  const parts = new Set(events.map((e) => partitionOf(e.source.agentClass, e.source.agentName, 2)));
  expect([...parts].sort()).toEqual([0, 1]);

  await empty(env.DB);
  await empty(P1);
  expect((await ingestIntoStore(singleStore(env.DB), msgs(), { now: NOW })).stored).toBe(events.length);
  const single = await readAll(singleStore(env.DB));

  await empty(env.DB);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  expect((await ingestIntoStore(two, msgs(), { now: NOW })).stored).toBe(events.length);
  const merged = await readAll(two);

  // Not vacuous: shared ids match agents of both partitions, through ids, events and prefixes.
  type R = { matches: { agentClass: string; agentName: string; via: { by: string } }[]; prefix: boolean };
  const spread = (q: string) => new Set((single[q] as R).matches.map((m) => partitionOf(m.agentClass, m.agentName, 2))).size;
  for (const q of ["run-shared-0001", "inc-shared-42", "req-shared-777", "op-only-events", TRACE, "srch-5", "run-shared"]) expect(spread(q), q).toBe(2);
  expect((single["op-only-events"] as R).matches.every((m) => m.via.by === "event")).toBe(true);
  expect((single["run-shared"] as R).prefix).toBe(true);
  expect((single["nothing-at-all-here"] as R).matches).toEqual([]);

  for (const q of QUERIES) expect(merged[q], q).toEqual(single[q]);
  await empty(env.DB);
  await empty(P1);
});
