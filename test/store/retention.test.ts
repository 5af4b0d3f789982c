import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runRetention } from "../../src/store/retention";
import { makeEvent } from "../fixtures/events";
import { ingest } from "./store-helpers";

const DAY = 86_400_000;
const NOW = Date.now();
const count = async (sql: string, ...binds: unknown[]) => Number((await env.DB.prepare(sql).bind(...binds).first<{ n: number }>())!.n);

describe("retention", () => {
  it("deletes rows dated in the future (stored before ingest refused such times), open or not, and keeps current ones", async () => {
    // Rows as an older console stored them: ingest now refuses these times, so they are written straight into D1.
    const stmts = [
      "INSERT INTO events (id, time, type, v, agent_class, agent_name, payload, received_at) VALUES ('future-ev', 9e15, 'session.status_idle', 1, 'C', 'future', '{}', 0)",
      "INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen) VALUES ('future-inc', 'chat', 'C', 'future', 'open', 9e15, 'future-ev', 0, 9e15, 9e15)",
      "INSERT INTO sessions (session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, last_event_event_id) VALUES ('future-s', 'C', 'future', 9e15, 9e15, 'x', 9e15, 'future-ev')",
      "INSERT INTO op_ambiguities (op_id, agent_class, agent_name, first_seen, last_seen) VALUES ('future-op', 'C', 'future', 9e15, 9e15)",
      `INSERT INTO event_rollups (bucket, type, dim, n) VALUES (${9e15}, 'session.status_idle', '', 1)`,
    ];
    await env.DB.batch(stmts.map((s) => env.DB.prepare(s)));
    const current = makeEvent("chat.recovery.attempt", { attempt: 1, maxAttempts: 3, recoveryKind: "retry" }, { agentName: "current", time: NOW - DAY, corr: { incidentId: "current-inc", sessionName: "current-s" } });
    await ingest([current]);

    const r = await runRetention(env.DB, { maxAgeDays: 30, maxFutureSkewMs: 300_000, now: NOW });
    expect(r.futureCutoff).toBe(NOW + 300_000);
    expect(r.deleted).toMatchObject({ events: 1, incidents: 1, sessions: 1, op_ambiguities: 1, event_rollups: 1 });
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE time > ?", NOW)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM incidents WHERE agent_name = 'future'")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE id = ?", current.id)).toBe(1);
    expect(await count("SELECT COUNT(*) AS n FROM incidents WHERE incident_id = 'current-inc'")).toBe(1);
  });

  it("deletes an old projection row of one agent without touching another agent's row under the same id", async () => {
    const base = { attempt: 1, maxAttempts: 3, recoveryKind: "retry" as const };
    const old = makeEvent("chat.recovery.completed", base, { agentName: "old-owner", time: NOW - 40 * DAY, corr: { incidentId: "shared-inc" } });
    const fresh = makeEvent("chat.recovery.completed", base, { agentName: "new-owner", time: NOW - DAY, corr: { incidentId: "shared-inc" } });
    await ingest([old]);
    await ingest([fresh]);
    expect(await count("SELECT COUNT(*) AS n FROM incidents WHERE incident_id = 'shared-inc'")).toBe(2);
    await runRetention(env.DB, { maxAgeDays: 30, now: NOW });
    const left = await env.DB.prepare("SELECT agent_name FROM incidents WHERE incident_id = 'shared-inc'").all<{ agent_name: string }>();
    expect(left.results).toEqual([{ agent_name: "new-owner" }]);
  });
});
