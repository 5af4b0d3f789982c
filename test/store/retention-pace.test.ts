import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { RUN_KINDS, type RunKind } from "@agent-oncall/telemetry/contract";
import { describe, expect, it } from "vitest";
import { type PaceResult, paceRetention, WALK_SCAN_FACTOR } from "../../src/store/retention-pace";
import { handleTelemetryBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { count } from "../helpers";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const KEEP = { maxAgeDays: 30, hotWindowHours: 48 };

/** Runs of one agent written straight into D1: `outcome` null for an open run; of every kind in turn unless given. */
function seedRuns(agentName: string, runs: { id: string; kind?: RunKind; outcome: string | null; firstSeen: number; lastSeen: number }[]) {
  return env.DB.batch(
    runs.map((r, i) =>
      env.DB.prepare(
        "INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, first_seen, last_seen, listed_at) VALUES (?, 'ProbeAgent', ?, ?, 'etl', ?, ?, ?, ?)",
      ).bind(r.id, agentName, r.kind ?? RUN_KINDS[i % RUN_KINDS.length], r.outcome, r.firstSeen, r.lastSeen, r.lastSeen),
    ),
  );
}

function seedSegments(agentName: string, n: number, time: number) {
  return env.DB.batch(
    Array.from({ length: n }, (_, i) =>
      env.DB.prepare(
        "INSERT INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body) VALUES ('ProbeAgent', ?, ?, ?, ?, ?, 1, ?, '[]')",
      ).bind(agentName, i + 1, i + 1, time + i, time + i, time + i),
    ),
  );
}

const agentRuns = (agentName: string) =>
  env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ? ORDER BY fiber_id").bind(agentName).all<{ fiber_id: string }>();

describe("paced retention", () => {
  it("deletes due rows, at most pace x what the batch added per table, and never rows that are not due", async () => {
    const agentName = `pace-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    const due = Array.from({ length: 30 }, (_, i) => ({
      id: `due-${String(i).padStart(2, "0")}`,
      outcome: "completed",
      firstSeen: now - 60 * HOUR,
      lastSeen: now - 59 * HOUR,
    }));
    const stay = [
      ...Array.from({ length: 5 }, (_, i) => ({ id: `open-${i}`, outcome: null, firstSeen: now - 60 * HOUR, lastSeen: now - 59 * HOUR })),
      // Started before the hot window, active inside it: its last activity is what counts.
      ...Array.from({ length: 3 }, (_, i) => ({ id: `long-${i}`, outcome: "completed", firstSeen: now - 60 * HOUR, lastSeen: now - HOUR })),
    ];
    await seedRuns(agentName, [...due, ...stay]);
    await seedSegments(agentName, 25, now - 60 * HOUR);
    await seedSegments(`${agentName}-fresh`, 3, now - HOUR);

    const slices: PaceResult[] = [];
    for (let i = 0; i < 40 && (await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND fiber_id LIKE 'due-%'", agentName)) > 0; i++) {
      const r = await paceRetention(env.DB, {
        ...KEEP,
        pace: 10,
        added: { runs: 1, event_segments: 1 },
        agents: [{ agentClass: "ProbeAgent", agentName }],
        now,
      });
      // Never more than pace x added, per table.
      expect(r.deleted.runs ?? 0).toBeLessThanOrEqual(10);
      expect(r.deleted.event_segments ?? 0).toBeLessThanOrEqual(10);
      slices.push(r);
    }
    expect((await agentRuns(agentName)).results.map((r) => r.fiber_id)).toEqual([...stay.map((r) => r.id)].sort());
    // The agent's segments older than the hot window are gone within three slices; another agent's fresh ones stay.
    expect(slices.slice(0, 3).reduce((n, s) => n + (s.deleted.event_segments ?? 0), 0)).toBe(25);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ?", agentName)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ?", `${agentName}-fresh`)).toBe(3);
  });

  it("walks past old rows that stay (open runs) to the due ones behind them, reading a bounded number of rows per slice", async () => {
    const agentName = `pace-walk-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    // 100 open runs started 29 days ago (kept: open runs stay for RETENTION_DAYS), then 5 finished ones behind them.
    const open = Array.from({ length: 100 }, (_, i) => ({
      id: `open-${String(i).padStart(3, "0")}`,
      outcome: null,
      firstSeen: now - 29 * DAY,
      lastSeen: now - 29 * DAY,
    }));
    const done = Array.from({ length: 5 }, (_, i) => ({ id: `done-${i}`, outcome: "failed", firstSeen: now - 28 * DAY, lastSeen: now - 28 * DAY }));
    await seedRuns(agentName, [...open, ...done]);
    const scan = 10 * WALK_SCAN_FACTOR;
    for (let i = 0; i < 200 && (await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND fiber_id LIKE 'done-%'", agentName)) > 0; i++) {
      const r = await paceRetention(env.DB, { ...KEEP, pace: 10, added: { runs: 1 }, agents: [], now });
      // The scan (at most `scan` index entries, each with its row) and the deletes by rowid.
      expect(r.rowsRead).toBeLessThanOrEqual(2 * scan + 2 * 10);
    }
    expect(await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND fiber_id LIKE 'done-%'", agentName)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ? AND fiber_id LIKE 'open-%'", agentName)).toBe(100);
  });

  it("walks the runs of every kind as one first_seen order, merged over the kinds", async () => {
    const agentName = `pace-kinds-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    // 24 runs a minute apart, older than any other test's, kinds in turn; every sixth is open and stays.
    const all = Array.from({ length: 24 }, (_, i) => ({
      id: `k-${String(i).padStart(2, "0")}`,
      outcome: i % 6 === 5 ? null : "completed",
      firstSeen: now - 29.5 * DAY + i * 60_000,
      lastSeen: now - 29.5 * DAY + i * 60_000,
    }));
    await seedRuns(agentName, all);
    // A database handle of its own: the walk's cursor is per handle, so this walk starts at the oldest run.
    const db = { prepare: (q: string) => env.DB.prepare(q), batch: (s: D1PreparedStatement[]) => env.DB.batch(s) } as D1Database;
    const ids = async () => (await agentRuns(agentName)).results.map((r) => r.fiber_id);
    // A budget of 2 (pace 2 x 1 added): the two oldest runs go first, of two kinds.
    await paceRetention(db, { ...KEEP, pace: 2, added: { runs: 1 }, agents: [], now });
    expect(await ids()).toEqual(all.slice(2).map((r) => r.id));
    for (let i = 0; i < 10 && (await ids()).length > 4; i++) await paceRetention(db, { ...KEEP, pace: 20, added: { runs: 1 }, agents: [], now });
    expect(await ids()).toEqual(all.filter((r) => r.outcome === null).map((r) => r.id));
  });

  it("with nothing due, a slice reads a bounded number of rows", async () => {
    const now = Date.now();
    const added = { runs: 5, incidents: 5, sessions: 5, op_ambiguities: 5, workspace_backups: 5, event_rollups: 5, respent_rollups: 5, event_segments: 5 };
    const agents = [{ agentClass: "ProbeAgent", agentName: `idle-${crypto.randomUUID().slice(0, 8)}` }];
    // Drain whatever earlier tests left due, then measure a slice that finds nothing.
    let r: PaceResult | null = null;
    for (let i = 0; i < 500; i++) {
      r = await paceRetention(env.DB, { ...KEEP, pace: 10, added, agents, now });
      if (Object.values(r.deleted).every((n) => n === 0)) break;
    }
    expect(Object.values(r!.deleted).every((n) => n === 0)).toBe(true);
    console.log(`[pace] a slice with nothing due: ${r!.rowsRead} rows read, ${r!.statements} statements`);
    // Three walked tables scan at most 4 x 50 entries each (with their rows); the direct deletes read ~1 row each.
    expect(r!.rowsRead).toBeLessThanOrEqual(3 * 2 * 50 * WALK_SCAN_FACTOR + 20);
  });

  it("runs after every batch the Queue consumer stores (RETENTION_PACE; 0 leaves it to the cron)", async () => {
    const agentName = `pace-consumer-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    await seedSegments(agentName, 5, now - 60 * HOUR);
    const send = async (settings: Record<string, string>, i: number) => {
      const e = { ...makeEvent("session.status_idle", { turnSeq: i }, { agentName, time: now - 1000 + i, corr: { sessionName: agentName } }), seq: 100 + i };
      const batch = createMessageBatch("agent-telemetry", [{ id: `${agentName}-${i}`, timestamp: new Date(), attempts: 1, body: e }]);
      await handleTelemetryBatch(batch, { ...env, ...settings });
      expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
    };
    await send({ RETENTION_PACE: "0" }, 1);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ? AND time_to < ?", agentName, now - 48 * HOUR)).toBe(5);
    // Paced: one segment added, so up to RETENTION_PACE of this agent's old segments go with the batch.
    await send({ RETENTION_PACE: "5" }, 2);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ? AND time_to < ?", agentName, now - 48 * HOUR)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ?", agentName)).toBe(2);
  });

  it("deletes closed incidents with their re-spent tokens after the hot window, walking past open ones oldest first (incidents_kind over the kinds)", async () => {
    const agentName = `pace-inc-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    const old = now - 60 * HOUR;
    const rows = [
      ...Array.from({ length: 20 }, (_, i) => [`open-${String(i).padStart(2, "0")}`, "open", old - 1000 + i]),
      ...Array.from({ length: 8 }, (_, i) => [`closed-${i}`, "exhausted", old + i]),
      ["closed-hot", "recovered", now - HOUR],
    ] as [string, string, number][];
    await env.DB.batch(
      rows.flatMap(([id, status, t]) => [
        env.DB.prepare(
          "INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen) VALUES (?, 'chat', 'ProbeAgent', ?, ?, ?, 'e', 1, ?, ?)",
        ).bind(id, agentName, status, t, t, t),
        env.DB.prepare(
          "INSERT INTO incident_usage (incident_id, agent_class, agent_name, attempt, calls, input_tokens, output_tokens) VALUES (?, 'ProbeAgent', ?, 1, 1, 10, 5)",
        ).bind(id, agentName),
      ]),
    );
    const closedLeft = () => count("SELECT COUNT(*) AS n FROM incidents WHERE agent_name = ? AND incident_id LIKE 'closed-_'", agentName);
    for (let i = 0; i < 200 && (await closedLeft()) > 0; i++) {
      const r = await paceRetention(env.DB, { ...KEEP, pace: 2, added: { incidents: 1 }, agents: [], now });
      expect(r.deleted.incidents ?? 0).toBeLessThanOrEqual(2);
    }
    expect(await closedLeft()).toBe(0);
    const left = await env.DB.prepare("SELECT incident_id FROM incidents WHERE agent_name = ? ORDER BY incident_id")
      .bind(agentName)
      .all<{ incident_id: string }>();
    expect(left.results.map((x) => x.incident_id)).toEqual(["closed-hot", ...rows.slice(0, 20).map((r) => r[0])].sort());
    // Usage rows went with their incidents, and only with them.
    expect(await count("SELECT COUNT(*) AS n FROM incident_usage WHERE agent_name = ?", agentName)).toBe(21);
  });
});
