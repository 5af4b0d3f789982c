import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { runRetention } from "../../src/store/retention";
import { makeEvent } from "../fixtures/events";
import { shuffled } from "../fixtures/seeded-random";
import { ingest } from "./store-helpers";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0); // on a 5-minute boundary
const MIN = 60_000;

async function sessionRow(name: string) {
  return env.DB.prepare(
    "SELECT session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, status, status_at, recovery_count, last_turn_seq FROM sessions WHERE session_name = ?",
  )
    .bind(name)
    .first();
}

async function rollups(type?: string) {
  const r = await env.DB.prepare(`SELECT bucket, type, dim, n FROM event_rollups ${type ? "WHERE type = ?" : ""} ORDER BY bucket, type, dim`)
    .bind(...(type ? [type] : []))
    .all<{ bucket: number; type: string; dim: string; n: number }>();
  return r.results;
}

/** A session's life: a turn that is rescheduled twice, an ambiguous op, then idle, a second turn, and a backup. */
function sessionLife(session: string): TelemetryEvent[] {
  const at = (m: number) => T0 + m * MIN;
  const o = (m: number, extra: Partial<TelemetryEvent["corr"]> = {}) => ({ agentName: session, time: at(m), corr: { sessionName: session, ...extra } });
  const turn1 = { incidentId: `turn:ProbeAgent/${session}/1` };
  return [
    makeEvent("session.status_running", { turnSeq: 1 }, o(1)),
    makeEvent("session.status_rescheduled", { turnSeq: 1, recoveryCount: 1 }, o(2, turn1)),
    makeEvent("session.status_rescheduled", { turnSeq: 1, recoveryCount: 2 }, o(3, turn1)),
    makeEvent("op.ambiguous", { opKind: "tool.charge", turnSeq: 1, detail: "started, no completion" }, o(4, { opId: `${session}-op1` })),
    makeEvent("session.status_running", { turnSeq: 1, detail: "resumed after eviction" }, o(5)),
    makeEvent("session.status_idle", { turnSeq: 1 }, o(6, turn1)),
    makeEvent("session.status_running", { turnSeq: 2 }, o(7)),
    makeEvent("backup.created", { handle: `${session}/b1`, tenant: "t", environment: "dev", sessionName: session, expiresAt: at(100) }, o(8)),
  ];
}

describe("sessions projection", () => {
  it("records the last reported status, the last event, the recovery count and the last turn", async () => {
    const s = "sess-basic";
    await ingest(sessionLife(s));
    expect(await sessionRow(s)).toEqual({
      session_name: s,
      agent_class: "ProbeAgent",
      agent_name: s,
      first_seen: T0 + MIN,
      last_seen: T0 + 8 * MIN,
      last_event_type: "backup.created",
      last_event_at: T0 + 8 * MIN,
      status: "running",
      status_at: T0 + 7 * MIN,
      recovery_count: 2,
      last_turn_seq: 2,
    });
  });

  it("gives the same row whatever order and batching the events arrive in, and under redelivery", async () => {
    let reference: unknown = null;
    for (const seed of [3, 11, 97, 2024]) {
      const s = `sess-order-${seed}`;
      const events = shuffled(sessionLife(s), seed);
      for (let i = 0; i < events.length; i += 3) await ingest(events.slice(i, i + 3));
      await ingest(events.slice(0, 4)); // a redelivery
      const { session_name, agent_name, ...row } = (await sessionRow(s))!;
      if (reference === null) reference = row;
      else expect(row).toEqual(reference);
    }
    expect(reference).toMatchObject({ status: "running", last_event_type: "backup.created", recovery_count: 2, last_turn_seq: 2 });
  });

  it("maps every status event type and breaks same-millisecond ties by event id", async () => {
    const cases: [TelemetryEvent["type"], string][] = [
      ["session.status_running", "running"],
      ["session.status_idle", "idle"],
      ["session.status_rescheduled", "rescheduled"],
      ["session.status_terminated", "terminated"],
      ["session.error", "error"],
    ];
    for (const [type, status] of cases) {
      const s = `sess-map-${status}`;
      const payload = type === "session.error" ? { error: "gave up" } : {};
      await ingest([makeEvent(type, payload as never, { agentName: s, time: T0, corr: { sessionName: s } })]);
      expect((await sessionRow(s))!.status).toBe(status);
    }
    // Two status events in the same millisecond: the larger event id wins, in either arrival order.
    for (const flip of [false, true]) {
      const s = `sess-tie-${flip}`;
      const idle = { ...makeEvent("session.status_idle", {}, { agentName: s, time: T0, corr: { sessionName: s } }), id: `${T0}-a-idle-${flip}` };
      const err = { ...makeEvent("session.error", { error: "x" }, { agentName: s, time: T0, corr: { sessionName: s } }), id: `${T0}-b-error-${flip}` };
      await ingest(flip ? [err] : [idle]);
      await ingest(flip ? [idle] : [err]);
      expect(await sessionRow(s)).toMatchObject({ status: "error", last_event_type: "session.error" });
    }
    // A later non-status event moves the last event but not the status; an op-only session has no status yet.
    await ingest([
      makeEvent("op.started", { opKind: "x" }, { agentName: "sess-map-idle", time: T0 + MIN, corr: { sessionName: "sess-map-idle", opId: "o-1" } }),
    ]);
    expect(await sessionRow("sess-map-idle")).toMatchObject({ status: "idle", last_event_type: "op.started", last_event_at: T0 + MIN, recovery_count: 0 });
    await ingest([makeEvent("op.started", { opKind: "x" }, { agentName: "op-only", time: T0, corr: { sessionName: "sess-op-only", opId: "o-2" } })]);
    expect(await sessionRow("sess-op-only")).toMatchObject({
      status: null,
      status_at: null,
      last_event_type: "op.started",
      recovery_count: 0,
      last_turn_seq: null,
    });
  });

  it("ignores events without a session name and non-session events", async () => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions").first<{ n: number }>();
    await ingest([
      makeEvent("session.status_idle", {}, { agentName: "nameless", time: T0 }),
      makeEvent("chat.stream.stalled", { timeoutMs: 5 }, { agentName: "nameless", time: T0, corr: { sessionName: "sess-chat" } }),
    ]);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions").first<{ n: number }>()).toEqual(before);
  });
});

