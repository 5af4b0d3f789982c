import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { writeAudit } from "../../src/store/audit";
import { singleStore } from "../../src/store/partitions";
import { listAudit } from "../../src/store/read-models/audit";
import { isBadRequest } from "../../src/store/read-models/errors";
import { relativeMs, resolveInstant } from "../../src/store/read-models/filters";
import { listIncidents } from "../../src/store/read-models/incidents";
import { listAmbiguousOps } from "../../src/store/read-models/ops";
import { MAX_QUERY_LENGTH, searchIn } from "../../src/store/read-models/search";
import { listSessions } from "../../src/store/read-models/sessions";
import { makeEvent } from "../fixtures/events";
import { ingest, rejection } from "./store-helpers";

/** The header's search over one database (the store of one partition). */
const search = (db: D1Database, q: unknown) => searchIn(singleStore(db), q);

// Search by any id, over real D1 filled through the real ingest path; and relative `since` in list filters.

const u = crypto.randomUUID().slice(0, 8);
const A = { agentClass: "ProbeAgent", agentName: `srch-a-${u}` };
const B = { agentClass: "SupportAgent", agentName: `srch-a-${u}` };
const ids = {
  fiber: `fib-${u}-0001`,
  shared: `shared-${u}`,
  task: `task-${u}`,
  request: `req-${u}`,
  incident: `req-${u}:msg-1`,
  op: `op-${u}`,
  plainOp: `op2-${u}`,
  session: `sess-${u}`,
  trace: `${u}${"0123456789abcdef0123456789abcdef".slice(8)}`,
};
const now = Date.now();
const MIN = 60_000;

/** makeEvent always says ProbeAgent/ingest-test: re-label the source. */
const from = (e: TelemetryEvent, who: { agentClass: string; agentName: string }): TelemetryEvent => ({ ...e, source: who });
const at = (minutesAgo: number) => now - minutesAgo * MIN;

beforeAll(async () => {
  const chat = { maxAttempts: 3, recoveryKind: "retry" as const };
  const events: TelemetryEvent[] = [
    from(makeEvent("fiber.started", { fiberName: "etl" }, { time: at(30), corr: { fiberId: ids.fiber, traceId: ids.trace, spanId: "0123456789abcdef" } }), A),
    // The same run id reported by two agents: two matches.
    from(makeEvent("fiber.started", { fiberName: "etl" }, { time: at(29), corr: { fiberId: ids.shared } }), A),
    from(makeEvent("fiber.started", { fiberName: "etl" }, { time: at(29), corr: { fiberId: ids.shared } }), B),
    from(makeEvent("task.accepted", { definition: "import" }, { time: at(28), corr: { taskId: ids.task } }), A),
    from(makeEvent("chat.turn.started", {}, { time: at(27), corr: { requestId: ids.request } }), A),
    from(
      makeEvent(
        "chat.recovery.exhausted",
        { ...chat, attempt: 3, reason: "no_progress_timeout" },
        { time: at(26), corr: { requestId: ids.request, incidentId: ids.incident } },
      ),
      A,
    ),
    from(makeEvent("session.status_running", { turnSeq: 1 }, { time: at(25), corr: { sessionName: ids.session } }), A),
    from(
      makeEvent("op.ambiguous", { opKind: "charge", detail: "may have charged twice" }, { time: at(24), corr: { sessionName: ids.session, opId: ids.op } }),
      A,
    ),
    from(makeEvent("op.started", { opKind: "email" }, { time: at(23), corr: { sessionName: ids.session, opId: ids.plainOp } }), A),
    // Agent B also reports (so B's agent name exists under another class).
    from(makeEvent("session.status_idle", {}, { time: at(22), corr: { sessionName: `other-${u}` } }), B),
    // An old incident, for the relative since filters.
    from(
      makeEvent(
        "chat.recovery.exhausted",
        { ...chat, attempt: 3, reason: "stable_timeout" },
        { time: at(3 * 60), corr: { incidentId: `old-${u}:m`, requestId: `old-${u}` } },
      ),
      A,
    ),
  ];
  await ingest(events, now);
});

