import { env } from "cloudflare:workers";
import { fiberIncidentId } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_STUCK_CONFIG, listStuck, parseStuckRule, STUCK_RULES, type StuckConfig, type StuckEntry } from "../../src/store/read-models";
import { reconcileAgent } from "../../worker/reconcile/agent";
import { pollRows, pollRunRows } from "../helpers";

// Stuck detection on real projections: a foreign agent (test/fixtures/lossy-agent.ts: a plain agents-SDK Agent
// with both mixins) reports its work through the real telemetry Queue and ingest; reconciliation asks it through
// real admin RPC. Time moves forward through listStuck's `now` (and reconcileAgent's clock for the alarm), never
// by editing rows.

const MIN = 60_000;
const cfg = (over: Partial<StuckConfig> = {}): StuckConfig => ({ ...DEFAULT_STUCK_CONFIG, ...over });
const mine = (entries: StuckEntry[], name: string) => entries.filter((e) => e.agentName === name);
const uid = () => crypto.randomUUID().slice(0, 8);

describe("stuck rules", () => {
  it("accepts only the four rule names", async () => {
    expect(STUCK_RULES.map((r) => parseStuckRule(r))).toEqual([...STUCK_RULES]);
    expect(parseStuckRule("")).toBeUndefined();
    expect(() => parseStuckRule("slow")).toThrow('rule must be one of no_progress, incident_no_attempt, alarm_overdue, skipped_no_reason (got "slow")');
    expect(() => parseStuckRule(["no_progress"])).toThrow("rule must be one of");
  });
});

describe("no_progress: a run with no progress event for N minutes", () => {
  const name = `stuck-run-${uid()}`;
  let runId: string;
  let lastSeen: number;

  beforeAll(async () => {
    const agent = await getAgentByName(env.LossyAgent, name);
    runId = await agent.startHeld();
    const rows = await pollRows<{ last_seen: number }>(
      "SELECT last_seen FROM runs WHERE agent_name = ? AND fiber_id = ? AND snapshot_preview IS NOT NULL",
      [name, runId],
      (r) => r.length === 1,
    );
    lastSeen = rows[0]!.last_seen;
  });

  afterAll(async () => {
    await (await getAgentByName(env.LossyAgent, name)).release();
  });

  it("fires once the run has been silent longer than the configured minutes, not before", async () => {
    expect(mine(await listStuck(env.DB, lastSeen + 9 * MIN, cfg({ no_progress: 10 })), name)).toEqual([]);
    const found = mine(await listStuck(env.DB, lastSeen + 11 * MIN, cfg({ no_progress: 10 })), name);
    expect(found).toEqual([
      {
        rule: "no_progress",
        agentClass: "LossyAgent",
        agentName: name,
        subjectKind: "run",
        subjectId: runId,
        since: lastSeen,
        runKind: "fiber",
        runName: "long-export",
        lastSeen,
        // No reconciliation has confirmed it alive, and it is not a run waiting to wake.
        confirmedAt: null,
        wakeAt: null,
      },
    ]);
    // The threshold comes from the config: 20 minutes is not reached yet.
    expect(mine(await listStuck(env.DB, lastSeen + 11 * MIN, cfg({ no_progress: 20 })), name)).toEqual([]);
    // Other rules and other classes filter it out.
    expect(mine(await listStuck(env.DB, lastSeen + 11 * MIN, cfg({ no_progress: 10 }), { rule: "incident_no_attempt" }), name)).toEqual([]);
    expect(mine(await listStuck(env.DB, lastSeen + 11 * MIN, cfg({ no_progress: 10 }), { agentClass: "ProbeAgent" }), name)).toEqual([]);
    expect(mine(await listStuck(env.DB, lastSeen + 11 * MIN, cfg({ no_progress: 10 }), { rule: "no_progress", agentClass: "LossyAgent" }), name)).toHaveLength(
      1,
    );
  });

  it("still fires when the agent confirms the run alive, and says so: running, no progress", async () => {
    // Reconciliation asks the agent (real admin RPC) 11 minutes on; it confirms the run is live.
    const r = await reconcileAgent(env, { agentClass: "LossyAgent", agentName: name }, { now: lastSeen + 11 * MIN, minAgeMs: 10 * MIN });
    expect(r.findings).toEqual([expect.objectContaining({ runId, finding: "confirmed_running" })]);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND confirmed_at IS NOT NULL", [name, runId], (rows) => rows.length === 1);
    const [entry] = mine(await listStuck(env.DB, lastSeen + 12 * MIN, cfg({ no_progress: 10 }), { rule: "no_progress" }), name);
    // Still stuck since its last event, now carrying when the agent confirmed it (at or after that event).
    expect(entry).toMatchObject({ rule: "no_progress", subjectId: runId, since: lastSeen, lastSeen, wakeAt: null });
    expect(entry?.rule === "no_progress" ? entry.confirmedAt : null).toBeGreaterThanOrEqual(lastSeen);
  });

  it("is gone once the run ends", async () => {
    await (await getAgentByName(env.LossyAgent, name)).release();
    // A healthy completed run leaves D1 (it is read from the R2 history): wait until the console shows its end.
    await pollRunRows(
      name,
      (r) => r.fiber_id === runId && r.outcome === "completed",
      (rows) => rows.length === 1,
    );
    expect(mine(await listStuck(env.DB, lastSeen + 60 * MIN, cfg({ no_progress: 10 }), { rule: "no_progress" }), name)).toEqual([]);
  });
});

