import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { countIncidents, groupIncidents, INCIDENT_KINDS, type IncidentRow, listIncidents } from "../../src/store/read-models/incidents";
import { runRetention } from "../../src/store/retention";
import { walk } from "./store-helpers";

/**
 * No index holds an incident's first_seen alone: every incident (the unfiltered list, its counts and groupings,
 * retention's oldest-first walk) is incidents_kind merged over the kinds. These check each against SQL over the
 * whole table: every incident, in the list's order (ties across kinds included), a page reading about its size
 * plus one row per kind.
 */

const T0 = Date.UTC(2026, 9, 1);
const N = 300;
const STATUSES = ["open", "exhausted", "recovered", "failed"] as const;

beforeAll(async () => {
  // Kinds interleaved, and every two incidents share a first_seen (ties broken by id, then the agent).
  const rows = Array.from({ length: N }, (_, i) => ({
    id: `inc-${String(i).padStart(4, "0")}`,
    kind: INCIDENT_KINDS[i % INCIDENT_KINDS.length],
    cls: `C${i % 2}`,
    name: `a${i % 5}`,
    status: STATUSES[i % STATUSES.length],
    reason: i % 7 === 0 ? null : `r${i % 3}`,
    t: T0 + Math.floor(i / 2) * 1000,
  }));
  await env.DB.prepare(
    `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, reason, first_seen, last_seen)
     SELECT j ->> '$.id', j ->> '$.kind', j ->> '$.cls', j ->> '$.name', j ->> '$.status', j ->> '$.t', 'ev-' || (j ->> '$.id'), 1,
       j ->> '$.reason', j ->> '$.t', j ->> '$.t'
     FROM (SELECT value AS j FROM json_each(?1))`,
  )
    .bind(JSON.stringify(rows))
    .run();
});

/** The list's order from SQL over the whole table (no index), as the ground truth. */
async function expected(where: string, ...binds: unknown[]): Promise<string[]> {
  const r = await env.DB.prepare(
    `SELECT incident_id AS k FROM incidents NOT INDEXED WHERE ${where} ORDER BY first_seen DESC, incident_id DESC, agent_class DESC, agent_name DESC`,
  )
    .bind(...binds)
    .all<{ k: string }>();
  return r.results.map((x) => x.k);
}

const keyOf = (i: IncidentRow) => i.incidentId;

describe("every incident, every kind (no kind, status, reason or agent filter)", () => {
  it("lists every incident across the kinds in the list's order, page after page", async () => {
    const want = await expected("1");
    expect(want).toHaveLength(N);
    expect((await walk((p) => listIncidents(env.DB, {}, p), 17, keyOf)).map(keyOf)).toEqual(want);
  });

  it("reads about a page plus one row per kind, however deep the page", async () => {
    const first = await listIncidents(env.DB, {}, { limit: 25 });
    expect(first.rowsRead).toBeLessThanOrEqual(25 + 1 + INCIDENT_KINDS.length);
    const second = await listIncidents(env.DB, {}, { limit: 25, cursor: first.next });
    expect(second.rowsRead).toBeLessThanOrEqual(25 + 1 + INCIDENT_KINDS.length);
    expect([...first.items, ...second.items].map(keyOf)).toEqual((await expected("1")).slice(0, 50));
  });

  it("keeps since / until and a per-row test (no reason) across the kinds", async () => {
    const [since, until] = [T0 + 20_000, T0 + 100_000];
    const want = await expected("first_seen BETWEEN ?1 AND ?2", since, until);
    expect((await walk((p) => listIncidents(env.DB, { since, until }, p), 9, keyOf)).map(keyOf)).toEqual(want);
    const none = await expected("(reason IS NULL OR reason = '')");
    expect((await walk((p) => listIncidents(env.DB, { noReason: true }, p), 8, keyOf)).map(keyOf)).toEqual(none);
  });

  it("counts what the list lists, capped, with and without a per-row test", async () => {
    const [since, until] = [T0 + 20_000, T0 + 100_000];
    const inWindow = (await expected("first_seen BETWEEN ?1 AND ?2", since, until)).length;
    expect(await countIncidents(env.DB, { since, until })).toMatchObject({ n: inWindow, capped: false });
    expect(await countIncidents(env.DB, {}, 100)).toMatchObject({ n: 100, capped: true });
    const none = (await expected("(reason IS NULL OR reason = '')")).length;
    expect(await countIncidents(env.DB, { noReason: true })).toMatchObject({ n: none, capped: false });
  });

  it("groups every incident of every kind", async () => {
    const g = await groupIncidents(env.DB, {}, "kind");
    expect(g.scanned).toBe(N);
    expect(Object.fromEntries(g.groups.map((x) => [x.key, x.n]))).toEqual(Object.fromEntries(INCIDENT_KINDS.map((k) => [k, N / INCIDENT_KINDS.length])));
    const byReason = await groupIncidents(env.DB, { noReason: false }, "reason");
    const want = await env.DB.prepare("SELECT reason AS k, COUNT(*) AS n FROM incidents WHERE reason IS NOT NULL GROUP BY reason").all<{
      k: string;
      n: number;
    }>();
    expect(Object.fromEntries(byReason.groups.map((x) => [x.key, x.n]))).toEqual(Object.fromEntries(want.results.map((x) => [x.k, x.n])));
  });

  it("retention deletes closed incidents of every kind after the hot window and keeps open ones", async () => {
    // The fixture's incidents are from 2026-10-01: run retention as of 3 days later, with a long retention period.
    const now = T0 + 3 * 86_400_000;
    await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48, now });
    const left = await env.DB.prepare("SELECT kind, status, COUNT(*) AS n FROM incidents GROUP BY kind, status ORDER BY kind, status").all<{
      kind: string;
      status: string;
      n: number;
    }>();
    expect(left.results.map((r) => r.status)).toEqual(INCIDENT_KINDS.map(() => "open"));
    expect(left.results.map((r) => r.kind).sort()).toEqual([...INCIDENT_KINDS].sort());
    expect(left.results.reduce((a, r) => a + r.n, 0)).toBe(N / STATUSES.length);
  });
});
