import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bulkTargets } from "../../src/store/read-models/bulk-targets";
import { isBadRequest } from "../../src/store/read-models/errors";

/**
 * Target selection for bulk actions over seeded projections (the shapes ingest writes): every criterion, their
 * intersection, the cap and the count. Rows are seeded per test file, under a class of their own.
 */

const T0 = Date.UTC(2026, 10, 1);
const K = "BulkSeed";

beforeAll(async () => {
  // 12 agents. Incidents: agents 0..5 have reason "loop" (even ones still open), 6..11 reason "budget".
  // Runs: agents 0..3 have a run with no outcome. Sessions: agents 2, 4 and 6 are running, 8 rescheduled, 10 idle.
  const stmts: D1PreparedStatement[] = [];
  for (let i = 0; i < 12; i++) {
    const name = `agent-${String(i).padStart(2, "0")}`;
    stmts.push(
      env.DB.prepare("INSERT INTO agents (agent_class, agent_name, first_seen, last_seen, listed_at) VALUES (?, ?, ?, ?, ?)").bind(
        K,
        name,
        T0,
        T0 + i,
        T0 + i - ((T0 + i) % 60_000),
      ),
    );
    stmts.push(
      env.DB.prepare(
        `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, reason, first_seen, last_seen)
         VALUES (?, 'chat', ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
      ).bind(`inc-${i}`, K, name, i % 2 === 0 ? "open" : "exhausted", T0, `ev-${i}`, i < 6 ? "loop" : "budget", T0, T0 + i),
    );
    if (i < 4) {
      stmts.push(
        env.DB.prepare(`INSERT INTO runs (fiber_id, agent_class, agent_name, name, first_seen, last_seen) VALUES (?, ?, ?, 'job', ?, ?)`).bind(
          `run-${i}`,
          K,
          name,
          T0,
          T0 + i,
        ),
      );
    }
    const status = i === 2 || i === 4 || i === 6 ? "running" : i === 8 ? "rescheduled" : i === 10 ? "idle" : null;
    if (status) {
      stmts.push(
        env.DB.prepare(
          `INSERT INTO sessions (session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, last_event_event_id, status)
           VALUES (?, ?, ?, ?, ?, 'session.status_running', ?, ?, ?)`,
        ).bind(name, K, name, T0, T0 + i, T0, `sev-${i}`, status),
      );
    }
  }
  await env.DB.batch(stmts);
});

const names = (r: { targets: { agentName: string }[] }) => r.targets.map((t) => t.agentName);
const agents = (...ns: number[]) => ns.map((i) => `agent-${String(i).padStart(2, "0")}`);

describe("bulk target selection", () => {
  it("selects by class, by incident reason (open only or not), by status, and by all of them at once", async () => {
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K }))).toEqual(agents(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K, incidentReason: "loop" }))).toEqual(agents(0, 1, 2, 3, 4, 5));
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K, incidentReason: "loop", openOnly: "true" }))).toEqual(agents(0, 2, 4));
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K, status: "running_runs" }))).toEqual(agents(0, 1, 2, 3));
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K, status: "open_incidents" }))).toEqual(agents(0, 2, 4, 6, 8, 10));
    // Running or rescheduled; the idle one is not.
    expect(names(await bulkTargets(env.DB, T0, { agentClass: K, status: "running_sessions" }))).toEqual(agents(2, 4, 6, 8));
    const all = await bulkTargets(env.DB, T0, { agentClass: K, incidentReason: "loop", openOnly: "1", status: "running_runs" });
    expect(all.targets).toEqual([
      {
        agentClass: K,
        agentName: "agent-00",
        matched: {
          agentClass: true,
          incidentReason: { reason: "loop", openOnly: true, count: 1, capped: false },
          status: { status: "running_runs", count: 1, capped: false },
        },
        stuck: null,
      },
      {
        agentClass: K,
        agentName: "agent-02",
        matched: {
          agentClass: true,
          incidentReason: { reason: "loop", openOnly: true, count: 1, capped: false },
          status: { status: "running_runs", count: 1, capped: false },
        },
        stuck: null,
      },
    ]);
    expect(all).toMatchObject({ total: 2, capped: false });
  });

  it("caps the list and still counts every match", async () => {
    const r = await bulkTargets(env.DB, T0, { agentClass: K }, { cap: 5 });
    expect(names(r)).toEqual(agents(0, 1, 2, 3, 4));
    expect(r).toMatchObject({ total: 12, capped: true });
  });

  it("refuses an empty filter, unknown values and openOnly without a reason, naming the problem", async () => {
    const problem = async (f: Record<string, string>) => {
      try {
        await bulkTargets(env.DB, T0, f);
      } catch (e) {
        expect(isBadRequest(e)).toBe(true);
        return (e as Error).message;
      }
      throw new Error("expected a BadRequest");
    };
    expect(await problem({})).toContain("choose at least one filter");
    expect(await problem({ agentClass: "", incidentReason: "" })).toContain("choose at least one filter");
    expect(await problem({ status: "sleeping" })).toContain('status must be one of running_runs, open_incidents, running_sessions (got "sleeping")');
    expect(await problem({ stuckRule: "slow" })).toContain("stuckRule must be one of no_progress, incident_no_attempt, alarm_overdue, skipped_no_reason");
    expect(await problem({ openOnly: "true", agentClass: K })).toContain("openOnly narrows an incident reason");
  });
});
