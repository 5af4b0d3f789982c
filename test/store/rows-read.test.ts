import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listAgents } from "../../src/store/read-models/agents";
import { listAudit } from "../../src/store/read-models/audit";
import { listBackups } from "../../src/store/read-models/backups";
import { agentsWithGaps, countAgentsWithGaps } from "../../src/store/read-models/event-gaps";
import { listEvents } from "../../src/store/read-models/events";
import { COUNT_SCAN, countIncidents, GROUP_BOUND, groupIncidents, incidentTimeline, listIncidents } from "../../src/store/read-models/incidents";
import { listAmbiguousOps } from "../../src/store/read-models/ops";
import { eventSeries, overviewCounts, topReasons } from "../../src/store/read-models/overview";
import { type Page, type PageOptions, SCAN_BUDGET } from "../../src/store/read-models/paging";
import { listRuns, runEvents } from "../../src/store/read-models/runs";
import { SEGMENT_BUDGET } from "../../src/store/read-models/segments";
import { listSessions, sessionTimeline } from "../../src/store/read-models/sessions";
import { walk } from "./store-helpers";

/**
 * Every list reads O(page size) rows (D1's meta.rows_read) on a large store, on
 * its first page and on a page reached through 800 rows of cursors, for each
 * single filter. Tables are seeded with json_each INSERT … SELECT statements in
 * the shapes ingest writes.
 */

const T0 = Date.UTC(2026, 9, 1);
const N_EVENTS = 50_000;
const N = 20_000;
const NOW = T0 + 10_000 * 1000; // half the backups are expired
const ROLLUP_DAYS = 14;
const BUCKET = 300_000;

/** Runs `sql` with ?1 = a JSON array of 0..n-1, in chunks of 10k. */
async function seed(n: number, sql: string) {
  const stmts: D1PreparedStatement[] = [];
  for (let start = 0; start < n; start += 10_000) {
    const ids = Array.from({ length: Math.min(10_000, n - start) }, (_, i) => start + i);
    stmts.push(env.DB.prepare(sql).bind(JSON.stringify(ids)));
  }
  await env.DB.batch(stmts);
}

const I = "CAST(value AS INTEGER)";
const STATUS5 = (col: string) => `CASE ${col} % 5 WHEN 0 THEN 'open' WHEN 1 THEN 'recovered' WHEN 2 THEN 'exhausted' WHEN 3 THEN 'failed' ELSE 'skipped' END`;

