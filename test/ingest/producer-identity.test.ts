import { env } from "cloudflare:workers";
import { SCHEMA_VERSION, type TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { isAmbiguousOwner } from "../../src/store/read-models/errors";
import { getIncident, incidentTimeline, listIncidents } from "../../src/store/read-models/incidents";
import { getStoredRun, runEvents } from "../../src/store/read-models/runs";
import { getSession, listSessions, sessionTimeline } from "../../src/store/read-models/sessions";
import { shuffled } from "../fixtures/seeded-random";
import { pollRows } from "../helpers";
import { ingest, rejection } from "../store/store-helpers";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { escapeHtml, getText } from "../worker/routes/harness";

/**
 * Any agent holding the Queue producer binding can claim another agent's ids. One agent's events must
 * never change another agent's projection rows, in any order, batching or number of deliveries; and
 * pages that show a row must act on the agent the row belongs to.
 */

const CLASS = "SessionAgent";
const T = Date.now() - 3_600_000;
const base = { maxAttempts: 3, recoveryKind: "retry" as const };

/** The ids one victim session owns, derived from its name so every scenario has its own. */
const idsOf = (victim: string) => ({
  session: victim,
  fiberId: `fiber-${victim}`,
  chat: `req-${victim}:msg-1`,
  turn: `turn:${CLASS}/${victim}/1`,
  opId: `op-${victim}`,
  handle: `ws/${victim}/b1`,
});

/** An event with a deterministic id (so scenarios compare equal once names are normalised). */
function ev<T extends TelemetryEvent["type"]>(
  agentName: string,
  n: number,
  type: T,
  payload: Extract<TelemetryEvent, { type: T }>["payload"],
  corr: TelemetryEvent["corr"],
): TelemetryEvent {
  const time = T + n * 1000;
  return {
    v: SCHEMA_VERSION,
    id: `${String(time).padStart(13, "0")}-${n}-${agentName}`,
    time,
    type,
    source: { agentClass: CLASS, agentName },
    corr,
    payload,
  } as TelemetryEvent;
}

function victimEvents(victim: string): TelemetryEvent[] {
  const id = idsOf(victim);
  const s = { sessionName: id.session };
  return [
    ev(victim, 1, "session.status_running", { turnSeq: 1 }, s),
    ev(victim, 2, "fiber.started", { fiberName: "turn" }, { ...s, fiberId: id.fiberId }),
    ev(victim, 3, "fiber.stashed", { fiberName: "turn", snapshot: { preview: '{"step":1}', bytes: 10, truncated: false } }, { fiberId: id.fiberId }),
    ev(victim, 4, "chat.recovery.detected", { ...base, attempt: 1 }, { incidentId: id.chat }),
    ev(victim, 5, "session.status_rescheduled", { turnSeq: 1, recoveryCount: 1 }, { ...s, incidentId: id.turn }),
    ev(victim, 6, "op.ambiguous", { opKind: "payment.charge", detail: "charged once?" }, { ...s, opId: id.opId }),
    ev(
      victim,
      7,
      "backup.created",
      { handle: id.handle, tenant: "acme", environment: "prod", sessionName: id.session, expiresAt: T + 7 * 86_400_000, bytes: 10 },
      s,
    ),
    ev(victim, 8, "fiber.completed", { fiberName: "turn" }, { fiberId: id.fiberId }),
    ev(victim, 9, "session.status_idle", { turnSeq: 1 }, { ...s, incidentId: id.turn }),
  ];
}

/** The forger claims every one of the victim's ids, later and with "bigger" values, so max/latest merges would favour it. */
function forgedEvents(victim: string, forger: string): TelemetryEvent[] {
  const id = idsOf(victim);
  const s = { sessionName: id.session };
  return [
    ev(forger, 20, "session.error", { turnSeq: 99, error: "forged" }, { ...s, incidentId: id.turn }),
    ev(forger, 21, "fiber.failed", { fiberName: "zzz", error: "forged" }, { fiberId: id.fiberId }),
    ev(forger, 22, "fiber.stashed", { fiberName: "zzz", snapshot: { preview: '{"forged":true}', bytes: 15, truncated: false } }, { fiberId: id.fiberId }),
    ev(forger, 23, "chat.recovery.exhausted", { ...base, attempt: 9, reason: "forged" }, { incidentId: id.chat }),
    ev(forger, 24, "op.resolved", { opKind: "zzz", resolution: "verified_not_ran" }, { ...s, opId: id.opId }),
    ev(forger, 25, "backup.expired", { handle: id.handle, tenant: "zzz", environment: "zzz", sessionName: id.session }, s),
    ev(forger, 26, "session.status_terminated", { turnSeq: 100 }, s),
  ];
}

/** Every projection row of one agent, as JSON with its name replaced, so scenarios with different names compare. */
async function rowsOf(agentName: string): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const table of ["agents", "runs", "incidents", "op_ambiguities", "workspace_backups", "sessions"]) {
    const key = {
      agents: "agent_name",
      runs: "fiber_id",
      incidents: "incident_id",
      op_ambiguities: "op_id",
      workspace_backups: "handle",
      sessions: "session_name",
    }[table];
    out[table] = (await env.DB.prepare(`SELECT * FROM ${table} WHERE agent_class = ? AND agent_name = ? ORDER BY ${key}`).bind(CLASS, agentName).all()).results;
  }
  return JSON.stringify(out).replaceAll(agentName, "<victim>");
}