describe("event_rollups", () => {
  const B = T0 + 24 * 60 * MIN; // a day of its own
  function batch(): TelemetryEvent[] {
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    const o = (m: number, corr: TelemetryEvent["corr"] = {}) => ({ agentName: "rollup", time: B + m * MIN, corr });
    return [
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: "no_progress_timeout" }, o(0, { incidentId: "r-1" })),
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: "no_progress_timeout" }, o(1, { incidentId: "r-2" })),
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: "max_attempts_exceeded" }, o(4, { incidentId: "r-3" })),
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: "no_progress_timeout" }, o(6, { incidentId: "r-4" })),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o(2, { incidentId: "r-1" })),
      makeEvent("chat.recovery.skipped", { ...base, attempt: 1 }, o(2, { incidentId: "r-5" })),
      makeEvent("fiber.recovery.failed", { fiberName: "etl", error: "boom", reason: "handler_error" }, o(3, { fiberId: "f-1" })),
      makeEvent("fiber.recovery.skipped", { fiberName: "etl", reason: "not_resumable" }, o(3, { fiberId: "f-2" })),
      makeEvent("op.ambiguous", { opKind: "charge", detail: "?" }, o(9, { opId: "op-r" })),
    ];
  }
  const expected = [
    { bucket: B, type: "chat.recovery.attempt", dim: "", n: 1 },
    { bucket: B, type: "chat.recovery.exhausted", dim: "max_attempts_exceeded", n: 1 },
    { bucket: B, type: "chat.recovery.exhausted", dim: "no_progress_timeout", n: 2 },
    { bucket: B, type: "chat.recovery.skipped", dim: "", n: 1 },
    { bucket: B, type: "fiber.recovery.failed", dim: "handler_error", n: 1 },
    { bucket: B, type: "fiber.recovery.skipped", dim: "not_resumable", n: 1 },
    { bucket: B + 5 * MIN, type: "chat.recovery.exhausted", dim: "no_progress_timeout", n: 1 },
    { bucket: B + 5 * MIN, type: "op.ambiguous", dim: "", n: 1 },
  ];
  const inDay = async () => (await rollups()).filter((r) => r.bucket >= B && r.bucket < B + 86_400_000);

  it("counts each event once per 5-minute bucket, type and reason, and not again when the batch is redelivered", async () => {
    const events = batch();
    await ingest(events);
    expect(await inDay()).toEqual(expected);
    await ingest(events); // the same batch again
    await ingest(shuffled(events, 5).slice(0, 4)); // part of it, in another order
    expect(await inDay()).toEqual(expected);
  });

  it("counts an event that appears twice in one batch once, and adds only the new ones of a mixed batch", async () => {
    const old = batch()[0]!; // stored first, so it is "already seen" in the mixed batch below
    await ingest([old]);
    const before = await inDay();
    const fresh = makeEvent(
      "chat.recovery.exhausted",
      { maxAttempts: 3, recoveryKind: "retry", attempt: 3, reason: "stable_timeout" },
      { agentName: "rollup", time: B + 7 * MIN },
    );
    await ingest([fresh, fresh, old, old, fresh]);
    const after = await inDay();
    const n = (rows: typeof after, dim: string, bucket: number) =>
      rows.find((r) => r.dim === dim && r.bucket === bucket && r.type === "chat.recovery.exhausted")?.n ?? 0;
    expect(n(after, "stable_timeout", B + 5 * MIN)).toBe(n(before, "stable_timeout", B + 5 * MIN) + 1);
    expect(n(after, "no_progress_timeout", B)).toBe(n(before, "no_progress_timeout", B));
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM events WHERE id = ?").bind(fresh.id).first<{ n: number }>()).toEqual({ n: 1 });
  });

  it("keeps the rollup in step with the stored events for any batching", async () => {
    const events = Array.from({ length: 120 }, (_, i) =>
      makeEvent("chat.context.compacted", { mode: "proactive", shortened: true }, { agentName: "rollup-many", time: B + 30 * MIN + i * 7_000 }),
    );
    const order = shuffled([...events, ...events.slice(0, 50)], 77);
    for (let i = 0; i < order.length; i += 17) await ingest(order.slice(i, i + 17));
    const stored = await env.DB.prepare(
      "SELECT (time / 300000) * 300000 AS bucket, COUNT(*) AS n FROM events WHERE agent_name = 'rollup-many' GROUP BY 1 ORDER BY 1",
    ).all<{ bucket: number; n: number }>();
    const rolled = (await rollups("chat.context.compacted")).filter((r) => r.bucket >= B && r.bucket < B + 86_400_000).map(({ bucket, n }) => ({ bucket, n }));
    expect(rolled).toEqual(stored.results);
    expect(rolled.reduce((s, r) => s + r.n, 0)).toBe(120);
  });

  it("ages out with retention", async () => {
    const old = T0 - 40 * 86_400_000;
    await ingest([
      makeEvent("op.ambiguous", { opKind: "x", detail: "old" }, { agentName: "old", time: old, corr: { opId: "op-old", sessionName: "sess-old" } }),
    ]);
    expect((await rollups()).some((r) => r.bucket <= old)).toBe(true);
    const r = await runRetention(env.DB, { maxAgeDays: 30, now: T0 });
    expect(r.deleted.event_rollups).toBeGreaterThan(0);
    expect(r.deleted.sessions).toBeGreaterThan(0);
    expect((await rollups()).some((x) => x.bucket < T0 - 30 * 86_400_000)).toBe(false);
    expect(await sessionRow("sess-old")).toBeNull();
  });
});

