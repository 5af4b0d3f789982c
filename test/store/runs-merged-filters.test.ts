import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { COMPLETED_SCAN_CAP, listRuns, MAX_NAME_CLASSES, RUN_KINDS, type Run } from "../../src/store/read-models/runs";
import { walk } from "./store-helpers";

/**
 * An outcome filter without a kind, no filter at all, and an agent name without a class have no runs index of their
 * own (a run would write one more entry each, and the outcome's another each time it moves): they are
 * runs_kind_outcome and runs_kind merged over the kinds, and runs_agent merged over the classes the agent registry
 * has the name under. "completed" is in no outcome index (runs_kind_outcome is partial): runs_kind merged over the
 * kinds, the outcome tested per row. These check that each
 * merge is the list it replaces: every matching run, in the list's order (ties across arms included), each page
 * reading about its size plus one row per arm.
 */

const T0 = Date.UTC(2026, 9, 1);
const N = 400;
const OUTCOMES = ["failed", "completed", null, "recovered", "failed"] as const;

beforeAll(async () => {
  // Kinds interleaved, and every two runs share a first_seen (ties broken by fiber id, then the agent).
  const rows = Array.from({ length: N }, (_, i) => ({
    id: `run-${String(i).padStart(4, "0")}`,
    kind: RUN_KINDS[i % RUN_KINDS.length],
    cls: `C${i % 3}`,
    name: `a${i % 7}`,
    outcome: OUTCOMES[i % OUTCOMES.length],
    t: T0 + Math.floor(i / 2) * 1000,
  }));
  await env.DB.prepare(
    `INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, outcome_at, outcome_event_id, first_seen, last_seen)
     SELECT j ->> '$.id', j ->> '$.cls', j ->> '$.name', j ->> '$.kind', 'job', j ->> '$.outcome',
       CASE WHEN j ->> '$.outcome' IS NULL THEN NULL ELSE j ->> '$.t' END, CASE WHEN j ->> '$.outcome' IS NULL THEN NULL ELSE 'ev-' || (j ->> '$.id') END,
       j ->> '$.t', j ->> '$.t'
     FROM (SELECT value AS j FROM json_each(?1))`,
  )
    .bind(JSON.stringify(rows))
    .run();
  // The registry, as ingest keeps it (every run's agent), and one agent with no runs.
  await env.DB.prepare(
    `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT DISTINCT agent_class, agent_name, ${T0}, ${T0} FROM runs
     UNION ALL SELECT 'C9', 'idle', ${T0}, ${T0}`,
  ).run();
});

/** The list's order from SQL over the whole table (no index), as the ground truth. */
async function expected(where: string, ...binds: unknown[]): Promise<string[]> {
  const r = await env.DB.prepare(
    `SELECT fiber_id || '/' || agent_class || '/' || agent_name AS k FROM runs NOT INDEXED WHERE ${where} ORDER BY first_seen DESC, fiber_id DESC, agent_class DESC, agent_name DESC`,
  )
    .bind(...binds)
    .all<{ k: string }>();
  return r.results.map((x) => x.k);
}

const keyOf = (r: Run) => `${r.fiberId}/${r.agentClass}/${r.agentName}`;

