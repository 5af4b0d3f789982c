import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { assertRecordedPartitions, PartitionCountMismatch, partitionOf, type Store, singleStore } from "../../src/store/partitions";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { chatIncidentLife, fiberLife } from "../fixtures/events";

const P1 = env.DB_P1!;
const two = (): Store => ({ home: env.DB, parts: [env.DB, P1] });

/** A fleet over two classes: each agent runs a fiber and has an exhausted chat incident. */
function fleet(agents: number, prefix: string): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let a = 0; a < agents; a++) {
    const agentClass = a % 2 ? "ProbeAgent" : "SupportAgent";
    const name = `${prefix}-${a}`;
    for (const e of [...fiberLife(`f-${a}`, name), ...chatIncidentLife(`inc-${a}`, name)]) out.push({ ...e, source: { agentClass, agentName: name } });
  }
  return out;
}

const messages = (events: unknown[]) => events.map((body, i) => ({ id: `pm-${i}-${crypto.randomUUID()}`, body }));
const latest = (events: TelemetryEvent[]) => Math.max(...events.map((e) => e.time)) + 1000;

/** The agents (class/name) of one test's fleet that a database holds. */
async function agentsIn(db: D1Database, prefix: string): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT agent_class || '/' || agent_name AS k FROM agents WHERE agent_name LIKE ? ORDER BY k")
    .bind(`${prefix}-%`)
    .all<{ k: string }>();
  return results.map((r) => r.k);
}

describe("partitionOf", () => {
  it("is stable: the same agent always lands in the same partition, and one partition means partition 0", () => {
    for (let i = 0; i < 200; i++) {
      const name = `agent-${i}`;
      expect(partitionOf("ProbeAgent", name, 4)).toBe(partitionOf("ProbeAgent", name, 4));
      expect(partitionOf("ProbeAgent", name, 1)).toBe(0);
    }
    // Where data lives depends on it: a change to the hash would strand every stored agent (values pinned once).
    expect([
      partitionOf("SessionAgent", "alice", 2),
      partitionOf("SessionAgent", "bob", 2),
      partitionOf("ChatAgent", "alice", 3),
      partitionOf("SessionAgent", "carol", 4),
    ]).toEqual([0, 1, 0, 1]);
  });

  it("is balanced: 10,000 agents split within 3% of even over 2, 4 and 8 partitions, and class matters", () => {
    for (const n of [2, 4, 8]) {
      const counts = new Array<number>(n).fill(0);
      for (let i = 0; i < 10_000; i++) counts[partitionOf("SessionAgent", `user-${i}`, n)]!++;
      for (const c of counts) expect(Math.abs(c - 10_000 / n) / (10_000 / n)).toBeLessThan(0.03);
    }
    const moved = Array.from({ length: 1000 }, (_, i) => partitionOf("A", `x${i}`, 2) !== partitionOf("B", `x${i}`, 2)).filter(Boolean).length;
    expect(moved).toBeGreaterThan(400);
  });
});

describe("ingest into two partitions", () => {
  it("puts each agent's rows in its own partition only, and dead letters in the home database", async () => {
    const events = fleet(24, "two");
    const r = await ingestIntoStore(two(), [...messages(events), { id: "pm-bad", body: "not json" }], { now: latest(events) });
    expect(r.stored).toBe(events.length);
    expect(r.deadLettered).toBe(1);
    const names = [...new Set(events.map((e) => `${e.source.agentClass}/${e.source.agentName}`))].sort();
    const want = (p: number) => names.filter((k) => partitionOf(k.split("/")[0]!, k.split("/")[1]!, 2) === p);
    expect(want(0).length).toBeGreaterThan(0);
    expect(want(1).length).toBeGreaterThan(0);
    expect(await agentsIn(env.DB, "two")).toEqual(want(0));
    expect(await agentsIn(P1, "two")).toEqual(want(1));
    for (const [db, p] of [
      [env.DB, 0],
      [P1, 1],
    ] as const) {
      for (const table of ["runs", "incidents", "event_segments"]) {
        const { results } = await db.prepare(`SELECT DISTINCT agent_class || '/' || agent_name AS k FROM ${table} ORDER BY k`).all<{ k: string }>();
        expect(
          results.map((x) => x.k),
          `${table} in partition ${p}`,
        ).toEqual(want(p));
      }
    }
    const dead = async (db: D1Database) => Number((await db.prepare("SELECT count(*) AS n FROM dead_letters").first<{ n: number }>())!.n);
    expect([await dead(env.DB), await dead(P1)]).toEqual([1, 0]);

    // The same messages again: stored once (each partition dedupes its own agents' events).
    const before = [await agentsIn(env.DB, "two"), await agentsIn(P1, "two")];
    const segs = async (db: D1Database) => Number((await db.prepare("SELECT total(n) AS n FROM event_segments").first<{ n: number }>())!.n);
    const n0 = [await segs(env.DB), await segs(P1)];
    await ingestIntoStore(two(), messages(events), { now: latest(events) });
    expect([await agentsIn(env.DB, "two"), await agentsIn(P1, "two")]).toEqual(before);
    expect([await segs(env.DB), await segs(P1)]).toEqual(n0);
    expect(n0[0]! + n0[1]!).toBe(events.length);
  });

  it("with one partition writes exactly what ingestBatch on that database writes", async () => {
    const events = fleet(6, "one");
    const r = await ingestIntoStore(singleStore(P1), messages(events), { now: latest(events) });
    expect(r.stored).toBe(events.length);
    expect(await agentsIn(P1, "one")).toEqual([...new Set(events.map((e) => `${e.source.agentClass}/${e.source.agentName}`))].sort());
  });
});

describe("the recorded partition count", () => {
  /** The home database under a new identity, so the per-isolate check runs again. */
  const fresh = (): D1Database =>
    ({ prepare: (q: string) => env.DB.prepare(q), batch: (s: D1PreparedStatement[]) => env.DB.batch(s) }) as unknown as D1Database;

  it("is recorded on first use, and another count is refused until re-sharded", async () => {
    await env.DB.prepare("DELETE FROM store_settings").run();
    const home = fresh();
    await assertRecordedPartitions({ home, parts: [home, P1] });
    expect((await env.DB.prepare("SELECT value FROM store_settings WHERE key = 'partitions'").first<{ value: string }>())?.value).toBe("2");
    const again = fresh();
    const e = await assertRecordedPartitions(singleStore(again)).then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(PartitionCountMismatch);
    expect(e).toMatchObject({ recorded: 2, configured: 1 });
    await env.DB.prepare("DELETE FROM store_settings").run();
  });
});