beforeAll(async () => {
  // events: every 10th event belongs to one fiber, one chat incident and one session, so their timelines are deep.
  // Stored as ingest stores them: segments of 5 consecutive numbered events of one agent (a packed message each).
  await seed(
    N_EVENTS,
    `INSERT INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body)
     SELECT 'Seed', 'a' || (i % 20), MIN(i / 20) + 1, MAX(i / 20) + 1, MIN(t), MAX(t), COUNT(*), MAX(t), json_group_array(json(e) ORDER BY i) FROM (
       SELECT i, ${T0} + i * 100 AS t, json_object('i', printf('%09d-ev', i), 't', ${T0} + i * 100,
         'y', CASE i % 4 WHEN 0 THEN 'fiber.stashed' WHEN 1 THEN 'chat.recovery.attempt' WHEN 2 THEN 'session.status_running' ELSE 'op.started' END, 'v', 1, 'q', i / 20 + 1,
         'f', CASE i % 10 WHEN 0 THEN 'f-big' WHEN 3 THEN 'f-' || i END,
         'n', CASE i % 10 WHEN 1 THEN 'chat-big' WHEN 4 THEN 'chat-' || i END,
         's', CASE i % 10 WHEN 2 THEN 'sess-big' WHEN 5 THEN 'sess-' || i END,
         'l', CASE i % 10 WHEN 0 THEN 'fiber:Seed/a0/f-big' WHEN 1 THEN 'chat-big' WHEN 3 THEN 'fiber:Seed/a3/f-' || i WHEN 4 THEN 'chat-' || i END,
         'p', json_object('seq', i)) AS e
       FROM (SELECT ${I} AS i FROM json_each(?1))
     ) GROUP BY i % 20, i / 100 ORDER BY MAX(t)`,
  );
  await seed(
    N,
    `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, max_attempts, reason, reason_at, reason_event_id, fiber_id, request_id, first_seen, last_seen)
     SELECT printf('inc-%06d', i), CASE i % 3 WHEN 0 THEN 'chat' WHEN 1 THEN 'fiber' ELSE 'turn' END, 'C' || (i % 4), 'n' || (i % 10),
       ${STATUS5("i")}, ${T0} + (i / 2) * 1000, printf('%09d-ev', i), i % 4, 3,
       CASE WHEN i % 7 = 6 THEN NULL ELSE 'r' || (i % 7) END, ${T0} + (i / 2) * 1000, printf('%09d-ev', i),
       NULL, NULL, ${T0} + (i / 2) * 1000 - 5000, ${T0} + (i / 2) * 1000
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    `INSERT INTO runs (fiber_id, agent_class, agent_name, name, started_at, ended_at, outcome, outcome_at, outcome_event_id, error, snapshot_preview, snapshot_bytes, snapshot_at, snapshot_event_id, first_seen, last_seen)
     SELECT printf('fib-%06d', i), 'C' || (i % 4), 'n' || (i % 10), 'job', ${T0} + i * 1000, NULL,
       CASE i % 5 WHEN 0 THEN NULL WHEN 1 THEN 'completed' WHEN 2 THEN 'failed' WHEN 3 THEN 'interrupted' ELSE 'recovered' END,
       CASE WHEN i % 5 = 0 THEN NULL ELSE ${T0} + i * 1000 END, CASE WHEN i % 5 = 0 THEN NULL ELSE printf('%09d-ev', i) END,
       NULL, '{"step":' || i || '}', 12, ${T0} + i * 1000, printf('%09d-ev', i), ${T0} + i * 1000, ${T0} + i * 1000
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    `INSERT INTO sessions (session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, last_event_event_id, status, status_at, status_event_id, recovery_count, last_turn_seq, listed_at)
     SELECT printf('ses-%06d', i), 'C' || (i % 4), printf('ses-%06d', i), ${T0} + i * 1000, ${T0} + i * 1000, 'session.status_running', ${T0} + i * 1000, printf('%09d-ev', i),
       CASE i % 5 WHEN 0 THEN 'running' WHEN 1 THEN 'idle' WHEN 2 THEN 'rescheduled' WHEN 3 THEN 'terminated' ELSE 'error' END, ${T0} + i * 1000, printf('%09d-ev', i), i % 3, i % 50,
       ${T0} + i * 1000 - ((${T0} + i * 1000) % 60000)
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    `INSERT INTO workspace_backups (handle, tenant, environment, session_name, agent_class, agent_name, created_at, expires_at, bytes, restored_at, expired_at, last_seen)
     SELECT printf('bk-%06d', i), 't' || (i % 5), 'e' || (i % 3), 's' || (i % 8), 'C0', 's' || (i % 8), ${T0} + i * 1000, ${T0} + i * 1000, 1000, NULL, NULL, ${T0} + i * 1000
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    `INSERT INTO audit_log (id, time, actor, role, action, target_class, target_name, reason, before, after, result, error)
     SELECT printf('au-%06d', i), ${T0} + i * 1000, 'u' || (i % 6) || '@example.com', 'operator', CASE i % 2 WHEN 0 THEN 'force_idle' ELSE 'trigger_alarm' END,
       'C' || (i % 4), 'n' || (i % 10), 'seed', '{"status":"running"}', NULL,
       CASE i % 5 WHEN 0 THEN 'ok' WHEN 1 THEN 'noop' WHEN 2 THEN 'error' WHEN 3 THEN 'denied' ELSE 'invalid' END, NULL
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    `INSERT INTO op_ambiguities (op_id, agent_class, agent_name, session_name, op_kind, detail, ambiguous_at, resolution, resolution_at, resolution_event_id, first_seen, last_seen)
     SELECT printf('op-%06d', i), 'C' || (i % 4), 'n' || (i % 10), 's' || (i % 8), 'tool.charge', 'started, no completion', ${T0} + i * 1000,
       CASE WHEN i % 3 = 0 THEN NULL ELSE 'verified_ran' END, CASE WHEN i % 3 = 0 THEN NULL ELSE ${T0} + i * 1000 + 1 END,
       CASE WHEN i % 3 = 0 THEN NULL ELSE printf('%09d-ev', i) END, ${T0} + i * 1000, ${T0} + i * 1000 + 1
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  await seed(
    N,
    // Every 50th agent misses 2 of its 10 numbered events; a third of the rest send unnumbered events.
    `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen, seq_max, seq_seen, listed_at)
     SELECT 'C' || (i % 4), printf('ag-%06d', i), ${T0} + i * 1000, ${T0} + (i / 3) * 1000,
       CASE WHEN i % 50 = 7 THEN 10 WHEN i % 3 = 0 THEN NULL ELSE 10 END, CASE WHEN i % 50 = 7 THEN 8 WHEN i % 3 = 0 THEN 0 ELSE 10 END,
       ${T0} + (i / 3) * 1000 - ((${T0} + (i / 3) * 1000) % 60000)
     FROM (SELECT ${I} AS i FROM json_each(?1))`,
  );
  // Every run's agent is in the registry, as ingest keeps it (oldest, no gaps): a name alone finds its classes there.
  await env.DB.prepare(
    `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen) SELECT DISTINCT agent_class, agent_name, ${T0}, ${T0} FROM runs`,
  ).run();
  // Two weeks of rollups: 5 exhaustion reasons and 5 other types per bucket.
  const lastBucket = Math.floor(NOW / BUCKET) * BUCKET;
  const buckets = (ROLLUP_DAYS * 86_400_000) / BUCKET;
  await seed(
    buckets,
    `INSERT INTO event_rollups (bucket, type, dim, n)
     SELECT ${lastBucket} - b * ${BUCKET}, t.type, t.dim, 1 + (b % 3)
     FROM (SELECT ${I} AS b FROM json_each(?1)) CROSS JOIN (
       SELECT 'chat.recovery.exhausted' AS type, 'r' || x AS dim FROM (SELECT value AS x FROM json_each('[0,1,2,3,4]'))
       UNION ALL SELECT value, '' FROM json_each('["chat.recovery.attempt","fiber.recovery.attempt","chat.context.compacted","op.ambiguous","fiber.started"]')
     ) t`,
  );
  // One open incident in eight (by last_seen; half of agent C1/n5's) was force idled: the SDK's word stays open
  // and the overlay closes it, as ingest writes incident.force_idled.
  await env.DB.prepare(
    `UPDATE incidents SET closed_by = 'force_idled', closed_by_at = status_at + 1, closed_by_event_id = 'zz-' || incident_id, closed_by_reason = 'seed'
     WHERE status = 'open' AND CAST(substr(incident_id, 5) AS INTEGER) % 40 = 25`,
  ).run();
  const n = async (t: string) => (await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${t}`).first<{ n: number }>())!.n;
  expect([await n("events"), await n("incidents"), await n("runs"), await n("sessions"), await n("event_rollups")]).toEqual([N_EVENTS, N, N, N, buckets * 10]);
});

const measured: string[] = [];
afterAll(() => console.log(`rows_read (first page of 50 / page of 50 after 850 rows):\n${measured.join("\n")}`));

const FIRST = 50;
const HOP = 200;
const HOPS = 4;

/** First page, four 200-row pages through cursors, then a page of 50 at depth 850: each reads at most its size + 10. */
async function checkDeep(label: string, fetch: (p: PageOptions) => Promise<Page<unknown>>) {
  const first = await fetch({ limit: FIRST });
  expect(first.items, label).toHaveLength(FIRST);
  expect(first.rowsRead, `${label}: first page`).toBeLessThanOrEqual(FIRST + 10);
  let cursor = first.next;
  for (let i = 0; i < HOPS; i++) {
    const p = await fetch({ cursor, limit: HOP });
    expect(p.items, label).toHaveLength(HOP);
    expect(p.rowsRead, `${label}: hop ${i}`).toBeLessThanOrEqual(HOP + 10);
    cursor = p.next;
  }
  expect(cursor, label).not.toBeNull();
  const deep = await fetch({ cursor, limit: FIRST });
  expect(deep.items, label).toHaveLength(FIRST);
  expect(deep.rowsRead, `${label}: deep page`).toBeLessThanOrEqual(FIRST + 10);
  measured.push(`  ${label}: ${first.rowsRead} / ${deep.rowsRead}`);
}

const db = () => env.DB;
const SINCE = T0 + 2_000 * 1000;
const UNTIL = T0 + 8_000 * 1000;

describe("every list reads O(page) rows on a large store", () => {
  const lists: [string, (p: PageOptions) => Promise<Page<unknown>>][] = [
    ["incidents", (p) => listIncidents(db(), {}, p)],
    ["incidents kind", (p) => listIncidents(db(), { kind: "turn" }, p)],
    // A closed status is one index range (the overlay never applies over it); open and the overlay statuses are below.
    ["incidents status", (p) => listIncidents(db(), { status: "exhausted" }, p)],
    ["incidents reason", (p) => listIncidents(db(), { reason: "r3" }, p)],
    ["incidents agentClass", (p) => listIncidents(db(), { agentClass: "C2" }, p)],
    ["incidents agentName", (p) => listIncidents(db(), { agentName: "n7" }, p)],
    ["incidents agentClass+agentName", (p) => listIncidents(db(), { agentClass: "C2", agentName: "n6" }, p)],
    ["incidents since", (p) => listIncidents(db(), { since: SINCE }, p)],
    ["incidents until", (p) => listIncidents(db(), { until: UNTIL }, p)],
    ["incidents status+since+until", (p) => listIncidents(db(), { status: "failed", since: SINCE, until: UNTIL }, p)],
    // Seeded events of one id come from two agents (i % 20): a timeline reads one agent's range only.
    ["incident timeline", (p) => incidentTimeline(db(), { incidentId: "chat-big", agentClass: "Seed", agentName: "a1" }, p)],
    ["fiber incident timeline", (p) => incidentTimeline(db(), { incidentId: "fiber:Seed/a0/f-big", agentClass: "Seed", agentName: "a0" }, p)],
    ["fibers", (p) => listRuns(db(), {}, p)],
    ["fibers running", (p) => listRuns(db(), { outcome: "running" }, p)],
    ["fibers outcome", (p) => listRuns(db(), { outcome: "failed" }, p)],
    ["runs kind", (p) => listRuns(db(), { kind: "fiber" }, p)],
    ["runs kind running", (p) => listRuns(db(), { kind: "fiber", outcome: "running" }, p)],
    ["fibers agentClass", (p) => listRuns(db(), { agentClass: "C1" }, p)],
    ["fibers agentName", (p) => listRuns(db(), { agentName: "n4" }, p)],
    ["fibers agentClass+agentName", (p) => listRuns(db(), { agentClass: "C1", agentName: "n5" }, p)],
    ["fibers since", (p) => listRuns(db(), { since: SINCE }, p)],
    ["fibers until", (p) => listRuns(db(), { until: UNTIL }, p)],
    ["fiber events", (p) => runEvents(db(), { fiberId: "f-big", agentClass: "Seed", agentName: "a10" }, p)],
    // What the overview's chart buckets link to.
    ["events of a type", (p) => listEvents(db(), { type: "chat.recovery.attempt" }, p)],
    ["events of a type in a window", (p) => listEvents(db(), { type: "fiber.stashed", since: T0 + 1000 * 1000, until: T0 + 4000 * 1000 }, p)],
    ["sessions", (p) => listSessions(db(), {}, p)],
    ["sessions status", (p) => listSessions(db(), { status: "rescheduled" }, p)],
    ["sessions agentClass", (p) => listSessions(db(), { agentClass: "C3" }, p)],
    ["session timeline", (p) => sessionTimeline(db(), { sessionName: "sess-big", agentClass: "Seed", agentName: "a2" }, p)],
    ["backups", (p) => listBackups(db(), {}, p, NOW)],
    ["backups tenant", (p) => listBackups(db(), { tenant: "t4" }, p, NOW)],
    ["backups environment", (p) => listBackups(db(), { environment: "e2" }, p, NOW)],
    ["backups sessionName", (p) => listBackups(db(), { sessionName: "s5" }, p, NOW)],
    ["backups expired", (p) => listBackups(db(), { expired: true }, p, NOW)],
    ["backups not expired", (p) => listBackups(db(), { expired: false }, p, NOW)],
    ["audit", (p) => listAudit(db(), {}, p)],
    ["audit actor", (p) => listAudit(db(), { actor: "u5@example.com" }, p)],
    ["audit action", (p) => listAudit(db(), { action: "trigger_alarm" }, p)],
    ["audit targetClass", (p) => listAudit(db(), { targetClass: "C0" }, p)],
    ["audit targetName", (p) => listAudit(db(), { targetName: "n9" }, p)],
    ["audit targetClass+targetName", (p) => listAudit(db(), { targetClass: "C0", targetName: "n8" }, p)],
    ["audit result", (p) => listAudit(db(), { result: "denied" }, p)],
    ["ops", (p) => listAmbiguousOps(db(), {}, p)],
    ["ops open", (p) => listAmbiguousOps(db(), { open: true }, p)],
    ["ops resolved", (p) => listAmbiguousOps(db(), { open: false }, p)],
    ["agents", (p) => listAgents(db(), {}, p)],
    ["agents agentClass", (p) => listAgents(db(), { agentClass: "C1" }, p)],
  ];
  for (const [label, fetch] of lists) it(label, () => checkDeep(label, fetch));
});

describe("filter pairs that no single index serves are bounded scans", () => {
  it("returns every match across short pages, each request bounded by the scan budget", async () => {
    // status + agentClass: scans incidents_status (4000 open), tests the class per row.
    const expected = (await env.DB.prepare("SELECT COUNT(*) AS n FROM incidents WHERE status = 'open' AND closed_by IS NULL AND agent_class = 'C1'").first<{
      n: number;
    }>())!.n;
    let cursor: string | null = null;
    let total = 0;
    let requests = 0;
    const seen = new Set<string>();
    do {
      const p: Page<{ incidentId: string; status: string; agentClass: string }> = await listIncidents(
        db(),
        { status: "open", agentClass: "C1" },
        { cursor, limit: 200 },
      );
      expect(p.rowsRead).toBeLessThanOrEqual(2 * SCAN_BUDGET + 10);
      for (const i of p.items) {
        expect(i).toMatchObject({ status: "open", agentClass: "C1" });
        expect(seen.has(i.incidentId)).toBe(false);
        seen.add(i.incidentId);
      }
      total += p.items.length;
      cursor = p.next;
      requests++;
    } while (cursor && requests < 100);
    expect(total).toBe(expected);
    measured.push(`  incidents status+agentClass (bounded scan): ${requests} requests for ${total} rows`);
  });

  it("stops after the budget when matches are sparse, and says where to continue", async () => {
    // agentName n3 (2000 incidents) never has status open: each request scans at most the budget and returns nothing.
    const first = await listIncidents(db(), { agentName: "n3", status: "open" }, { limit: 50 });
    expect(first.items).toEqual([]);
    expect(first.next).not.toBeNull();
    expect(first.rowsRead).toBeLessThanOrEqual(2 * SCAN_BUDGET);
    const second = await listIncidents(db(), { agentName: "n3", status: "open" }, { cursor: first.next, limit: 50 });
    expect(second.items).toEqual([]);
    const third = second.next ? await listIncidents(db(), { agentName: "n3", status: "open" }, { cursor: second.next, limit: 50 }) : null;
    expect(third?.next ?? null).toBeNull();
    measured.push(`  incidents agentName+status with no match: ${first.rowsRead} rows per request`);
  });
});

describe("agents with missing events: a bounded scan (no index serves it)", () => {
  it("the list returns every such agent across pages, each request reading at most twice the scan budget", async () => {
    const expected = (
      await env.DB.prepare("SELECT agent_name FROM agents WHERE seq_max > seq_seen ORDER BY listed_at DESC, agent_class DESC, agent_name DESC").all<{
        agent_name: string;
      }>()
    ).results.map((r) => r.agent_name);
    expect(expected).toHaveLength(400);
    const got: string[] = [];
    let after: string | null = null;
    let requests = 0;
    let most = 0;
    do {
      const p: Awaited<ReturnType<typeof agentsWithGaps>> = await agentsWithGaps(db(), { after, limit: 50 });
      expect(p.rowsRead).toBeLessThanOrEqual(2 * SCAN_BUDGET + 10);
      most = Math.max(most, p.rowsRead);
      for (const a of p.items) expect(a.missing).toBe(2);
      got.push(...p.items.map((a) => a.agentName));
      after = p.next;
      requests++;
    } while (after && requests < 200);
    expect(got).toEqual(expected);
    measured.push(
      `  agents with gaps (bounded scan of ${SCAN_BUDGET}): ${requests} requests for ${got.length} agents among 20,000, at most ${most} rows per request`,
    );
  });

  it("the count looks at the 1,001 most recently seen agents and says it is a lower bound", async () => {
    const c = await countAgentsWithGaps(db());
    // The newest 1,001 agents (by last_seen, then class and name) hold 20 of the every-50th agents with a gap.
    const truth = (await env.DB.prepare(
      "SELECT SUM(seq_max > seq_seen) AS n FROM (SELECT seq_max, seq_seen FROM agents ORDER BY last_seen DESC, agent_class DESC, agent_name DESC LIMIT 1001)",
    ).first<{ n: number }>())!.n;
    expect(c).toMatchObject({ n: truth, capped: true, missingEvents: 2 * truth });
    expect(c.rowsRead).toBeLessThanOrEqual(1001 + 5);
    measured.push(`  agents with gaps count: ${c.rowsRead}`);
  });
});

describe("events of several types (a series such as recovery) merge one range per type", () => {
  it("reads at most types × (limit + 1) rows per page, at any depth", async () => {
    const types = "chat.recovery.attempt,fiber.stashed";
    let cursor: string | null = null;
    const reads: number[] = [];
    let last = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 6; i++) {
      const p: Page<{ time: number; type: string }> = await listEvents(db(), { type: types }, { cursor, limit: 100 });
      expect(p.items).toHaveLength(100);
      for (const e of p.items) {
        expect(["chat.recovery.attempt", "fiber.stashed"]).toContain(e.type);
        expect(e.time).toBeLessThanOrEqual(last);
        last = e.time;
      }
      reads.push(p.rowsRead);
      expect(p.rowsRead).toBeLessThanOrEqual(2 * 101 + 10);
      cursor = p.next;
    }
    measured.push(`  events of 2 types: ${reads.join(" / ")}`);
  });
});

describe("shown statuses the overlay decides are bounded scans of the open range", () => {
  // 4000 incidents whose SDK word is open, 500 of them force idled (every eighth by last_seen).
  const cases = [
    ["open", 3500],
    ["force_idled", 500],
  ] as const;
  for (const [status, total] of cases) {
    it(`status=${status}: every match across pages, each page bounded by the scan budget`, async () => {
      const rows: number[] = [];
      const found = await walk(
        async (p) => {
          const page = await listIncidents(db(), { status }, p);
          rows.push(page.rowsRead);
          for (const i of page.items) expect(i.status).toBe(status);
          return page;
        },
        50,
        (i) => `${i.incidentId}/${i.agentClass}/${i.agentName}`,
      );
      expect(found).toHaveLength(total);
      for (const r of rows) expect(r).toBeLessThanOrEqual(2 * SCAN_BUDGET + 10);
      const first = rows[0]!;
      // A page of 50 scans until 50 match: about 57 open rows for open (7 in 8 match), about 400 for force_idled (1 in 8).
      expect(first).toBeLessThanOrEqual(status === "open" ? 2 * 50 + 10 : 2 * 8 * 50 + 10);
      measured.push(`  incidents status=${status} (overlay tested per row): first page ${first}, ${rows.length} pages, max ${Math.max(...rows)}`);
      const counted = await countIncidents(db(), { status });
      expect(counted).toMatchObject({ n: Math.min(total, 1000), capped: total > 1000 });
      measured.push(`  countIncidents status=${status}: ${counted.rowsRead}`);
    });
  }
});

describe("aggregates read a bounded number of rows", () => {
  it("overview counts are capped", async () => {
    const c = await overviewCounts(db(), NOW);
    expect(c).toMatchObject({
      running: { n: 1000, capped: true },
      runningByKind: { fiber: { n: 1000, capped: true, confirmed: 0 }, task: { n: 0, capped: false } },
      openIncidents: { n: 1000, capped: true },
      ambiguousOps: { n: 1000, capped: true },
      exhaustions24h: { n: 1000, capped: true },
    });
    // Three capped counts of 1001 rows (running fibers: the fixture's runs are all fibers; the other kinds read
    // nothing; open ops; exhausted incidents of the day), the open incidents (the SDK's open range, tested for
    // the overlay per row: at most COUNT_SCAN), plus a day of model.usage rollups (289 buckets × 1), plus the
    // 1,001 most recently seen agents (agents with missing events: no index serves it, event-gaps.ts).
    expect(c.agentsWithGaps).toMatchObject({ capped: true });
    expect(c.rowsRead).toBeLessThanOrEqual(3 * 1001 + COUNT_SCAN + 289 + 1001 + 10);
    measured.push(`  overviewCounts: ${c.rowsRead}`);
  });

  it("the chart reads only rollups of the window; top reasons a bounded group-by", async () => {
    const day = await eventSeries(db(), {}, NOW);
    expect(day.buckets.length).toBe(289);
    // exhausted (5 reasons) + recovery (2 types) + compacted + op.ambiguous = 9 rollup rows per bucket.
    expect(day.rowsRead).toBeLessThanOrEqual(289 * 9 + 10);
    expect(day.series.recovery!.at(-1)).toBe(2 * (1 + 0));
    const week = await eventSeries(db(), { since: NOW - 7 * 86_400_000, until: NOW, types: ["fiber.started"] }, NOW);
    expect(week.rowsRead).toBeLessThanOrEqual(7 * 288 + 2);
    const top = await topReasons(db(), { limit: 3 }, NOW);
    expect(top.reasons).toHaveLength(3);
    // Exhausted incidents grouped by reason (the list's own filters): the scan, bounded by GROUP_BOUND, and the
    // GROUP BY's temporary b-tree, which D1 counts as rows read too.
    expect(top.rowsRead).toBeLessThanOrEqual(2 * GROUP_BOUND + 10);
    measured.push(`  eventSeries 24h: ${day.rowsRead}, 7 days of one type: ${week.rowsRead}, topReasons: ${top.rowsRead}`);
  });

  it("group-by scans at most GROUP_BOUND rows and says so", async () => {
    const g = await groupIncidents(db(), {}, "reason");
    expect(g.bounded).toBe(true);
    expect(g.scanned).toBe(GROUP_BOUND);
    expect(g.groups.reduce((s, x) => s + x.n, 0)).toBe(GROUP_BOUND);
    // The scan plus the GROUP BY's temporary b-tree, which D1 counts as rows read too.
    expect(g.rowsRead).toBeLessThanOrEqual(2 * GROUP_BOUND + 10);
    const small = await groupIncidents(db(), { agentClass: "C0", agentName: "n0" }, "status");
    expect(small.bounded).toBe(false);
    expect(small.groups).toEqual([{ key: "open", n: 1000 }]);
    measured.push(`  groupIncidents: ${g.rowsRead} (bound ${GROUP_BOUND}), one agent: ${small.rowsRead}`);
  });
});

describe("one agent's open ops: its own index, never a scan of the fleet's", () => {
  it("pages through every open op of the agent, each page within its size + 10 rows", async () => {
    // Agent C1/n5 holds the ops i ≡ 5 (mod 20); a third of those are open (i % 3 = 0).
    const expected = (await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM op_ambiguities WHERE agent_class = 'C1' AND agent_name = 'n5' AND resolution_at IS NULL",
    ).first<{ n: number }>())!.n;
    expect(expected).toBeGreaterThan(300);
    const reads: number[] = [];
    const found = await walk(
      async (p) => {
        const page = await listAmbiguousOps(db(), { agentClass: "C1", agentName: "n5", open: true }, p);
        reads.push(page.rowsRead);
        for (const o of page.items) expect(o).toMatchObject({ agentClass: "C1", agentName: "n5", open: true });
        return page;
      },
      50,
      (o) => o.opId,
    );
    expect(found).toHaveLength(expected);
    for (const r of reads) expect(r).toBeLessThanOrEqual(FIRST + 10);
    // The agent page's short list (the incident and session pages ask for 20).
    const short = await listAmbiguousOps(db(), { agentClass: "C1", agentName: "n5", open: true }, { limit: 20 });
    expect(short.rowsRead).toBeLessThanOrEqual(21);
    measured.push(`  one agent's open ops: ${reads.length} pages of 50, at most ${Math.max(...reads)} rows each; 20 of them: ${short.rowsRead}`);
  });
});

