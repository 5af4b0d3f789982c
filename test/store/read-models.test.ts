import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { writeAudit } from "../../src/store/audit";
import { findAgent, listAgents } from "../../src/store/read-models/agents";
import { listAudit } from "../../src/store/read-models/audit";
import { listBackups } from "../../src/store/read-models/backups";
import { BadRequest, isBadRequest } from "../../src/store/read-models/errors";
import { getIncident, groupIncidents, incidentFilters, incidentTimeline, listIncidents } from "../../src/store/read-models/incidents";
import { listAmbiguousOps } from "../../src/store/read-models/ops";
import { eventSeries, overviewCounts, topReasons } from "../../src/store/read-models/overview";
import { encodeCursor, type Page, type PageOptions } from "../../src/store/read-models/paging";
import { getStoredRun, listRuns, runEvents } from "../../src/store/read-models/runs";
import { getSession, listSessions, sessionTimeline } from "../../src/store/read-models/sessions";
import { chatIncidentLife, fiberLife, makeEvent } from "../fixtures/events";
import { desc, ingest, ingestIn, rejection, walk } from "./store-helpers";

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 3, 0, 0, 0);
const NOW = T0 + 3 * 60 * MIN;
const CLASSES = ["ProbeAgent", "SupportAgent"];
const NAMES = ["alpha", "beta", "gamma", "delta"];
const REASONS = ["no_progress_timeout", "max_attempts_exceeded", "stable_timeout"];

/** The agent a timeline belongs to (makeEvent always says ProbeAgent). */
const probeAgent = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });

/** Re-labels an event's source (makeEvent always says ProbeAgent). */
const from = (e: TelemetryEvent, agentClass: string, agentName: string): TelemetryEvent => ({ ...e, source: { agentClass, agentName } });

/** Incidents of every kind and status, spread over agents, reasons and time (two share a millisecond). */
function incidentEvents(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  const base = { maxAttempts: 3, recoveryKind: "retry" as const };
  for (let i = 0; i < 60; i++) {
    const cls = CLASSES[i % 2]!;
    const name = NAMES[i % 4]!;
    const time = T0 + (i === 11 ? 10 : i) * MIN;
    const reason = REASONS[Math.floor(i / 3) % 3]!;
    const kind = (["chat", "fiber", "turn"] as const)[i % 3];
    const o = (corr: TelemetryEvent["corr"]) => ({ agentName: name, time, corr });
    let e: TelemetryEvent;
    if (kind === "chat") {
      const corr = { incidentId: `chat-${i}`, requestId: `req-${i}` };
      const status = i % 5;
      e =
        status === 0
          ? makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o(corr))
          : status === 1
            ? makeEvent("chat.recovery.completed", { ...base, attempt: 2 }, o(corr))
            : status === 2
              ? makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason }, o(corr))
              : status === 3
                ? makeEvent("chat.recovery.failed", { ...base, attempt: 1, reason }, o(corr))
                : makeEvent("chat.recovery.skipped", { ...base, attempt: 1, reason }, o(corr));
    } else if (kind === "fiber") {
      const corr = { fiberId: `fi-${i}`, incidentId: `fiber:${cls}/${name}/fi-${i}` };
      const status = i % 4;
      e =
        status === 0
          ? makeEvent("fiber.recovery.attempt", { fiberName: "etl" }, o(corr))
          : status === 1
            ? makeEvent("fiber.recovery.handled", { fiberName: "etl" }, o(corr))
            : status === 2
              ? makeEvent("fiber.recovery.failed", { fiberName: "etl", error: "boom", reason }, o(corr))
              : makeEvent("fiber.recovery.skipped", { fiberName: "etl", reason }, o(corr));
    } else {
      const corr = { sessionName: `turn-sess-${i}`, incidentId: `turn:${cls}/${name}/${i}` };
      const status = i % 3;
      e =
        status === 0
          ? makeEvent("session.status_rescheduled", { turnSeq: i, recoveryCount: 1 }, o(corr))
          : status === 1
            ? makeEvent("session.status_idle", { turnSeq: i }, o(corr))
            : makeEvent("session.error", { turnSeq: i, error: "gave up" }, o(corr));
    }
    out.push(from(e, cls, name));
  }
  return out;
}