describe("incident_no_attempt: a recovery incident open with no attempt for N minutes", () => {
  const name = `stuck-incident-${uid()}`;
  const fiberId = "fiber-never-recovered";
  let incidentId: string;
  let lastSeen: number;

  beforeAll(async () => {
    const agent = await getAgentByName(env.LossyAgent, name);
    await agent.reportOpenSessionAndRecovery("support-9", fiberId);
    incidentId = fiberIncidentId("LossyAgent", name, fiberId);
    const rows = await pollRows<{ last_seen: number; status: string }>(
      "SELECT last_seen, status FROM incidents WHERE agent_name = ? AND incident_id = ?",
      [name, incidentId],
      (r) => r.length === 1,
    );
    expect(rows[0]!.status).toBe("open");
    lastSeen = rows[0]!.last_seen;
  });

  it("fires after the configured minutes without an attempt, naming the incident", async () => {
    expect(mine(await listStuck(env.DB, lastSeen + 14 * MIN, cfg()), name)).toEqual([]);
    const found = mine(await listStuck(env.DB, lastSeen + 16 * MIN, cfg(), { rule: "incident_no_attempt" }), name);
    expect(found).toEqual([
      {
        rule: "incident_no_attempt",
        agentClass: "LossyAgent",
        agentName: name,
        subjectKind: "incident",
        subjectId: incidentId,
        since: lastSeen,
        incidentKind: "fiber",
        lastSeen,
        attempts: 0,
        confirmedAt: null,
      },
    ]);
    expect(mine(await listStuck(env.DB, lastSeen + 16 * MIN, cfg({ incident_no_attempt: 30 })), name).filter((e) => e.rule === "incident_no_attempt")).toEqual(
      [],
    );
  });
});

describe("skipped_no_reason: a recovery or turn skipped without a reason", () => {
  const name = `stuck-skip-${uid()}`;
  const silent = `chat-silent-${uid()}`;
  const explained = `chat-explained-${uid()}`;
  const turn = `req-skipped-${uid()}`;

  beforeAll(async () => {
    const agent = await getAgentByName(env.LossyAgent, name);
    await agent.reportSkippedRecovery(silent, "req-a");
    await agent.reportSkippedRecovery(explained, "req-b", "stream_already_complete");
    await agent.reportSkippedTurn(turn);
    await pollRows("SELECT 1 FROM incidents WHERE agent_name = ? AND status = 'skipped'", [name], (r) => r.length === 2);
    await pollRows("SELECT 1 FROM runs WHERE agent_name = ? AND fiber_id = ? AND outcome IS NOT NULL", [name, turn], (r) => r.length === 1);
  });

  it("lists the silent skip and the skipped turn, not the skip that gave its reason, within the look-back", async () => {
    const now = Date.now();
    const found = mine(await listStuck(env.DB, now, cfg(), { rule: "skipped_no_reason" }), name);
    expect(found.map((e) => [e.subjectKind, e.subjectId]).sort()).toEqual([
      ["incident", silent],
      ["run", turn],
    ]);
    // What was skipped, as data: a chat recovery (the incident) and a chat turn (the run).
    expect(found.find((e) => e.subjectId === silent)).toMatchObject({ rule: "skipped_no_reason", skipped: "recovery", incidentKind: "chat" });
    expect(found.find((e) => e.subjectId === turn)).toMatchObject({ rule: "skipped_no_reason", skipped: "chat_turn", incidentKind: null });
    // Older than the look-back window: no longer listed.
    expect(mine(await listStuck(env.DB, now + 25 * 60 * MIN, cfg()), name).filter((e) => e.rule === "skipped_no_reason")).toEqual([]);
    expect(
      mine(await listStuck(env.DB, now + 25 * 60 * MIN, cfg({ skipped_no_reason: 26 * 60 })), name).filter((e) => e.rule === "skipped_no_reason"),
    ).toHaveLength(2);
  });
});