const kinds = (ms: { kind: string }[]) => ms.map((m) => m.kind);

describe("search finds each kind of id", () => {
  it("an incident id: the incident", async () => {
    const r = await search(env.DB, ids.incident);
    expect(r.matches).toEqual([
      expect.objectContaining({
        kind: "incident",
        id: ids.incident,
        ...A,
        via: { field: "incident", by: "id" },
        incidentKind: "chat",
        status: "exhausted",
        reason: "no_progress_timeout",
      }),
    ]);
    expect(r.prefix).toBe(false);
  });

  it("a fiber id: the run (its events lead to the same run, listed once)", async () => {
    const r = await search(env.DB, ids.fiber);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "run", id: ids.fiber, runKind: "fiber", ...A, via: { field: "fiber", by: "id" } })]);
  });

  it("a Tasks run id: the task run", async () => {
    const r = await search(env.DB, ids.task);
    expect(r.matches).toEqual([
      expect.objectContaining({ kind: "run", id: ids.task, runKind: "task", via: { field: "task", by: "id" }, runName: "import", outcome: null }),
    ]);
  });

  it("a request id: the chat turn (its own page wins over what its events touch)", async () => {
    const r = await search(env.DB, ids.request);
    expect(kinds(r.matches)).toEqual(["run"]);
    expect(r.matches[0]).toMatchObject({ id: ids.request, runKind: "chat_turn", via: { field: "request", by: "id" } });
  });

  it("an ambiguous op id: the op (its page is its session's)", async () => {
    const r = await search(env.DB, ids.op);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "op", id: ids.op, sessionName: ids.session, opKind: "charge", resolution: null })]);
  });

  it("an op id that was never ambiguous: the session its events belong to", async () => {
    const r = await search(env.DB, ids.plainOp);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "session", id: ids.session, ...A, via: { field: "op", by: "event" } })]);
  });

  it("a session name: the session", async () => {
    const r = await search(env.DB, `  ${ids.session}  `);
    expect(r.query).toBe(ids.session);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "session", id: ids.session, ...A, status: "running" })]);
  });

  it("an agent name: every class's agent of that name; Class/name: that one", async () => {
    const r = await search(env.DB, A.agentName);
    expect(r.matches.map((m) => [m.kind, m.agentClass, m.agentName])).toEqual([
      ["agent", "ProbeAgent", A.agentName],
      ["agent", "SupportAgent", B.agentName],
    ]);
    const one = await search(env.DB, `SupportAgent/${B.agentName}`);
    expect(one.matches).toEqual([expect.objectContaining({ kind: "agent", ...B, via: { field: "agent_key", by: "id" } })]);
  });

  it("a trace id: the run of the event that carries it (among the newest events)", async () => {
    const r = await search(env.DB, ids.trace);
    expect(r.traceWindow).toBeGreaterThan(0);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "run", id: ids.fiber, via: { field: "trace", by: "event" } })]);
  });

  it("an id several agents reported: one match per agent", async () => {
    const r = await search(env.DB, ids.shared);
    expect(r.matches.map((m) => [m.kind, m.agentClass])).toEqual([
      ["run", "ProbeAgent"],
      ["run", "SupportAgent"],
    ]);
  });

  it("the beginning of an id (6+ characters) when nothing matches exactly", async () => {
    const r = await search(env.DB, `fib-${u}-00`);
    expect(r.prefix).toBe(true);
    expect(r.matches).toEqual([expect.objectContaining({ kind: "run", id: ids.fiber, via: { field: "run", by: "prefix" } })]);
    // Short queries never match by prefix.
    expect((await search(env.DB, "fib-")).matches).toEqual([]);
  });

  it("nothing: no match, no error", async () => {
    const r = await search(env.DB, `nothing-${u}`);
    expect(r).toMatchObject({ matches: [], prefix: false, truncated: false, traceWindow: null });
  });

  it("reads few rows: index seeks with limits", async () => {
    for (const q of [ids.request, ids.op, A.agentName, `nothing-${u}`]) {
      const r = await search(env.DB, q);
      expect(r.rowsRead, q).toBeLessThan(200);
    }
  });

  it("an empty, blank or oversized query is a BadRequest that says what to do", async () => {
    for (const q of ["", "   ", undefined]) {
      const e = await rejection(search(env.DB, q));
      expect(isBadRequest(e)).toBe(true);
      expect(e.message).toMatch(/^(Type an id to search for|q must be text)/);
    }
    const long = await rejection(search(env.DB, "x".repeat(MAX_QUERY_LENGTH + 1)));
    expect(long.message).toBe(`The search is longer than ${MAX_QUERY_LENGTH} characters; ids are shorter. Paste just the id.`);
  });
});