function fiberEventsSeed(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let i = 0; i < 40; i++) {
    const cls = CLASSES[i % 2]!;
    const name = NAMES[(i + 1) % 4]!;
    const time = T0 + 2 * i * MIN + 30_000;
    const corr = { fiberId: `fr-${i}` };
    out.push(from(makeEvent("fiber.started", { fiberName: `job-${i}` }, { agentName: name, time, corr }), cls, name));
    const end = i % 5;
    const t2 = { agentName: name, time: time + MIN, corr };
    if (end === 1) out.push(from(makeEvent("fiber.completed", { fiberName: `job-${i}` }, t2), cls, name));
    if (end === 2) out.push(from(makeEvent("fiber.failed", { fiberName: `job-${i}`, error: "x" }, t2), cls, name));
    if (end === 3) out.push(from(makeEvent("fiber.interrupted", { fiberName: `job-${i}` }, t2), cls, name));
    if (end === 4)
      out.push(from(makeEvent("fiber.stashed", { fiberName: `job-${i}`, snapshot: { preview: `{"i":${i}}`, bytes: 7, truncated: false } }, t2), cls, name));
  }
  return out;
}

function sessionEventsSeed(): TelemetryEvent[] {
  const types = ["session.status_running", "session.status_idle", "session.status_rescheduled", "session.status_terminated", "session.error"] as const;
  return Array.from({ length: 30 }, (_, i) => {
    const cls = CLASSES[i % 2]!;
    const type = types[i % 5]!;
    const payload = type === "session.error" ? { turnSeq: 1, error: "e" } : { turnSeq: 1 };
    return from(makeEvent(type, payload as never, { agentName: `s-${i}`, time: T0 + i * MIN + 15_000, corr: { sessionName: `s-${i}` } }), cls, `s-${i}`);
  });
}

function backupEventsSeed(): TelemetryEvent[] {
  return Array.from({ length: 30 }, (_, i) => {
    const scope = { handle: `h-${String(i).padStart(2, "0")}`, tenant: `t${i % 3}`, environment: `e${i % 2}`, sessionName: `bs-${i % 5}` };
    return makeEvent(
      "backup.created",
      { ...scope, expiresAt: NOW + (i - 15) * MIN, bytes: 100 + i },
      { agentName: scope.sessionName, time: T0 + i * MIN + 20_000, corr: { sessionName: scope.sessionName } },
    );
  });
}

function opEventsSeed(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let i = 0; i < 30; i++) {
    const corr = { opId: `op-${i}`, sessionName: `os-${i % 3}` };
    out.push(makeEvent("op.ambiguous", { opKind: "tool.charge", detail: `op ${i}` }, { agentName: `os-${i % 3}`, time: T0 + i * MIN + 25_000, corr }));
    if (i % 3 === 0)
      out.push(
        makeEvent("op.resolved", { opKind: "tool.charge", resolution: "verified_ran" }, { agentName: `os-${i % 3}`, time: T0 + i * MIN + 26_000, corr }),
      );
  }
  return out;
}

async function dump<T>(sql: string): Promise<T[]> {
  return (await env.DB.prepare(sql).all<T>()).results;
}

beforeAll(async () => {
  await ingestIn([...incidentEvents(), ...fiberEventsSeed(), ...sessionEventsSeed(), ...backupEventsSeed(), ...opEventsSeed()], 40);
  for (let i = 0; i < 30; i++) {
    await writeAudit(env.DB, {
      id: `audit-${String(i).padStart(2, "0")}`,
      time: T0 + Math.floor(i / 2) * MIN,
      actor: `op${i % 3}@example.com`,
      role: "operator",
      action: i % 2 ? "force_idle" : "trigger_alarm",
      targetClass: CLASSES[i % 2]!,
      targetName: NAMES[i % 4]!,
      reason: "testing",
      before: { status: "running" },
      after: i % 4 ? { status: "idle" } : null,
      result: (["ok", "noop", "error", "denied", "invalid"] as const)[i % 5]!,
      error: null,
    });
  }
});

// Incidents list newest first by first_seen (it never moves as an incident goes on), and since / until bound it.
type Inc = { incident_id: string; kind: string; status: string; reason: string | null; agent_class: string; agent_name: string; first_seen: number };
const allIncidents = () => dump<Inc>("SELECT incident_id, kind, status, reason, agent_class, agent_name, first_seen FROM incidents");