describe("events.timeline_id", () => {
  it("is the reported incident id, else the derived fiber or turn incident id", async () => {
    const s = "timeline-agent";
    const events = [
      makeEvent("fiber.started", { fiberName: "etl" }, { agentName: s, time: T0, corr: { fiberId: "fx" } }),
      makeEvent("fiber.recovery.attempt", { fiberName: "etl" }, { agentName: s, time: T0, corr: { fiberId: "fx", incidentId: `fiber:ProbeAgent/${s}/fx` } }),
      makeEvent("session.status_running", { turnSeq: 4 }, { agentName: s, time: T0, corr: { sessionName: s } }),
      makeEvent("op.started", { opKind: "x", turnSeq: 4 }, { agentName: s, time: T0, corr: { sessionName: s, opId: "o-t" } }),
      makeEvent("chat.recovery.attempt", { attempt: 1, maxAttempts: 2, recoveryKind: "retry" }, { agentName: s, time: T0, corr: { incidentId: "chat-x" } }),
      makeEvent("session.status_idle", {}, { agentName: s, time: T0, corr: { sessionName: s } }),
    ];
    await ingest(events);
    const rows = await env.DB.prepare("SELECT type, timeline_id FROM events WHERE agent_name = ? ORDER BY id").bind(s).all();
    expect(rows.results).toEqual([
      { type: "fiber.started", timeline_id: `fiber:ProbeAgent/${s}/fx` },
      { type: "fiber.recovery.attempt", timeline_id: `fiber:ProbeAgent/${s}/fx` },
      { type: "session.status_running", timeline_id: `turn:ProbeAgent/${s}/4` },
      { type: "op.started", timeline_id: `turn:ProbeAgent/${s}/4` },
      { type: "chat.recovery.attempt", timeline_id: "chat-x" },
      { type: "session.status_idle", timeline_id: null },
    ]);
  });
});
