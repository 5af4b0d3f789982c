import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequest, type EventRow, listEvents } from "../../src/store/read-models";
import { makeEvent } from "../fixtures/events";
import { ingest, rejection, walk } from "./store-helpers";

// The events list: what the overview's chart buckets and rollup figures link to. Events of one or several types
// in a time window (inclusive), newest first, keyset-paged; several types merge one index range each.

const T0 = Date.UTC(2026, 10, 3, 12);
const S = 1000;
const types = ["chat.recovery.attempt", "fiber.recovery.attempt", "chat.context.compacted"] as const;

beforeAll(async () => {
  const events = [];
  for (let i = 0; i < 60; i++) {
    const agentName = `ev-${i % 3}`;
    const time = T0 + Math.floor(i / 2) * S; // pairs share a time: ties are ordered by id
    if (i % 3 === 0)
      events.push(
        makeEvent("chat.recovery.attempt", { attempt: 1, maxAttempts: 3, recoveryKind: "retry" }, { agentName, time, corr: { incidentId: `c-${i}` } }),
      );
    else if (i % 3 === 1)
      events.push(
        makeEvent(
          "fiber.recovery.attempt",
          { fiberName: "etl" },
          { agentName, time, corr: { fiberId: `f-${i}`, incidentId: `fiber:ProbeAgent/${agentName}/f-${i}` } },
        ),
      );
    else events.push(makeEvent("chat.context.compacted", { mode: "proactive", shortened: true }, { agentName, time }));
  }
  events.push(makeEvent("model.usage", { inputTokens: 10, outputTokens: 2 }, { agentName: "ev-0", time: T0, corr: { incidentId: "c-0" } }));
  events.push(makeEvent("model.usage", { inputTokens: 99, outputTokens: 9 }, { agentName: "ev-0", time: T0 + S }));
  await ingest(events);
});

/** The stored events the filters should give, newest first. */
async function expected(typesIn: readonly string[], since: number, until: number, agentName?: string): Promise<string[]> {
  const r = await env.DB.prepare(
    `SELECT id FROM events WHERE type IN (${typesIn.map(() => "?").join(", ")}) AND time >= ? AND time <= ?${agentName ? " AND agent_name = ?" : ""} ORDER BY time DESC, id DESC`,
  )
    .bind(...typesIn, since, until, ...(agentName ? [agentName] : []))
    .all<{ id: string }>();
  return r.results.map((x) => x.id);
}

describe("listEvents", () => {
  it("lists one type, or several merged, in a window, newest first, across pages", async () => {
    const since = T0 + 5 * S;
    const until = T0 + 24 * S;
    for (const t of [[types[0]], [types[0], types[1]], [...types]]) {
      const got = await walk(
        (p) => listEvents(env.DB, { type: t.join(","), since, until }, p),
        4,
        (e: EventRow) => e.id,
      );
      expect(
        got.map((e) => e.id),
        t.join(","),
      ).toEqual(await expected(t, since, until));
      expect(got.length).toBeGreaterThan(0);
    }
  });

  it("filters by agent (class and name together) and by whether the event carried an incident", async () => {
    const got = await walk(
      (p) => listEvents(env.DB, { type: types.join(","), agentClass: "ProbeAgent", agentName: "ev-1", since: T0, until: T0 + 60 * S }, p),
      5,
      (e: EventRow) => e.id,
    );
    expect(got.map((e) => e.id)).toEqual(await expected(types, T0, T0 + 60 * S, "ev-1"));
    const usage = await listEvents(env.DB, { type: "model.usage", withIncident: "true" });
    expect(usage.items.map((e) => (e.payload as { inputTokens: number }).inputTokens)).toEqual([10]);
  });

  it("refuses what it cannot serve with a sentence", async () => {
    for (const bad of [
      {},
      { type: "nope" },
      { type: "op.ambiguous", agentClass: "ProbeAgent" },
      { type: "model.usage,op.ambiguous", withIncident: "true" },
      { type: "op.ambiguous", since: T0 + S, until: T0 },
    ]) {
      const e = await rejection(listEvents(env.DB, bad));
      expect(e, JSON.stringify(bad)).toBeInstanceOf(BadRequest);
    }
  });
});