describe("listIncidents", () => {
  const cases: [string, Record<string, unknown>, (i: Inc) => boolean][] = [
    ["no filter", {}, () => true],
    ["kind", { kind: "turn" }, (i) => i.kind === "turn"],
    ["status", { status: "open" }, (i) => i.status === "open"],
    ["reason", { reason: "stable_timeout" }, (i) => i.reason === "stable_timeout"],
    ["agentClass", { agentClass: "SupportAgent" }, (i) => i.agent_class === "SupportAgent"],
    ["agentName", { agentName: "beta" }, (i) => i.agent_name === "beta"],
    ["agent", { agentClass: "SupportAgent", agentName: "beta" }, (i) => i.agent_class === "SupportAgent" && i.agent_name === "beta"],
    ["since (ISO)", { since: new Date(T0 + 20 * MIN).toISOString() }, (i) => i.first_seen >= T0 + 20 * MIN],
    ["until (ms string)", { until: String(T0 + 20 * MIN) }, (i) => i.first_seen <= T0 + 20 * MIN],
    ["since + until", { since: T0 + 10 * MIN, until: T0 + 40 * MIN }, (i) => i.first_seen >= T0 + 10 * MIN && i.first_seen <= T0 + 40 * MIN],
    ["status + kind (two indexes)", { status: "failed", kind: "fiber" }, (i) => i.status === "failed" && i.kind === "fiber"],
    [
      "status + reason + until",
      { status: "exhausted", reason: "no_progress_timeout", until: T0 + 50 * MIN },
      (i) => i.status === "exhausted" && i.reason === "no_progress_timeout" && i.first_seen <= T0 + 50 * MIN,
    ],
    ["empty strings are no filter", { kind: "", status: "", since: "" }, () => true],
  ];
  for (const [label, filters, match] of cases) {
    it(`pages through every match, newest first: ${label}`, async () => {
      const expected = desc(
        (await allIncidents()).filter(match),
        (i) => i.first_seen,
        (i) => i.incident_id,
      ).map((i) => i.incident_id);
      expect(expected.length).toBeGreaterThan(0);
      for (const limit of [1, 7, 200]) {
        const got = await walk(
          (p) => listIncidents(env.DB, filters, p),
          limit,
          (i) => i.incidentId,
        );
        expect(got.map((i) => i.incidentId)).toEqual(expected);
      }
    });
  }

  it("returns typed rows; ties on first_seen are ordered by id", async () => {
    const page = await listIncidents(env.DB, { until: T0 + 11 * MIN }, { limit: 3 });
    expect(page.items.map((i) => i.incidentId)).toEqual(["turn:SupportAgent/delta/11", "fiber:ProbeAgent/gamma/fi-10", "chat-9"]);
    expect(page.items[2]).toEqual({
      incidentId: "chat-9",
      kind: "chat",
      agentClass: "SupportAgent",
      agentName: "beta",
      status: "skipped",
      statusAt: T0 + 9 * MIN,
      sdkStatus: "skipped",
      sdkStatusAt: T0 + 9 * MIN,
      closedBy: null,
      closedByAt: null,
      closedByReason: null,
      attempts: 1,
      maxAttempts: 3,
      reason: "no_progress_timeout",
      fiberId: null,
      requestId: "req-9",
      confirmedAt: null,
      respentInputTokens: 0,
      respentOutputTokens: 0,
      // Its one event is a skip: the SDK's counter says attempt 1, but no attempt event arrived.
      attemptEvents: 0,
      pauseHeld: 0,
      pauseDeclined: 0,
      pauseSkippedAt: null,
      // Its events carried no Worker version.
      version: null,
      firstSeen: T0 + 9 * MIN,
      lastSeen: T0 + 9 * MIN,
    });
    expect(page.next).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await getIncident(env.DB, "chat-9")).toEqual(page.items[2]);
    expect(await getIncident(env.DB, "nope")).toBeNull();
  });

  it("is stable when newer incidents arrive between pages", async () => {
    const before = desc(
      await allIncidents(),
      (i) => i.first_seen,
      (i) => i.incident_id,
    ).map((i) => i.incident_id);
    const first = await listIncidents(env.DB, {}, { limit: 10 });
    const newer = Array.from({ length: 5 }, (_, i) =>
      makeEvent(
        "chat.recovery.attempt",
        { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
        { agentName: "late", time: T0 + (100 + i) * MIN, corr: { incidentId: `late-${i}` } },
      ),
    );
    await ingest(newer);
    const rest = await walk(
      (p) => listIncidents(env.DB, {}, { ...p, cursor: p.cursor ?? first.next }),
      10,
      (i) => i.incidentId,
    );
    expect([...first.items, ...rest].map((i) => i.incidentId)).toEqual(before);
    // A fresh walk sees them first.
    expect((await listIncidents(env.DB, {}, { limit: 5 })).items.map((i) => i.incidentId)).toEqual(["late-4", "late-3", "late-2", "late-1", "late-0"]);
  });

  it("groups incidents by reason, status, kind and agent", async () => {
    const all = await allIncidents();
    const count = (key: (i: Inc) => string, rows = all) => {
      const m = new Map<string, number>();
      for (const r of rows) m.set(key(r), (m.get(key(r)) ?? 0) + 1);
      return [...m].map(([k, n]) => ({ key: k, n })).sort((a, b) => b.n - a.n || (a.key < b.key ? -1 : 1));
    };
    expect((await groupIncidents(env.DB, {}, "status")).groups).toEqual(count((i) => i.status));
    expect((await groupIncidents(env.DB, {}, "kind")).groups).toEqual(count((i) => i.kind));
    expect((await groupIncidents(env.DB, {}, "reason")).groups).toEqual(count((i) => i.reason ?? ""));
    expect((await groupIncidents(env.DB, {}, "agent")).groups).toEqual(count((i) => `${i.agent_class}/${i.agent_name}`));
    const open = all.filter((i) => i.status === "open" && i.kind === "fiber");
    const g = await groupIncidents(env.DB, { status: "open", kind: "fiber" }, "agent");
    expect(g.groups).toEqual(count((i) => `${i.agent_class}/${i.agent_name}`, open));
    expect(g).toMatchObject({ bounded: false });
    expect(isBadRequest(await rejection(groupIncidents(env.DB, {}, "colour" as never)))).toBe(true);
  });
});