describe("alarm_overdue: the agent's alarm was due and had not run when reconciliation asked", () => {
  const name = `stuck-alarm-${uid()}`;
  const target = { agentClass: "LossyAgent", agentName: name };
  let due: number;

  beforeAll(async () => {
    const agent = await getAgentByName(env.LossyAgent, name);
    // It reports something, so the console knows it; its alarm is an hour out.
    await agent.reportSkippedRecovery(`chat-${uid()}`, "req-x", "nothing to recover");
    await pollRows("SELECT 1 FROM agents WHERE agent_name = ?", [name], (r) => r.length === 1);
    due = Date.now() + 60 * MIN;
    expect(await agent.setAlarmAt(due)).toBe(due);
  });

  it("records the next alarm the agent answered, and flags it only once it is past due by more than the grace", async () => {
    // Asked now: the alarm is in the future; nothing overdue.
    await reconcileAgent(env, target, { minAgeMs: 10 * MIN });
    const row = await env.DB.prepare("SELECT next_alarm_at AS nextAlarmAt, error FROM reconciliations WHERE agent_name = ?")
      .bind(name)
      .first<{ nextAlarmAt: number; error: string | null }>();
    expect(row).toEqual({ nextAlarmAt: due, error: null });
    expect(mine(await listStuck(env.DB, Date.now(), cfg()), name).filter((e) => e.rule === "alarm_overdue")).toEqual([]);

    // Asked 3 minutes after it was due: inside the 5-minute grace.
    await reconcileAgent(env, target, { now: due + 3 * MIN, minAgeMs: 10 * MIN });
    expect(mine(await listStuck(env.DB, due + 3 * MIN, cfg()), name).filter((e) => e.rule === "alarm_overdue")).toEqual([]);

    // Asked with the clock 20 minutes past the due time, and the agent still reports that alarm pending: overdue.
    await reconcileAgent(env, target, { now: due + 20 * MIN, minAgeMs: 10 * MIN });
    const found = mine(await listStuck(env.DB, due + 20 * MIN, cfg()), name).filter((e) => e.rule === "alarm_overdue");
    expect(found).toEqual([
      {
        rule: "alarm_overdue",
        agentClass: "LossyAgent",
        agentName: name,
        subjectKind: "agent",
        subjectId: `LossyAgent/${name}`,
        since: due,
        askedAt: due + 20 * MIN,
        nextAlarmAt: due,
      },
    ]);
    // A longer grace (configured) does not flag it.
    expect(mine(await listStuck(env.DB, due + 20 * MIN, cfg({ alarm_overdue: 30 })), name).filter((e) => e.rule === "alarm_overdue")).toEqual([]);
  });
});

describe("listStuck", () => {
  it("orders newest-stuck first and honours the limit", async () => {
    const later = Date.now() + 24 * 60 * MIN;
    const all = await listStuck(env.DB, later, cfg({ skipped_no_reason: 48 * 60 }));
    expect(all.length).toBeGreaterThan(2);
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.since).toBeGreaterThanOrEqual(all[i]!.since);
    expect(await listStuck(env.DB, later, cfg({ skipped_no_reason: 48 * 60 }), { limit: 2 })).toEqual(all.slice(0, 2));
  });
});

