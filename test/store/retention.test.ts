import { env } from "cloudflare:workers";
import { RUN_KINDS } from "@agent-oncall/telemetry/contract";
import { describe, expect, it } from "vitest";
import { eventsBy } from "../../src/store/read-models/events";
import { measureSegmentRetention, runRetention } from "../../src/store/retention";
import { makeEvent } from "../fixtures/events";
import { count } from "../helpers";
import { measureIngest } from "./hot-mix";
import { ingest } from "./store-helpers";

const DAY = 86_400_000;
const NOW = Date.now();
describe("retention", () => {
  it("deletes rows dated in the future (stored before ingest refused such times), open or not, and keeps current ones", async () => {
    // Rows as an older console stored them: ingest now refuses these times, so they are written straight into D1.
    const stmts = [
      `INSERT INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body) VALUES ('C', 'future', 1, 1, 9e15, 9e15, 1, 0, '[{"i":"future-ev","t":9e15,"y":"session.status_idle","v":1,"q":1,"p":{}}]')`,
      "INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen) VALUES ('future-inc', 'chat', 'C', 'future', 'open', 9e15, 'future-ev', 0, 9e15, 9e15)",
      "INSERT INTO sessions (session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, last_event_event_id) VALUES ('future-s', 'C', 'future', 9e15, 9e15, 'x', 9e15, 'future-ev')",
      "INSERT INTO op_ambiguities (op_id, agent_class, agent_name, first_seen, last_seen) VALUES ('future-op', 'C', 'future', 9e15, 9e15)",
      `INSERT INTO event_rollups (bucket, type, dim, n) VALUES (${9e15}, 'session.status_idle', '', 1)`,
    ];
    await env.DB.batch(stmts.map((s) => env.DB.prepare(s)));
    const current = makeEvent(
      "chat.recovery.attempt",
      { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
      { agentName: "current", time: NOW - DAY, corr: { incidentId: "current-inc", sessionName: "current-s" } },
    );
    await ingest([current]);

    const r = await runRetention(env.DB, { maxAgeDays: 30, maxFutureSkewMs: 300_000, now: NOW });
    expect(r.futureCutoff).toBe(NOW + 300_000);
    expect(r.deleted).toMatchObject({ event_segments: 1, incidents: 1, sessions: 1, op_ambiguities: 1, event_rollups: 1 });
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

  it("keeps timelines for the hot window only (HOT_WINDOW_HOURS, default 48), and projections for the retention period", async () => {
    const agentName = `hot-${crypto.randomUUID().slice(0, 6)}`;
    const corr = { sessionName: agentName };
    const old = makeEvent("session.status_running", { turnSeq: 1 }, { agentName, time: NOW - 13 * 3_600_000, corr });
    const recent = makeEvent("session.status_idle", { turnSeq: 1 }, { agentName, time: NOW - 3_600_000, corr });
    await ingest([{ ...old, seq: 1 }]);
    await ingest([{ ...recent, seq: 2 }]);
    const r = await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 12, now: NOW });
    expect(r.hotCutoff).toBe(NOW - 12 * 3_600_000);
    const owner = { agentClass: "ProbeAgent", agentName };
    const timeline = await eventsBy(env.DB, { tag: "t", column: "sessionName", value: agentName, owner, dir: "ASC" });
    expect(timeline.items.map((e) => e.id)).toEqual([recent.id]);
    // The session itself is a projection: kept for the retention period.
    expect(await count("SELECT COUNT(*) AS n FROM sessions WHERE session_name = ?", agentName)).toBe(1);
  });

  it("keeps alarm wakes that published nothing for the hot window only (/awake reads their last hour)", async () => {
    const objectId = `obj-${crypto.randomUUID().slice(0, 8)}`;
    const at = [NOW - 13 * 3_600_000, NOW - 3_600_000, 9e15];
    await env.DB.batch(
      at.map((t) => env.DB.prepare("INSERT INTO silent_wakes (worker, object_id, at, agent_class) VALUES ('', ?, ?, 'KeptAgent')").bind(objectId, t)),
    );
    await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 12, now: NOW });
    const left = await env.DB.prepare("SELECT at FROM silent_wakes WHERE object_id = ?").bind(objectId).all<{ at: number }>();
    expect(left.results.map((r) => r.at)).toEqual([NOW - 3_600_000]);
  });

  it("deletes finished runs once their last activity leaves the hot window, and keeps open runs for the retention period", async () => {
    const agentName = `runs-${crypto.randomUUID().slice(0, 6)}`;
    const HOUR = 3_600_000;
    const at = (fiberId: string, hoursAgo: number, type: "fiber.started" | "fiber.completed", seq: number) => ({
      ...makeEvent(type, { fiberName: "etl" }, { agentName, time: NOW - hoursAgo * HOUR, corr: { fiberId } }),
      seq,
    });
    // done-old: finished 50 h ago; open-old: started 50 h ago, never finished; done-recent: started 50 h ago,
    // finished 2 h ago (first_seen old, last activity hot); open-ancient: open, last seen 31 days ago.
    await ingest([at("done-old", 51, "fiber.started", 1), at("done-old", 50, "fiber.completed", 2)]);
    await ingest([at("open-old", 50, "fiber.started", 3)]);
    await ingest([at("done-recent", 50, "fiber.started", 4), at("done-recent", 2, "fiber.completed", 5)]);
    await ingest([at("open-ancient", 31 * 24, "fiber.started", 6)]);
    const r = await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48, now: NOW });
    expect(r.deleted.runs).toBe(2);
    const left = await env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ? ORDER BY fiber_id").bind(agentName).all<{ fiber_id: string }>();
    expect(left.results.map((x) => x.fiber_id)).toEqual(["done-recent", "open-old"]);
  });

  it("finds due runs of every kind (each kind is its own arm of runs_kind), oldest first across the kinds", async () => {
    const agentName = `kinds-${crypto.randomUUID().slice(0, 6)}`;
    const HOUR = 3_600_000;
    // Per kind: one finished 50 h ago (due), one finished 2 h ago (hot), one open 50 h ago (kept for the retention period).
    const rows = RUN_KINDS.flatMap((kind, k) => [
      { id: `${kind}-due`, kind, outcome: "completed", first: NOW - (60 + k) * HOUR, last: NOW - 50 * HOUR },
      { id: `${kind}-hot`, kind, outcome: "failed", first: NOW - (60 + k) * HOUR, last: NOW - 2 * HOUR },
      { id: `${kind}-open`, kind, outcome: null, first: NOW - (60 + k) * HOUR, last: NOW - 50 * HOUR },
    ]);
    await env.DB.batch(
      rows.map((r) =>
        env.DB.prepare(
          "INSERT INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, first_seen, last_seen, listed_at) VALUES (?, 'ProbeAgent', ?, ?, 'job', ?, ?, ?, ?)",
        ).bind(r.id, agentName, r.kind, r.outcome, r.first, r.last, r.last),
      ),
    );
    // Batches of one: each statement deletes the oldest due run left (of any agent), whatever its kind.
    const order: string[] = [];
    for (let i = 0; i < 20 && order.length < RUN_KINDS.length; i++) {
      const before = new Set(
        (await env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ?").bind(agentName).all<{ fiber_id: string }>()).results.map((x) => x.fiber_id),
      );
      await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48, now: NOW, batchSize: 1, maxBatches: 1 });
      const after = new Set(
        (await env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ?").bind(agentName).all<{ fiber_id: string }>()).results.map((x) => x.fiber_id),
      );
      order.push(...[...before].filter((id) => !after.has(id)));
    }
    // Oldest first: the kind seeded longest ago (the last) goes first.
    expect(order).toEqual([...RUN_KINDS].reverse().map((k) => `${k}-due`));
    const left = await env.DB.prepare("SELECT fiber_id FROM runs WHERE agent_name = ? ORDER BY fiber_id").bind(agentName).all<{ fiber_id: string }>();
    expect(left.results.map((x) => x.fiber_id)).toEqual(RUN_KINDS.flatMap((k) => [`${k}-hot`, `${k}-open`]).sort());
  });

  it("deletes segments at more than 10x the rate ingest stores them", async () => {
    const ingestStart = performance.now();
    const m = await measureIngest(env.DB, { agents: 8, batches: 40, perMessage: 6, prefix: `ret-${crypto.randomUUID().slice(0, 6)}` });
    const ingestSeconds = (performance.now() - ingestStart) / 1000;
    const d = await measureSegmentRetention(env.DB, Date.now() + 3_600_000, Date.now() + 7_200_000);
    const ingestRate = m.events / ingestSeconds;
    console.log(
      `[retention] ingest ${Math.round(ingestRate)} events/s; retention ${Math.round(d.segmentsPerSecond)} segments/s = ${Math.round(d.eventsPerSecond)} events/s (${(d.eventsPerSecond / ingestRate).toFixed(1)}x ingest, ${d.statements} statements)`,
    );
    expect(d.events).toBeGreaterThanOrEqual(m.events);
    expect(d.eventsPerSecond).toBeGreaterThan(10 * ingestRate);
  });

  it("deletes closed incidents (with their re-spent tokens), resolved ops and long-expired backups after the hot window; open and unresolved ones stay", async () => {
    const agentName = `closed-${crypto.randomUUID().slice(0, 6)}`;
    const HOUR = 3_600_000;
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    let seq = 0;
    const at = (e: ReturnType<typeof makeEvent>) => ({ ...e, seq: ++seq });
    const inc = (incidentId: string, hoursAgo: number, closed: boolean) => [
      at(makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, time: NOW - (hoursAgo + 1) * HOUR, corr: { incidentId } })),
      at(
        makeEvent("model.usage", { inputTokens: 10, outputTokens: 5, attempt: 1 }, { agentName, time: NOW - (hoursAgo + 1) * HOUR + 1, corr: { incidentId } }),
      ),
      ...(closed ? [at(makeEvent("chat.recovery.completed", { ...base, attempt: 1 }, { agentName, time: NOW - hoursAgo * HOUR, corr: { incidentId } }))] : []),
    ];
    const op = (opId: string, hoursAgo: number, resolved: boolean) => [
      at(makeEvent("op.ambiguous", { opKind: "charge", detail: "?" }, { agentName, time: NOW - (hoursAgo + 1) * HOUR, corr: { opId } })),
      ...(resolved
        ? [at(makeEvent("op.resolved", { opKind: "charge", resolution: "verified_ran" }, { agentName, time: NOW - hoursAgo * HOUR, corr: { opId } }))]
        : []),
    ];
    const backup = (handle: string, hoursAgo: number, expiresInHours: number) =>
      at(
        makeEvent(
          "backup.created",
          { handle, tenant: "t", environment: "e", sessionName: agentName, expiresAt: NOW - hoursAgo * HOUR + expiresInHours * HOUR },
          { agentName, time: NOW - hoursAgo * HOUR },
        ),
      );
    await ingest([
      ...inc("closed-old", 50, true),
      ...inc("closed-recent", 10, true),
      ...inc("open-old", 50, false),
      ...op("resolved-old", 50, true),
      ...op("resolved-recent", 10, true),
      ...op("unresolved-old", 50, false),
      // Expired 52 h ago (past the hot window); expired 2 h ago; not expired.
      backup("expired-long", 100, 48),
      backup("expired-recent", 50, 48),
      backup("live", 50, 24 * 7),
    ]);
    const r = await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48, now: NOW });
    expect(r.deleted.incident_usage).toBeGreaterThanOrEqual(1);
    const ids = async (sql: string) => (await env.DB.prepare(sql).bind(agentName).all<{ id: string }>()).results.map((x) => x.id).sort();
    expect(await ids("SELECT incident_id AS id FROM incidents WHERE agent_name = ?")).toEqual(["closed-recent", "open-old"]);
    expect(await ids("SELECT DISTINCT incident_id AS id FROM incident_usage WHERE agent_name = ?")).toEqual(["closed-recent", "open-old"]);
    expect(await ids("SELECT op_id AS id FROM op_ambiguities WHERE agent_name = ?")).toEqual(["resolved-recent", "unresolved-old"]);
    expect(await ids("SELECT handle AS id FROM workspace_backups WHERE agent_name = ?")).toEqual(["expired-recent", "live"]);
  });

  it("deletes an incident a force idle closed (the shown status) after the hot window, like one the SDK closed", async () => {
    const agentName = `overlay-${crypto.randomUUID().slice(0, 6)}`;
    await env.DB.prepare(
      "INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen, closed_by, closed_by_at, closed_by_event_id) VALUES ('idled', 'chat', 'ProbeAgent', ?1, 'open', ?2, 'a', 1, ?2, ?2, 'force_idled', ?2 + 1, 'b'), ('still-open', 'chat', 'ProbeAgent', ?1, 'open', ?2, 'a', 1, ?2, ?2, NULL, NULL, NULL)",
    )
      .bind(agentName, NOW - 60 * 3_600_000)
      .run();
    await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48, now: NOW });
    const left = await env.DB.prepare("SELECT incident_id FROM incidents WHERE agent_name = ?").bind(agentName).all<{ incident_id: string }>();
    expect(left.results.map((x) => x.incident_id)).toEqual(["still-open"]);
  });
});