describe("runs of one outcome, every kind", () => {
  it("lists every run of the outcome across kinds in the list's order, page after page", async () => {
    const want = await expected("outcome = 'failed'");
    expect(
      new Set((await env.DB.prepare("SELECT DISTINCT kind FROM runs WHERE outcome = 'failed'").all<{ kind: string }>()).results.map((r) => r.kind)).size,
    ).toBe(RUN_KINDS.length);
    const got = await walk((p) => listRuns(env.DB, { outcome: "failed" }, p), 7, keyOf);
    expect(got.map(keyOf)).toEqual(want);
    expect(got.every((r) => r.status === "failed")).toBe(true);
  });

  it("lists running runs (no outcome) of every kind the same way", async () => {
    const want = await expected("outcome IS NULL");
    const got = await walk((p) => listRuns(env.DB, { outcome: "running" }, p), 11, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });

  it("reads about a page plus one row per kind, however deep the page", async () => {
    const first = await listRuns(env.DB, { outcome: "failed" }, { limit: 20 });
    expect(first.items).toHaveLength(20);
    expect(first.rowsRead).toBeLessThanOrEqual(20 + 1 + RUN_KINDS.length);
    const second = await listRuns(env.DB, { outcome: "failed" }, { limit: 20, cursor: first.next });
    expect(second.items).toHaveLength(20);
    expect(second.rowsRead).toBeLessThanOrEqual(20 + 1 + RUN_KINDS.length);
    expect([...first.items, ...second.items].map(keyOf)).toEqual((await expected("outcome = 'failed'")).slice(0, 40));
  });

  it("lists completed runs, which no outcome index holds, by their kinds tested row by row, in the list's order", async () => {
    const want = await expected("outcome = 'completed'");
    expect(want.length).toBeGreaterThan(50);
    const got = await walk((p) => listRuns(env.DB, { outcome: "completed" }, p), 9, keyOf);
    expect(got.map(keyOf)).toEqual(want);
    expect(got.every((r) => r.status === "completed")).toBe(true);
    const kindOnly = await walk((p) => listRuns(env.DB, { outcome: "completed", kind: "task" }, p), 4, keyOf);
    expect(kindOnly.map(keyOf)).toEqual(await expected("outcome = 'completed' AND kind = 'task'"));
  });

  it("reads at most COMPLETED_SCAN_CAP rows for a completed page, and goes on from the last row it read when it finds fewer", async () => {
    // Completed runs are a fifth of these: a page of 50 finds about 11 in the rows it may read, and says there is more.
    const want = await expected("outcome = 'completed'");
    const first = await listRuns(env.DB, { outcome: "completed" }, { limit: 50 });
    expect(first.rowsRead).toBeLessThanOrEqual(COMPLETED_SCAN_CAP);
    expect(first.items.length).toBeGreaterThan(5);
    expect(first.items.length).toBeLessThan(50);
    expect(first.items.map(keyOf)).toEqual(want.slice(0, first.items.length));
    expect(first.next).not.toBeNull();
    const second = await listRuns(env.DB, { outcome: "completed" }, { limit: 50, cursor: first.next });
    expect(second.rowsRead).toBeLessThanOrEqual(COMPLETED_SCAN_CAP);
    expect([...first.items, ...second.items].map(keyOf)).toEqual(want.slice(0, first.items.length + second.items.length));
    // A page that finds more than its size stops at its size, and the next page starts right after it.
    const small = await listRuns(env.DB, { outcome: "completed" }, { limit: 3 });
    expect(small.items.map(keyOf)).toEqual(want.slice(0, 3));
    const after = await listRuns(env.DB, { outcome: "completed" }, { limit: 3, cursor: small.next });
    expect(after.items.map(keyOf)).toEqual(want.slice(3, 6));
    // With the agent's name (planned by the registry's classes, read first), the page still reads at most the cap.
    const named = await listRuns(env.DB, { outcome: "completed", agentName: "a1" }, { limit: 50 });
    expect(named.rowsRead).toBeLessThanOrEqual(COMPLETED_SCAN_CAP);
    expect((await walk((p) => listRuns(env.DB, { outcome: "completed", agentName: "a1" }, p), 50, keyOf)).map(keyOf)).toEqual(
      await expected("outcome = 'completed' AND agent_name = 'a1'"),
    );
  });

  it("applies a second filter (the class) to the merged runs, within the scan budget", async () => {
    const want = await expected("outcome = 'completed' AND agent_class = 'C1'");
    const got = await walk((p) => listRuns(env.DB, { outcome: "completed", agentClass: "C1" }, p), 5, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });

  it("keeps since / until on first_seen across the kinds", async () => {
    const [since, until] = [T0 + 40_000, T0 + 120_000];
    const want = await expected("outcome = 'failed' AND first_seen BETWEEN ?1 AND ?2", since, until);
    const got = await walk((p) => listRuns(env.DB, { outcome: "failed", since, until }, p), 6, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });
});

describe("every run, every kind (no filter)", () => {
  it("lists every run across the kinds in the list's order, page after page", async () => {
    const want = await expected("1");
    expect(want).toHaveLength(N);
    expect((await walk((p) => listRuns(env.DB, {}, p), 13, keyOf)).map(keyOf)).toEqual(want);
  });

  it("reads about a page plus one row per kind, however deep the page", async () => {
    const first = await listRuns(env.DB, {}, { limit: 30 });
    expect(first.rowsRead).toBeLessThanOrEqual(30 + 1 + RUN_KINDS.length);
    const second = await listRuns(env.DB, {}, { limit: 30, cursor: first.next });
    expect(second.rowsRead).toBeLessThanOrEqual(30 + 1 + RUN_KINDS.length);
    expect([...first.items, ...second.items].map(keyOf)).toEqual((await expected("1")).slice(0, 60));
  });

  it("keeps since / until and the confirmed filter across the kinds", async () => {
    const [since, until] = [T0 + 30_000, T0 + 90_000];
    const want = await expected("first_seen BETWEEN ?1 AND ?2", since, until);
    expect((await walk((p) => listRuns(env.DB, { since, until }, p), 9, keyOf)).map(keyOf)).toEqual(want);
    // A reconciliation confirmed every third running run (of every kind) after its last event.
    await env.DB.prepare("UPDATE runs SET confirmed_at = last_seen + 1 WHERE outcome IS NULL AND CAST(substr(fiber_id, 5) AS INTEGER) % 3 = 0").run();
    const confirmed = await expected("outcome IS NULL AND confirmed_at >= last_seen");
    expect(confirmed.length).toBeGreaterThan(RUN_KINDS.length);
    expect((await walk((p) => listRuns(env.DB, { confirmed: true }, p), 7, keyOf)).map(keyOf)).toEqual(confirmed);
    const rest = await expected("NOT (outcome IS NULL AND confirmed_at IS NOT NULL AND confirmed_at >= last_seen)");
    expect(rest.length + confirmed.length).toBe(N);
    expect((await walk((p) => listRuns(env.DB, { confirmed: false }, p), 50, keyOf)).map(keyOf)).toEqual(rest);
  });
});

describe("runs of one agent name, every class", () => {
  it("lists the name's runs in every class it is registered under, in the list's order", async () => {
    const want = await expected("agent_name = 'a3'");
    expect(new Set((await env.DB.prepare("SELECT DISTINCT agent_class FROM runs WHERE agent_name = 'a3'").all()).results).size).toBe(3);
    const got = await walk((p) => listRuns(env.DB, { agentName: "a3" }, p), 4, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });

  it("reads the registry's classes plus about a page plus one row per class", async () => {
    const first = await listRuns(env.DB, { agentName: "a3" }, { limit: 10 });
    expect(first.items).toHaveLength(10);
    expect(first.rowsRead).toBeLessThanOrEqual(3 + 10 + 1 + 3);
  });

  it("applies the other filters to the merged runs", async () => {
    const want = await expected("agent_name = 'a5' AND outcome = 'failed'");
    const got = await walk((p) => listRuns(env.DB, { agentName: "a5", outcome: "failed" }, p), 3, keyOf);
    expect(got.map(keyOf)).toEqual(want);
  });

  it("finds a name registered under more classes than it merges by a bounded scan, with every filter D1 binds", async () => {
    const classes = Array.from({ length: MAX_NAME_CLASSES + 1 }, (_, i) => `Wide${i}`);
    await env.DB.prepare(`INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT value, 'wide', ${T0}, ${T0} FROM json_each(?1)`)
      .bind(JSON.stringify(classes))
      .run();
    await env.DB.prepare(
      `INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, outcome_at, outcome_event_id, first_seen, last_seen)
       SELECT 'w-' || key, value, 'wide', 'task', 'job', 'failed', ${T0}, 'ev-w-' || key, ${T0} + key * 1500, ${T0} + key * 1500 FROM json_each(?1)`,
    )
      .bind(JSON.stringify(classes))
      .run();
    const want = await expected("agent_name = 'wide'");
    expect(want).toHaveLength(classes.length);
    expect((await walk((p) => listRuns(env.DB, { agentName: "wide" }, p), 4, keyOf)).map(keyOf)).toEqual(want);
    // A name under as many classes as it merges, with every filter that binds a value, through pages (a cursor).
    await env.DB.prepare(
      `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT value, 'a1', ${T0}, ${T0} FROM json_each(?1) WHERE key < ?2`,
    )
      .bind(JSON.stringify(classes), MAX_NAME_CLASSES - 3)
      .run();
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM agents WHERE agent_name = 'a1'").first<{ n: number }>())!.n).toBe(MAX_NAME_CLASSES);
    const filters = { agentName: "a1", outcome: "failed", kind: "task", since: T0, until: T0 + 500_000, confirmed: false } as const;
    const narrow = await expected("agent_name = 'a1' AND outcome = 'failed' AND kind = 'task' AND first_seen BETWEEN ?1 AND ?2", filters.since, filters.until);
    expect(narrow.length).toBeGreaterThan(2);
    expect((await walk((p) => listRuns(env.DB, filters, p), 2, keyOf)).map(keyOf)).toEqual(narrow);
  });

  it("is empty for a name with no runs or no agent, and still refuses a bad cursor", async () => {
    expect((await listRuns(env.DB, { agentName: "idle" })).items).toEqual([]);
    const none = await listRuns(env.DB, { agentName: "nobody" });
    expect(none).toMatchObject({ items: [], next: null });
    await expect(listRuns(env.DB, { agentName: "nobody" }, { cursor: "not-a-cursor" })).rejects.toThrow(/cursor/);
  });
});
