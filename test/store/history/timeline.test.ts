import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { HOUR_MS } from "../../../src/store/history/layout";
import { historyTimelinePage, type TimelineKey } from "../../../src/store/history/timeline";
import { writeHistory } from "../../../worker/ingest/history";
import { makeEvent } from "../../fixtures/events";

const counts = { shards: 4 };
const bucket = () => env.HISTORY!;
const agent = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });
/** A time in a fixed old day of its own, so these objects share hours with no other test's. */
const at = (hours: number, ms = 0) => Date.UTC(2026, 8, 14) + hours * HOUR_MS + ms;
const write = (events: TelemetryEvent[]) => writeHistory(bucket(), events, { shards: 4, receivedAt: Date.now() });

/** Every page of one agent's timeline, following `next`, and the pages' sizes. */
async function walk(agentName: string, dir: "ASC" | "DESC", limit: number, match: (e: { fiberId: string | null }) => boolean, maxHours?: number) {
  const ids: string[] = [];
  const sizes: number[] = [];
  let after: TimelineKey | null = null;
  for (let i = 0; i < 40; i++) {
    const r = await historyTimelinePage(
      bucket(),
      counts,
      { agent: agent(agentName), match, dir, from: at(0), to: at(6), after, limit },
      maxHours ? { maxHours } : undefined,
    );
    ids.push(...r.events.map((e) => e.id));
    sizes.push(r.events.length);
    if (!r.next) return { ids, sizes };
    after = r.next;
  }
  throw new Error("no end within 40 pages");
}

describe("historyTimelinePage (a keyset page of one agent's timeline from R2)", () => {
  it("lists every event of the timeline once, in order, page after page, in either direction", async () => {
    const a = `tl-walk-${crypto.randomUUID()}`;
    // Seven events of run f1 across three hours, in four objects, with another run's events among them.
    const f1 = [0, 1, 2, 3, 4, 5, 6].map((i) =>
      makeEvent("session.status_idle", {}, { agentName: a, time: at(Math.floor(i / 3), i * 1000), corr: { fiberId: "f1" } }),
    );
    const f2 = [0, 1].map((i) => makeEvent("session.status_idle", {}, { agentName: a, time: at(i, 500), corr: { fiberId: "f2" } }));
    await write([f1[0]!, f1[1]!, f2[0]!]);
    await write([f1[2]!]);
    await write([f1[3]!, f1[4]!, f1[5]!, f2[1]!]);
    await write([f1[6]!]);
    const run = (e: { fiberId: string | null }) => e.fiberId === "f1";

    const asc = await walk(a, "ASC", 3, run);
    expect(asc.ids).toEqual(f1.map((e) => e.id));
    expect(asc.sizes.every((n) => n <= 3)).toBe(true);
    const desc = await walk(a, "DESC", 2, run);
    expect(desc.ids).toEqual([...f1].reverse().map((e) => e.id));
  });

  it("goes on past the edge of what a limit let it read, so no event is skipped or listed twice", async () => {
    const a = `tl-edge-${crypto.randomUUID()}`;
    const evs = [0, 1, 2, 3, 4].map((h) => makeEvent("session.status_idle", {}, { agentName: a, time: at(h, 10) }));
    for (const e of evs) await write([e]);
    // Two hours per read: a page can stop at its hour limit with room left, and says where to go on.
    const first = await historyTimelinePage(
      bucket(),
      counts,
      { agent: agent(a), match: () => true, dir: "ASC", from: at(0), to: at(6), after: null, limit: 50 },
      { maxHours: 2 },
    );
    expect(first.events.map((e) => e.id)).toEqual(evs.slice(0, 2).map((e) => e.id));
    expect(first.scan).toMatchObject({ complete: false, stop: { limit: "hours" } });
    expect(first.next?.time).toBe(at(2) - 1);
    const all = await walk(a, "ASC", 50, () => true, 2);
    expect(all.ids).toEqual(evs.map((e) => e.id));
    const back = await walk(a, "DESC", 50, () => true, 2);
    expect(back.ids).toEqual([...evs].reverse().map((e) => e.id));
  });

  it("reads nothing for a window past what a date can name, instead of failing the page", async () => {
    const r = await historyTimelinePage(bucket(), counts, {
      agent: agent("tl-far"),
      match: () => true,
      dir: "ASC",
      from: Number.MAX_SAFE_INTEGER - 10,
      to: Number.MAX_SAFE_INTEGER,
      after: null,
      limit: 10,
    });
    expect(r).toMatchObject({ events: [], next: null, scan: { objectsFetched: 0 } });
  });
});
