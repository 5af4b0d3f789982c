import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { countIncidents, type IncidentRow, listIncidents } from "../../src/store/read-models/incidents";
import { MAX_NAME_CLASSES } from "../../src/store/read-models/name-classes";
import { walk } from "./store-helpers";

/**
 * An agent name without a class has no incidents index of its own (every incident would write one more entry): it
 * is incidents_agent merged over the classes the agent registry has the name under. These check that the merge is
 * the list it replaces (every matching incident, in the list's order, ties across classes included), that a page
 * reads about its size plus one row per class, and that the count counts the same incidents.
 */

const T0 = Date.UTC(2026, 9, 2);
const N = 240;
const P = `byname-${crypto.randomUUID().slice(0, 8)}`;
const cls = (i: number) => `${P}-C${i % 3}`;
const name = (i: number) => `${P}-a${i % 5}`;

beforeAll(async () => {
  // Every two incidents share a first_seen (ties broken by incident id, then the agent).
  const rows = Array.from({ length: N }, (_, i) => ({
    id: `inc-${String(i).padStart(4, "0")}`,
    cls: cls(i),
    name: name(i),
    status: i % 4 === 0 ? "open" : "exhausted",
    t: T0 + Math.floor(i / 2) * 1000,
  }));
  await env.DB.prepare(
    `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen)
     SELECT j ->> '$.id', 'chat', j ->> '$.cls', j ->> '$.name', j ->> '$.status', j ->> '$.t', 'ev-' || (j ->> '$.id'), 1, j ->> '$.t', j ->> '$.t'
     FROM (SELECT value AS j FROM json_each(?1))`,
  )
    .bind(JSON.stringify(rows))
    .run();
  // The registry, as ingest keeps it (every incident's agent), and one agent with no incidents.
  await env.DB.prepare(
    `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT DISTINCT agent_class, agent_name, ${T0}, ${T0} FROM incidents WHERE agent_class LIKE ?1
     UNION ALL SELECT ?2, ?3, ${T0}, ${T0}`,
  )
    .bind(`${P}-%`, `${P}-C9`, `${P}-idle`)
    .run();
});

/** The list's order from SQL over the whole table (no index), as the ground truth. */
async function expected(where: string, ...binds: unknown[]): Promise<string[]> {
  const r = await env.DB.prepare(
    `SELECT incident_id || '/' || agent_class || '/' || agent_name AS k FROM incidents NOT INDEXED WHERE ${where}
     ORDER BY first_seen DESC, incident_id DESC, agent_class DESC, agent_name DESC`,
  )
    .bind(...binds)
    .all<{ k: string }>();
  return r.results.map((x) => x.k);
}

const keyOf = (r: IncidentRow) => `${r.incidentId}/${r.agentClass}/${r.agentName}`;

describe("incidents of one agent name, every class", () => {
  it("lists the name's incidents in every class it is registered under, in the list's order, page after page", async () => {
    const want = await expected("agent_name = ?1", name(3));
    const classes = await env.DB.prepare("SELECT COUNT(DISTINCT agent_class) AS n FROM incidents WHERE agent_name = ?1").bind(name(3)).first<{ n: number }>();
    expect(classes!.n).toBe(3);
    const got = await walk((p) => listIncidents(env.DB, { agentName: name(3) }, p), 4, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });

  it("reads the registry's classes plus about a page plus one row per class", async () => {
    const first = await listIncidents(env.DB, { agentName: name(2) }, { limit: 10 });
    expect(first.items).toHaveLength(10);
    expect(first.rowsRead).toBeLessThanOrEqual(3 + 10 + 1 + 3);
  });

  it("applies the other filters to the merged incidents, and counts what it lists", async () => {
    const filters = { agentName: name(4), status: "exhausted", since: T0 + 10_000, until: T0 + 90_000 } as const;
    const want = await expected("agent_name = ?1 AND status = 'exhausted' AND first_seen BETWEEN ?2 AND ?3", name(4), filters.since, filters.until);
    expect(want.length).toBeGreaterThan(5);
    expect((await walk((p) => listIncidents(env.DB, filters, p), 3, keyOf)).map(keyOf)).toEqual(want);
    expect(await countIncidents(env.DB, filters)).toMatchObject({ n: want.length, capped: false });
    expect(await countIncidents(env.DB, { agentName: name(4) })).toMatchObject({ n: (await expected("agent_name = ?1", name(4))).length, capped: false });
  });

  it("finds a name registered under more classes than it merges by a bounded scan", async () => {
    const wide = `${P}-wide`;
    const classes = Array.from({ length: MAX_NAME_CLASSES + 1 }, (_, i) => `${P}-W${i}`);
    await env.DB.prepare(`INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT value, ?2, ${T0}, ${T0} FROM json_each(?1)`)
      .bind(JSON.stringify(classes), wide)
      .run();
    await env.DB.prepare(
      `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen)
       SELECT 'w-' || key, 'fiber', value, ?2, 'open', ${T0}, 'ev-w-' || key, 0, ${T0} + key * 1500, ${T0} + key * 1500 FROM json_each(?1)`,
    )
      .bind(JSON.stringify(classes), wide)
      .run();
    const want = await expected("agent_name = ?1", wide);
    expect(want).toHaveLength(classes.length);
    expect((await walk((p) => listIncidents(env.DB, { agentName: wide }, p), 4, keyOf)).map(keyOf)).toEqual(want);
    expect((await countIncidents(env.DB, { agentName: wide })).n).toBe(classes.length);
  });

  it("is empty for a name with no incidents or no agent, and still refuses a bad cursor", async () => {
    expect((await listIncidents(env.DB, { agentName: `${P}-idle` })).items).toEqual([]);
    expect(await listIncidents(env.DB, { agentName: `${P}-nobody` })).toMatchObject({ items: [], next: null });
    expect((await countIncidents(env.DB, { agentName: `${P}-nobody` })).n).toBe(0);
    await expect(listIncidents(env.DB, { agentName: `${P}-nobody` }, { cursor: "not-a-cursor" })).rejects.toThrow(/cursor/);
  });
});