const uid = () => crypto.randomUUID().slice(0, 8);

describe("a producer claiming another agent's ids", () => {
  let reference: string;
  beforeAll(async () => {
    await publishEnvTeamKeys();
    const alone = `support-alone-${uid()}`;
    await ingest(victimEvents(alone));
    reference = await rowsOf(alone);
    expect(reference).toContain('"status":"idle"');
  });

  const scenarios: [string, (v: TelemetryEvent[], f: TelemetryEvent[]) => TelemetryEvent[][]][] = [
    ["victim first, then the forger", (v, f) => [v, f]],
    ["forger first, then the victim", (v, f) => [f, v]],
    [
      "mixed in random batches, with redelivery",
      (v, f) => {
        const all = shuffled([...v, ...f, ...v.slice(0, 3), ...f.slice(2, 5)], 7);
        return [all.slice(0, 5), all.slice(5, 11), all.slice(11), shuffled(f, 3)];
      },
    ],
  ];

  it.each(scenarios)("changes none of the victim's rows: %s", async (_label, order) => {
    const victim = `support-${uid()}`;
    const forger = `zzz-other-${uid()}`;
    for (const batch of order(victimEvents(victim), forgedEvents(victim, forger))) await ingest(batch);
    expect(await rowsOf(victim)).toEqual(reference);
    // The forger's claims are rows of its own identity, beside the victim's.
    const forged = await env.DB.prepare("SELECT COUNT(*) AS n FROM incidents WHERE agent_name = ?").bind(forger).first<{ n: number }>();
    expect(forged!.n).toBe(2);
    const session = await env.DB.prepare("SELECT agent_class, agent_name, status FROM sessions WHERE session_name = ? ORDER BY agent_name").bind(victim).all();
    expect(session.results).toEqual([
      { agent_class: CLASS, agent_name: victim, status: "idle" },
      { agent_class: CLASS, agent_name: forger, status: "terminated" },
    ]);
  });

  it("read models never resolve a shared id to the wrong agent, and timelines hold only the owner's events", async () => {
    const victim = `support-${uid()}`;
    const forger = `zzz-other-${uid()}`;
    const id = idsOf(victim);
    await ingest(forgedEvents(victim, forger));
    await ingest(victimEvents(victim));
    const owner = { agentClass: CLASS, agentName: victim };

    // Without an owner, a name two agents reported is a question, not a guess.
    // The refusal names who reported it, as data (the console words it and links each agent's page).
    const e = await rejection(getSession(env.DB, id.session));
    expect(isAmbiguousOwner(e)).toBe(true);
    expect(e).toMatchObject({
      status: 400,
      code: "ambiguous_owner",
      what: "session",
      id: id.session,
      candidates: [
        { agentClass: CLASS, agentName: victim },
        { agentClass: CLASS, agentName: forger },
      ],
      more: false,
    });
    expect(await rejection(getStoredRun(env.DB, id.fiberId))).toMatchObject({ code: "ambiguous_owner", what: "run", id: id.fiberId });
    expect(await rejection(getIncident(env.DB, id.chat))).toMatchObject({ code: "ambiguous_owner", what: "incident", id: id.chat });
    // A derived incident id names its agent, so it resolves to the victim even when claimed by another.
    expect(await getIncident(env.DB, id.turn)).toMatchObject({ ...owner, status: "recovered", attempts: 1 });

    const session = (await getSession(env.DB, id.session, owner))!;
    expect(session).toMatchObject({ ...owner, status: "idle", lastTurnSeq: 1 });
    expect((await sessionTimeline(env.DB, session)).items.every((x) => x.agentName === victim)).toBe(true);
    const fiber = (await getStoredRun(env.DB, id.fiberId, owner))!;
    expect(fiber).toMatchObject({ outcome: "completed", error: null, snapshotPreview: '{"step":1}' });
    expect((await runEvents(env.DB, fiber)).items.map((x) => x.type)).toEqual(["fiber.started", "fiber.stashed", "fiber.completed"]);
    const chat = (await getIncident(env.DB, id.chat, owner))!;
    expect(chat).toMatchObject({ status: "open", attempts: 1, reason: null });
    expect((await incidentTimeline(env.DB, chat)).items.map((x) => x.type)).toEqual(["chat.recovery.detected"]);

    // Lists show both rows, each with its own agent, and page through them exactly once.
    const listed = await listSessions(env.DB, {}, { limit: 200 });
    expect(
      listed.items
        .filter((s) => s.sessionName === victim)
        .map((s) => s.agentName)
        .sort(),
    ).toEqual([victim, forger].sort());
    let cursor: string | null = null;
    const seen: string[] = [];
    do {
      const p: Awaited<ReturnType<typeof listIncidents>> = await listIncidents(env.DB, {}, { cursor, limit: 1 });
      seen.push(...p.items.map((i) => `${i.incidentId}|${i.agentName}`));
      cursor = p.next;
    } while (cursor);
    expect(seen.filter((k) => k.startsWith(`${id.chat}|`)).sort()).toEqual([`${id.chat}|${victim}`, `${id.chat}|${forger}`].sort());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("the session page asks which agent when two reported the name, and with the agent it acts on that agent", async () => {
    const victim = `support-${uid()}`;
    const forger = `zzz-other-${uid()}`;
    await ingest(victimEvents(victim));
    await ingest(forgedEvents(victim, forger));

    const ambiguous = await getText(`/sessions/${victim}`, "operator");
    expect(ambiguous.status).toBe(400);
    // Worded by the console, with a link to the session's page for each agent that reported it.
    expect(ambiguous.text).toContain(
      escapeHtml(
        `Several agents reported session "${victim}"; choose one by opening it for its agent: /sessions/${victim}?agentClass=${CLASS}&agentName=${victim} , /sessions/${victim}?agentClass=${CLASS}&agentName=${forger}`,
      ),
    );

    const page = await getText(`/sessions/${victim}?agentClass=${CLASS}&agentName=${victim}`, "operator");
    expect(page.status).toBe(200);
    expect(page.text).toContain(`name="agentName" value="${victim}"`);
    expect(page.text).not.toContain(forger);
    const status = await getText(`/sessions/${victim}/status?agentClass=${CLASS}&agentName=${victim}`, "viewer");
    expect(status.text).toContain("idle");
  });

  it("holds through the real Queue: a forged event sent after the victim's changes nothing", async () => {
    const victim = `support-${uid()}`;
    const forger = `zzz-other-${uid()}`;
    const v = victimEvents(victim).map((e) => ({ ...e, time: Date.now() - 60_000 + e.time - T }));
    await env.TELEMETRY_QUEUE.send(JSON.stringify(v), { contentType: "text" });
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [victim], (r) => r.length === v.length);
    const before = await rowsOf(victim);
    const f = forgedEvents(victim, forger).map((e) => ({ ...e, time: Date.now() - 30_000 + e.time - T }));
    await env.TELEMETRY_QUEUE.sendBatch([
      { body: JSON.stringify(f), contentType: "text" },
      { body: JSON.stringify(f.slice(0, 2)), contentType: "text" },
    ]);
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [forger], (r) => r.length === f.length);
    expect(await rowsOf(victim)).toEqual(before);
  });
});