describe("timelines", () => {
  it("shows a fiber incident with its fiber's earlier events, oldest first, page by page", async () => {
    const events = fiberLife("tl-fiber", "tl-agent");
    await ingest([...events].reverse());
    const id = "fiber:ProbeAgent/tl-agent/tl-fiber";
    const got = await walk(
      (p) => incidentTimeline(env.DB, { incidentId: id, ...probeAgent("tl-agent") }, p),
      2,
      (e) => e.id,
    );
    expect(got.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(got[1]).toMatchObject({ type: "fiber.stashed", fiberId: "tl-fiber", incidentId: null, payload: { snapshot: { preview: '{"step":1}' } } });
    expect(
      (
        await walk(
          (p) => runEvents(env.DB, { fiberId: "tl-fiber", ...probeAgent("tl-agent") }, p),
          3,
          (e) => e.id,
        )
      ).map((e) => e.type),
    ).toEqual(events.map((e) => e.type));
    expect(await getStoredRun(env.DB, "tl-fiber")).toMatchObject({
      fiberId: "tl-fiber",
      name: "etl",
      outcome: "recovered",
      snapshotPreview: '{"step":2}',
      snapshotBytes: 10,
    });
  });

  it("shows a chat incident's events and a turn incident's session events for that turn only", async () => {
    const chat = chatIncidentLife("tl-chat", "tl-chat-agent");
    await ingest(chat);
    expect(
      (
        await walk(
          (p) => incidentTimeline(env.DB, { incidentId: "tl-chat", ...probeAgent("tl-chat-agent") }, p),
          2,
          (e) => e.id,
        )
      ).map((e) => e.id),
    ).toEqual(chat.map((e) => e.id));

    const s = "tl-session";
    const o = (m: number, corr: TelemetryEvent["corr"] = {}) => ({ agentName: s, time: T0 + m * 1000, corr: { sessionName: s, ...corr } });
    const inc = { incidentId: `turn:ProbeAgent/${s}/2` };
    const session = [
      makeEvent("session.status_running", { turnSeq: 1 }, o(1)),
      makeEvent("session.status_idle", { turnSeq: 1 }, o(2)),
      makeEvent("session.status_running", { turnSeq: 2 }, o(3)),
      makeEvent("op.started", { opKind: "tool.x", turnSeq: 2 }, o(4, { opId: "tl-op" })),
      makeEvent("session.status_rescheduled", { turnSeq: 2, recoveryCount: 1 }, o(5, inc)),
      makeEvent("session.status_running", { turnSeq: 2, detail: "resumed after eviction" }, o(6)),
      makeEvent("session.status_idle", { turnSeq: 2 }, o(7, inc)),
      makeEvent("session.status_running", { turnSeq: 3 }, o(8)),
    ];
    await ingest(session);
    const turn = await walk(
      (p) => incidentTimeline(env.DB, { ...inc, ...probeAgent(s) }, p),
      2,
      (e) => e.id,
    );
    expect(turn.map((e) => e.id)).toEqual(session.slice(2, 7).map((e) => e.id));
    const newestFirst = await walk(
      (p) => sessionTimeline(env.DB, { sessionName: s, ...probeAgent(s) }, p),
      3,
      (e) => e.id,
    );
    expect(newestFirst.map((e) => e.id)).toEqual(session.map((e) => e.id).reverse());
    expect(await getSession(env.DB, s)).toMatchObject({
      sessionName: s,
      status: "running",
      lastTurnSeq: 3,
      recoveryCount: 1,
      lastEventType: "session.status_running",
    });
  });
});

describe("listRuns", () => {
  type F = { fiber_id: string; agent_class: string; agent_name: string; outcome: string | null; first_seen: number };
  const cases: [string, Record<string, unknown>, (f: F) => boolean][] = [
    ["no filter", {}, () => true],
    ["running", { outcome: "running" }, (f) => f.outcome === null],
    ["outcome", { outcome: "failed" }, (f) => f.outcome === "failed"],
    ["agentClass", { agentClass: "ProbeAgent" }, (f) => f.agent_class === "ProbeAgent"],
    ["agentName", { agentName: "gamma" }, (f) => f.agent_name === "gamma"],
    ["agent", { agentClass: "SupportAgent", agentName: "gamma" }, (f) => f.agent_class === "SupportAgent" && f.agent_name === "gamma"],
    // Runs list newest first by first_seen (it never moves as a run goes on), and the window bounds it too.
    ["since + until", { since: T0 + 20 * MIN, until: T0 + 60 * MIN }, (f) => f.first_seen >= T0 + 20 * MIN && f.first_seen <= T0 + 60 * MIN],
    ["running + agentClass", { outcome: "running", agentClass: "ProbeAgent" }, (f) => f.outcome === null && f.agent_class === "ProbeAgent"],
  ];
  for (const [label, filters, match] of cases) {
    it(`pages through every match: ${label}`, async () => {
      const all = await dump<F>("SELECT fiber_id, agent_class, agent_name, outcome, first_seen FROM runs");
      const expected = desc(
        all.filter(match),
        (f) => f.first_seen,
        (f) => f.fiber_id,
      ).map((f) => f.fiber_id);
      expect(expected.length).toBeGreaterThan(0);
      const got = await walk(
        (p) => listRuns(env.DB, filters, p),
        4,
        (f) => f.fiberId,
      );
      expect(got.map((f) => f.fiberId)).toEqual(expected);
    });
  }
});

describe("listSessions", () => {
  // Newest activity first, to the minute (listed_at), then by name.
  type S = { session_name: string; status: string | null; agent_class: string; listed_at: number; last_seen: number };
  const cases: [string, Record<string, unknown>, (s: S) => boolean][] = [
    ["no filter", {}, () => true],
    ["status", { status: "rescheduled" }, (s) => s.status === "rescheduled"],
    ["agentClass", { agentClass: "SupportAgent" }, (s) => s.agent_class === "SupportAgent"],
    ["status + agentClass", { status: "error", agentClass: "ProbeAgent" }, (s) => s.status === "error" && s.agent_class === "ProbeAgent"],
    // since / until bound last_seen exactly, mid-minute too (the index range is their minutes).
    [
      "since + until",
      { since: T0 + 10 * MIN + 20_000, until: T0 + 30 * MIN + 10_000 },
      (s) => s.last_seen >= T0 + 10 * MIN + 20_000 && s.last_seen <= T0 + 30 * MIN + 10_000,
    ],
  ];
  for (const [label, filters, match] of cases) {
    it(`pages through every match: ${label}`, async () => {
      const all = await dump<S>("SELECT session_name, status, agent_class, listed_at, last_seen FROM sessions");
      const expected = desc(
        all.filter(match),
        (s) => s.listed_at,
        (s) => s.session_name,
      ).map((s) => s.session_name);
      expect(expected.length).toBeGreaterThan(0);
      const got = await walk(
        (p) => listSessions(env.DB, filters, p),
        4,
        (s) => s.sessionName,
      );
      expect(got.map((s) => s.sessionName)).toEqual(expected);
    });
  }
});

describe("listBackups", () => {
  type B = { handle: string; tenant: string; environment: string; session_name: string; expires_at: number | null; last_seen: number };
  const cases: [string, Record<string, unknown>, (b: B) => boolean, "last_seen" | "expires_at"][] = [
    ["no filter", {}, () => true, "last_seen"],
    ["tenant", { tenant: "t1" }, (b) => b.tenant === "t1", "last_seen"],
    ["environment", { environment: "e0" }, (b) => b.environment === "e0", "last_seen"],
    ["sessionName", { sessionName: "bs-2" }, (b) => b.session_name === "bs-2", "last_seen"],
    ["tenant + environment", { tenant: "t2", environment: "e1" }, (b) => b.tenant === "t2" && b.environment === "e1", "last_seen"],
    ["expired", { expired: "true" }, (b) => b.expires_at !== null && b.expires_at <= NOW, "expires_at"],
    ["not expired", { expired: false }, (b) => b.expires_at !== null && b.expires_at > NOW, "expires_at"],
    ["expired + tenant", { expired: true, tenant: "t0" }, (b) => b.expires_at !== null && b.expires_at <= NOW && b.tenant === "t0", "expires_at"],
  ];
  for (const [label, filters, match, order] of cases) {
    it(`pages through every match: ${label}`, async () => {
      const all = await dump<B>("SELECT handle, tenant, environment, session_name, expires_at, last_seen FROM workspace_backups");
      const expected = desc(
        all.filter(match),
        (b) => b[order]!,
        (b) => b.handle,
      ).map((b) => b.handle);
      expect(expected.length).toBeGreaterThan(0);
      const got = await walk(
        (p) => listBackups(env.DB, filters, p, NOW),
        4,
        (b) => b.handle,
      );
      expect(got.map((b) => b.handle)).toEqual(expected);
      for (const b of got) expect(b.expired).toBe(b.expiresAt! <= NOW);
    });
  }
});

describe("listAudit", () => {
  type A = { id: string; time: number; actor: string; action: string; target_class: string; target_name: string; result: string };
  const cases: [string, Record<string, unknown>, (a: A) => boolean][] = [
    ["no filter", {}, () => true],
    ["actor", { actor: "op1@example.com" }, (a) => a.actor === "op1@example.com"],
    ["action", { action: "force_idle" }, (a) => a.action === "force_idle"],
    ["targetClass", { targetClass: "ProbeAgent" }, (a) => a.target_class === "ProbeAgent"],
    ["targetName", { targetName: "delta" }, (a) => a.target_name === "delta"],
    ["target", { targetClass: "SupportAgent", targetName: "delta" }, (a) => a.target_class === "SupportAgent" && a.target_name === "delta"],
    ["result", { result: "denied" }, (a) => a.result === "denied"],
    ["actor + result", { actor: "op0@example.com", result: "ok" }, (a) => a.actor === "op0@example.com" && a.result === "ok"],
  ];
  for (const [label, filters, match] of cases) {
    it(`pages through every match: ${label}`, async () => {
      const all = await dump<A>("SELECT id, time, actor, action, target_class, target_name, result FROM audit_log");
      const expected = desc(
        all.filter(match),
        (a) => a.time,
        (a) => a.id,
      ).map((a) => a.id);
      expect(expected.length).toBeGreaterThan(0);
      const got = await walk(
        (p) => listAudit(env.DB, filters, p),
        3,
        (a) => a.id,
      );
      expect(got.map((a) => a.id)).toEqual(expected);
    });
  }

  it("parses before / after", async () => {
    const { items } = await listAudit(env.DB, { targetClass: "ProbeAgent", targetName: "alpha" }, { limit: 1 });
    expect(items[0]).toMatchObject({ id: "audit-28", before: { status: "running" }, after: null, role: "operator", reason: "testing" });
  });
});

describe("listAmbiguousOps and listAgents", () => {
  it("lists ops: all, open only, resolved only", async () => {
    type O = { op_id: string; resolution_at: number | null; last_seen: number };
    const all = await dump<O>("SELECT op_id, resolution_at, last_seen FROM op_ambiguities");
    for (const [filters, match] of [
      [{}, () => true],
      [{ open: "true" }, (o: O) => o.resolution_at === null],
      [{ open: false }, (o: O) => o.resolution_at !== null],
    ] as const) {
      const expected = desc(
        all.filter(match),
        (o) => o.last_seen,
        (o) => o.op_id,
      ).map((o) => o.op_id);
      const got = await walk(
        (p) => listAmbiguousOps(env.DB, filters, p),
        4,
        (o) => o.opId,
      );
      expect(got.map((o) => o.opId)).toEqual(expected);
      for (const o of got) expect(o.open).toBe(o.resolution === null);
    }
  });

  it("lists agents, all or of one class", async () => {
    // Most recently seen first, to the minute (listed_at), then by the key.
    type Ag = { agent_class: string; agent_name: string; listed_at: number };
    const all = await dump<Ag>("SELECT agent_class, agent_name, listed_at FROM agents");
    const key = (a: { agentClass: string; agentName: string }) => `${a.agentClass}\u0000${a.agentName}`;
    const everyone = [...all].sort(
      (x, y) => y.listed_at - x.listed_at || (`${y.agent_class}\u0000${y.agent_name}` > `${x.agent_class}\u0000${x.agent_name}` ? 1 : -1),
    );
    expect((await walk((p) => listAgents(env.DB, {}, p), 5, key)).map(key)).toEqual(everyone.map((a) => `${a.agent_class}\u0000${a.agent_name}`));
    const support = desc(
      all.filter((a) => a.agent_class === "SupportAgent"),
      (a) => a.listed_at,
      (a) => a.agent_name,
    );
    expect((await walk((p) => listAgents(env.DB, { agentClass: "SupportAgent" }, p), 2, key)).map((a) => a.agentName)).toEqual(
      support.map((a) => a.agent_name),
    );
    expect(await findAgent(env.DB, "SupportAgent", "beta")).toMatchObject({ agentClass: "SupportAgent", agentName: "beta" });
  });
});

describe("overview", () => {
  it("counts running runs by kind, open incidents, recent exhaustions and open ops, capped", async () => {
    const one = async (sql: string) => Number((await env.DB.prepare(sql).first<{ n: number }>())!.n);
    const exact = await overviewCounts(env.DB, NOW);
    expect(exact).toMatchObject({
      running: { n: await one("SELECT COUNT(*) AS n FROM runs WHERE outcome IS NULL"), capped: false },
      runningByKind: { fiber: { n: await one("SELECT COUNT(*) AS n FROM runs WHERE outcome IS NULL AND kind = 'fiber'"), capped: false, confirmed: 0 } },
      openIncidents: { n: await one("SELECT COUNT(*) AS n FROM incidents WHERE status = 'open' AND closed_by IS NULL"), capped: false },
      ambiguousOps: { n: await one("SELECT COUNT(*) AS n FROM op_ambiguities WHERE resolution_at IS NULL"), capped: false },
      // Exhausted incidents first seen in the window: what /incidents?status=exhausted&since=… lists.
      exhaustions24h: { n: await one(`SELECT COUNT(*) AS n FROM incidents WHERE status = 'exhausted' AND first_seen >= ${NOW - 86_400_000}`), capped: false },
    });
    expect(exact.openIncidents.n).toBeGreaterThan(3);
    expect(exact.exhaustions24h.n).toBeGreaterThan(3);
    const capped = await overviewCounts(env.DB, NOW, 3);
    expect(capped).toMatchObject({
      running: { n: 3, capped: true },
      openIncidents: { n: 3, capped: true },
      ambiguousOps: { n: 3, capped: true },
      exhaustions24h: { n: 3, capped: true },
    });
    expect(capped.rowsRead).toBeLessThan(exact.rowsRead);
  });

  it("charts 5-minute buckets per series from the rollups", async () => {
    const since = T0;
    const until = T0 + 60 * MIN - 1;
    const r = await eventSeries(env.DB, { since, until }, NOW);
    expect(r.buckets).toHaveLength(12);
    expect(r.buckets[0]).toBe(T0);
    expect(r.buckets[11]).toBe(T0 + 55 * MIN);
    const events = await dump<{ type: string; time: number }>(`SELECT type, time FROM events WHERE time >= ${since} AND time <= ${until}`);
    const series = (types: string[]) => r.buckets.map((b) => events.filter((e) => types.includes(e.type) && e.time >= b && e.time < b + 5 * MIN).length);
    expect(r.series).toEqual({
      "chat.recovery.exhausted": series(["chat.recovery.exhausted"]),
      recovery: series(["chat.recovery.attempt", "fiber.recovery.attempt"]),
      "chat.context.compacted": series(["chat.context.compacted"]),
      "op.ambiguous": series(["op.ambiguous"]),
    });
    expect(r.series["op.ambiguous"]!.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const one = await eventSeries(env.DB, { since, until, types: "fiber.started,session.error" }, NOW);
    expect(Object.keys(one.series)).toEqual(["fiber.started", "session.error"]);
    expect(one.series["fiber.started"]).toEqual(series(["fiber.started"]));
  });

  it("ranks the reasons of exhausted incidents", async () => {
    const rows = await dump<{ reason: string; n: number }>(
      `SELECT COALESCE(reason, '') AS reason, COUNT(*) AS n FROM incidents WHERE status = 'exhausted' AND last_seen >= ${T0} GROUP BY 1 ORDER BY n DESC, reason`,
    );
    const r = await topReasons(env.DB, { since: T0, limit: 2 }, NOW);
    expect(r.reasons).toEqual(rows.slice(0, 2));
    expect(r.reasons.length).toBe(2);
  });
});

describe("bad input is a BadRequest a person can read", () => {
  const lists: [string, (p: PageOptions) => Promise<Page<unknown>>][] = [
    ["incidents", (p) => listIncidents(env.DB, {}, p)],
    ["fibers", (p) => listRuns(env.DB, {}, p)],
    ["sessions", (p) => listSessions(env.DB, {}, p)],
    ["backups", (p) => listBackups(env.DB, {}, p)],
    ["audit", (p) => listAudit(env.DB, {}, p)],
    ["ops", (p) => listAmbiguousOps(env.DB, {}, p)],
    ["agents", (p) => listAgents(env.DB, {}, p)],
    ["timeline", (p) => incidentTimeline(env.DB, { incidentId: "chat-0", ...probeAgent("alpha") }, p)],
    ["session timeline", (p) => sessionTimeline(env.DB, { sessionName: "s-1", ...probeAgent("s-1") }, p)],
    ["fiber events", (p) => runEvents(env.DB, { fiberId: "fr-1", ...probeAgent("alpha") }, p)],
  ];
  const malformed = [
    "not a cursor!",
    "%%%",
    btoa("not json"),
    btoa(JSON.stringify({ a: 1 })).replace(/=+$/, ""),
    btoa(JSON.stringify(["incidents", "x", 1])).replace(/=+$/, ""),
    btoa(JSON.stringify(["incidents", 1])).replace(/=+$/, ""),
    "a".repeat(3000),
  ];
  for (const [name, list] of lists) {
    it(`rejects malformed cursors and limits: ${name}`, async () => {
      for (const cursor of malformed) {
        const e = await rejection(list({ cursor }));
        expect(e).toBeInstanceOf(BadRequest);
        expect(e.message).toMatch(/page cursor/);
      }
      for (const limit of [0, 201, "ten", -1, 1.5]) {
        const e = await rejection(list({ limit }));
        expect(e).toBeInstanceOf(BadRequest);
        expect(e.message).toBe(`limit must be a whole number from 1 to 200 (got ${JSON.stringify(limit)})`);
      }
      expect((await list({ limit: "2" })).items.length).toBeLessThanOrEqual(2);
    });
  }

  it("says so when a cursor of one list is used on another", async () => {
    const sessions = await listSessions(env.DB, {}, { limit: 1 });
    const e = await rejection(listIncidents(env.DB, {}, { cursor: sessions.next }));
    expect(e).toBeInstanceOf(BadRequest);
    expect(e.message).toBe("the page cursor belongs to another list or ordering; start from the first page");
    expect(await rejection(listIncidents(env.DB, {}, { cursor: encodeCursor("incidents", ["x", "y"]) }))).toBeInstanceOf(BadRequest);
    expect((await rejection(listIncidents(env.DB, {}, { cursor: "!!" }))).message).toBe("the page cursor is not valid; start from the first page");
  });

  it("names the filter and the accepted values", async () => {
    const msg = async (p: Promise<unknown>) => {
      const e = await rejection(p);
      expect(e).toBeInstanceOf(BadRequest);
      return e.message;
    };
    expect(await msg(listIncidents(env.DB, { status: "bogus" }))).toBe(
      'status must be one of open, recovered, exhausted, failed, skipped, force_idled, ended_unreported (got "bogus")',
    );
    expect(await msg(listIncidents(env.DB, { kind: "workflow", since: "yesterday" }))).toBe(
      'kind must be one of fiber, turn, chat (got "workflow"); since must be a relative time such as 15m, 1h, 6h, 24h, 7d, epoch milliseconds, or an ISO date such as 2026-11-01T12:00:00Z (got "yesterday")',
    );
    expect(await msg(listIncidents(env.DB, { since: T0 + 1, until: T0 }))).toBe("since must not be later than until");
    expect(await msg(listRuns(env.DB, { outcome: "done" }))).toMatch(/^outcome must be one of running, completed, /);
    expect(await msg(listSessions(env.DB, { status: "sleeping" }))).toMatch(/^status must be one of running, idle, rescheduled, terminated, error/);
    expect(await msg(listBackups(env.DB, { expired: "maybe" }))).toBe('expired must be true or false (got "maybe")');
    expect(await msg(listAmbiguousOps(env.DB, { open: "yes" }))).toBe('open must be true or false (got "yes")');
    expect(await msg(listAudit(env.DB, { result: "fine" }))).toMatch(/^result must be one of ok, partial, noop, error, denied, invalid/);
    expect(await msg(listAgents(env.DB, { agentClass: 42 }))).toBe("agentClass must be text");
    expect(await msg(eventSeries(env.DB, { types: "chat.recovery.exhausted,bogus" }))).toMatch(/^unknown series "bogus"/);
    expect(await msg(eventSeries(env.DB, { since: 0, until: 40 * 86_400_000 }))).toMatch(/longer than 31 days/);
    expect(await msg(topReasons(env.DB, { limit: 0 }))).toBe("limit must be a whole number from 1 to 100");
    // The schemas are exported for routes: the same rules, without a query.
    expect(incidentFilters.safeParse({ status: "open", since: "2026-11-01T00:00:00Z" })).toMatchObject({
      success: true,
      data: { status: "open", since: Date.UTC(2026, 10, 1) },
    });
  });
});