describe("relative since", () => {
  it("parses 15m, 1h, 6h, 24h, 7d (and 2w) against now; rejects the rest", () => {
    expect(["15m", "1h", "6h", "24h", "7d", "2w", " 1H "].map(relativeMs)).toEqual([
      15 * MIN,
      60 * MIN,
      360 * MIN,
      1440 * MIN,
      7 * 1440 * MIN,
      14 * 1440 * MIN,
      60 * MIN,
    ]);
    for (const bad of ["0h", "-1h", "1y", "h", "1.5h", "9999999d", "yesterday"]) expect(relativeMs(bad), bad).toBeNull();
    expect(resolveInstant("1h", 10 * 3_600_000)).toBe(9 * 3_600_000);
    expect(resolveInstant("2026-11-01T00:00:00Z")).toBe(Date.UTC(2026, 10, 1));
    expect(resolveInstant("1700000000000")).toBe(1_700_000_000_000);
  });

  it("filters incidents by since=1h (the old one is left out) and since=24h (both)", async () => {
    const hour = await listIncidents(env.DB, { agentName: A.agentName, since: "1h" });
    expect(hour.items.map((i) => i.incidentId)).toEqual([ids.incident]);
    const day = await listIncidents(env.DB, { agentName: A.agentName, since: "24h" });
    expect(day.items.map((i) => i.incidentId)).toEqual([ids.incident, `old-${u}:m`]);
    const until = await listIncidents(env.DB, { agentName: A.agentName, until: "1h" });
    expect(until.items.map((i) => i.incidentId)).toEqual([`old-${u}:m`]);
  });

  it("sessions, ambiguous ops and the audit log take since too", async () => {
    const sessions = await listSessions(env.DB, { agentClass: "ProbeAgent", since: "1h" });
    expect(sessions.items.map((s) => s.sessionName)).toContain(ids.session);
    expect((await listSessions(env.DB, { agentClass: "ProbeAgent", since: "15m" })).items.map((s) => s.sessionName)).not.toContain(ids.session);
    expect((await listAmbiguousOps(env.DB, { open: "true", since: "1h" })).items.map((o) => o.opId)).toContain(ids.op);
    expect((await listAmbiguousOps(env.DB, { since: "15m" })).items.map((o) => o.opId)).not.toContain(ids.op);
    const entry = {
      actor: "a@example.com",
      role: "operator",
      action: "force_idle",
      targetClass: "ProbeAgent",
      targetName: A.agentName,
      reason: "test",
      result: "ok",
      error: null,
    };
    await writeAudit(env.DB, { ...entry, id: `old-${u}`, time: at(120) } as never);
    await writeAudit(env.DB, { ...entry, id: `new-${u}`, time: at(5) } as never);
    const audit = await listAudit(env.DB, { targetName: A.agentName, since: "1h" });
    expect(audit.items.map((a) => a.id)).toEqual([`new-${u}`]);
  });

  it("a bad since is a BadRequest naming the accepted forms", async () => {
    const e = await rejection(listIncidents(env.DB, { since: "1y" }));
    expect(isBadRequest(e)).toBe(true);
    expect(e.message).toBe(
      'since must be a relative time such as 15m, 1h, 6h, 24h, 7d, epoch milliseconds, or an ISO date such as 2026-11-01T12:00:00Z (got "1y")',
    );
    expect((await rejection(listSessions(env.DB, { since: "soon" }))).message).toMatch(/^since must be a relative time/);
  });
});