describe("a sparse timeline: each page reads a bounded number of segments and says where to go on", () => {
  it("lists every event of the session across pages, newest first, each page within SEGMENT_BUDGET segments", async () => {
    // 400 segments of 5 events of one agent; one event in 37 carries the session.
    await seed(
      2000,
      `INSERT INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body)
       SELECT 'Sparse', 's1', MIN(i) + 1, MAX(i) + 1, MIN(t), MAX(t), COUNT(*), MAX(t), json_group_array(json(e) ORDER BY i) FROM (
         SELECT i, ${T0} + i * 1000 AS t, json_object('i', printf('%09d-sp', i), 't', ${T0} + i * 1000, 'y', 'model.usage', 'v', 1, 'q', i + 1,
           's', CASE WHEN i % 37 = 0 THEN 'needle' END, 'p', json_object('seq', i)) AS e
         FROM (SELECT ${I} AS i FROM json_each(?1))
       ) GROUP BY i / 5 ORDER BY MAX(t)`,
    );
    const expected = Array.from({ length: 2000 }, (_, i) => i)
      .filter((i) => i % 37 === 0)
      .map((i) => T0 + i * 1000)
      .reverse();
    const reads: number[] = [];
    let partial = 0;
    const found = await walk(
      async (p) => {
        const page = await sessionTimeline(db(), { sessionName: "needle", agentClass: "Sparse", agentName: "s1" }, p);
        reads.push(page.rowsRead);
        if (page.next && page.items.length < FIRST) partial++;
        return page;
      },
      FIRST,
      (e) => e.id,
    );
    expect(found.map((e) => e.time)).toEqual(expected);
    for (const r of reads) expect(r).toBeLessThanOrEqual(SEGMENT_BUDGET);
    // The timeline is longer than one page's reading: the first pages come back short, each with a cursor.
    expect(partial).toBeGreaterThan(0);
    measured.push(`  sparse session timeline (1 event in 37): ${reads.length} pages, at most ${Math.max(...reads)} rows each`);
  });
});