describe("rows read", () => {
  // A large store in the shapes ingest writes (seeded with json_each, as test/store/rows-read.test.ts does), under
  // its own agent class and dated in the past so the other tests' findings are not disturbed.
  const T0 = Date.UTC(2026, 9, 1);
  const N = 10_000;
  const NOW = T0 + N * 1000 + 2 * 60 * MIN;

  /** A D1Database that counts the rows its batches read (meta.rows_read). */
  function counting(db: D1Database) {
    const seen = { rows: 0 };
    const wrapped = new Proxy(db, {
      get(t, k) {
        if (k === "batch")
          return async (s: D1PreparedStatement[]) => {
            const r = await t.batch(s);
            seen.rows += r.reduce((n, x) => n + (x.meta.rows_read ?? 0), 0);
            return r;
          };
        const v = Reflect.get(t, k);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
    return { db: wrapped, seen };
  }

  beforeAll(async () => {
    const ids = JSON.stringify(Array.from({ length: N }, (_, i) => i));
    const I = "CAST(value AS INTEGER)";
    await env.DB.batch([
      // A fifth running, the rest ended; one run in five of the running ones is a Tasks run waiting to wake later.
      env.DB.prepare(
        `INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, outcome_at, outcome_event_id, reason, phase, wake_at, first_seen, last_seen, listed_at)
         SELECT printf('seed-run-%06d', i), 'SeedStuck', 'n' || (i % 10), CASE WHEN i % 25 = 0 THEN 'task' WHEN i % 7 = 0 THEN 'chat_turn' ELSE 'fiber' END, 'job',
           CASE i % 5 WHEN 0 THEN NULL WHEN 1 THEN 'completed' WHEN 2 THEN 'failed' WHEN 3 THEN 'cancelled' ELSE 'recovered' END,
           CASE WHEN i % 5 = 0 THEN NULL ELSE ${T0} + i * 1000 END, CASE WHEN i % 5 = 0 THEN NULL ELSE printf('%09d-ev', i) END,
           CASE WHEN i % 5 = 3 AND i % 7 = 0 THEN 'skipped' END,
           CASE WHEN i % 25 = 0 THEN 'waiting' END, CASE WHEN i % 25 = 0 THEN ${NOW} + 3600000 END,
           ${T0} + i * 1000, ${T0} + i * 1000, (${T0} + i * 1000) / 60000 * 60000
         FROM (SELECT ${I} AS i FROM json_each(?1))`,
      ).bind(ids),
      // Incidents: open, recovered, exhausted, failed, skipped (half of the skips without a reason).
      env.DB.prepare(
        `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, reason, reason_at, reason_event_id, first_seen, last_seen)
         SELECT printf('seed-inc-%06d', i), 'chat', 'SeedStuck', 'n' || (i % 10),
           CASE i % 5 WHEN 0 THEN 'open' WHEN 1 THEN 'recovered' WHEN 2 THEN 'exhausted' WHEN 3 THEN 'failed' ELSE 'skipped' END,
           ${T0} + i * 1000, printf('%09d-ev', i), 1,
           CASE WHEN i % 10 = 4 THEN NULL ELSE 'r' END, CASE WHEN i % 10 = 4 THEN NULL ELSE ${T0} + i * 1000 END, CASE WHEN i % 10 = 4 THEN NULL ELSE printf('%09d-ev', i) END,
           ${T0} + i * 1000, ${T0} + i * 1000
         FROM (SELECT ${I} AS i FROM json_each(?1))`,
      ).bind(ids),
    ]);
  });

  it.each(["no_progress", "incident_no_attempt", "skipped_no_reason"] as const)("%s reads O(limit) rows of its index, not the table", async (rule) => {
    const { db, seen } = counting(env.DB);
    const found = await listStuck(db, NOW, cfg(), { rule, agentClass: "SeedStuck", limit: 50 });
    expect(found).toHaveLength(50);
    expect(found.every((e) => e.rule === rule && e.agentClass === "SeedStuck")).toBe(true);
    // Newest-stuck first: the first is the latest to become stuck.
    for (let i = 1; i < found.length; i++) expect(found[i - 1]!.since).toBeGreaterThanOrEqual(found[i]!.since);
    // 10,000 runs and 10,000 incidents are stored; a rule reads a few rows per match (the residual filters' misses;
    // skipped_no_reason is two statements: skipped incidents and skipped chat turns, 50 each at most).
    console.log(`[rows read] ${rule}: ${seen.rows} rows for 50 findings`);
    expect(seen.rows).toBeLessThanOrEqual(rule === "skipped_no_reason" ? 4 * 50 : 2 * 50);
  });

  it("skips a waiting Tasks run until its wake time is past, and a run that moved recently", async () => {
    const found = await listStuck(env.DB, NOW, cfg(), { rule: "no_progress", agentClass: "SeedStuck", limit: 500 });
    expect(found[0]!.subjectId).toBe("seed-run-009995"); // the newest running row
    expect(found.some((e) => e.subjectId === "seed-run-009975")).toBe(false); // waiting, wakes in an hour
    expect(found.some((e) => e.subjectId === "seed-run-009970")).toBe(true);
    // An hour and a half later its wake is 30 minutes overdue: now it is stuck too, since its wake time.
    const later = await listStuck(env.DB, NOW + 90 * MIN, cfg(), { rule: "no_progress", agentClass: "SeedStuck", limit: 500 });
    expect(later.find((e) => e.subjectId === "seed-run-009975")).toMatchObject({
      since: NOW + 60 * MIN,
      runKind: "task",
      wakeAt: NOW + 60 * MIN,
      confirmedAt: null,
    });
  });
});
