import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEEPER_MARKER } from "../../../console/components/json-view";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { call, getText, uid } from "./harness";

// Pages render whatever D1 holds. A single valid event with time 9e15 (an integer, positive, so the
// contract accepts it, but past what a Date can hold) used to answer 500 on the overview, the incident
// list and the drill-down for as long as it was stored; a 10,000-deep snapshot overflowed the JSON viewer.
// Both go in through the real ingest path; every page that shows them must answer 200 and say what is odd.

const FUTURE = 9e15;
const MARKER = `invalid time (${FUTURE})`;
const DEEP = "[".repeat(10_000) + "]".repeat(10_000);
// Ingest caps a preview at 4,000 characters, so a stored snapshot preview nests at most ~2,000 levels.
const DEEP_PREVIEW = "[".repeat(1_990) + "]".repeat(1_990);
const enc = encodeURIComponent;

let agentName: string;
let incidentId: string;
/** Still open (the overview's worst list shows open incidents only). */
let openIncidentId: string;
let futureFiber: string;
let deepFiber: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  agentName = `future-${uid()}`;
  incidentId = `req-${uid()}:msg-1`;
  openIncidentId = `req-${uid()}:msg-2`;
  futureFiber = `fiber-future-${uid()}`;
  deepFiber = `fiber-deep-${uid()}`;
  const now = Date.now();
  const at = { agentName, time: FUTURE };
  const session = { sessionName: agentName };
  // Ingest now refuses times outside its window around receipt: these rows are as a console received them
  // before it did (received "at" their own time), which is what pages must still render.
  const future = await ingest(
    [
      makeEvent(
        "chat.recovery.exhausted",
        { attempt: 3, maxAttempts: 3, recoveryKind: "retry", reason: "max_attempts_exceeded" },
        { ...at, corr: { incidentId, requestId: incidentId.split(":")[0] } },
      ),
      makeEvent(
        "chat.recovery.attempt",
        { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
        { ...at, corr: { incidentId: openIncidentId, requestId: openIncidentId.split(":")[0] } },
      ),
      makeEvent("fiber.started", { fiberName: "etl" }, { ...at, corr: { fiberId: futureFiber } }),
      // The highest number an agent can claim: the console shows a gap of 2^53 - 2 events without failing.
      { ...makeEvent("session.status_running", { turnSeq: 1 }, { ...at, corr: session }), seq: Number.MAX_SAFE_INTEGER },
      makeEvent("op.ambiguous", { opKind: "payment.charge", detail: "charged twice?" }, { ...at, corr: { ...session, opId: `op-${uid()}` } }),
      makeEvent(
        "backup.created",
        { handle: `ws/${uid()}`, tenant: "acme", environment: "prod", sessionName: agentName, expiresAt: FUTURE, bytes: 42 },
        { ...at, corr: session },
      ),
    ],
    FUTURE,
  );
  const result = await ingest([
    // A 1,990-deep snapshot, stashed at an ordinary time, seen by the fiber, its run and the session timeline.
    makeEvent("fiber.started", { fiberName: "deep" }, { agentName, time: now, corr: { fiberId: deepFiber } }),
    makeEvent(
      "fiber.stashed",
      { fiberName: "deep", snapshot: { preview: DEEP_PREVIEW, bytes: DEEP_PREVIEW.length, truncated: false } },
      { agentName, time: now + 1, corr: { fiberId: deepFiber, ...session } },
    ),
  ]);
  expect([future, result]).toMatchObject([
    { stored: 6, deadLettered: 0 },
    { stored: 2, deadLettered: 0 },
  ]);
  // The audit log is written by the admin client, not ingest: a row as D1 can hold it, with a deep `before`.
  await env.DB.prepare(
    "INSERT INTO audit_log (id, time, actor, role, action, target_class, target_name, reason, before, after, result, error) VALUES (?, ?, 'ops@example.com', 'operator', 'force_idle', 'ProbeAgent', ?, 'odd row', ?, NULL, 'ok', NULL)",
  )
    .bind(`audit-${uid()}`, FUTURE, agentName, DEEP)
    .run();
});

// Storage is per test file; still, leave nothing that sorts first for anyone else.
afterAll(async () => {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM audit_log WHERE target_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM event_segments WHERE agent_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM incidents WHERE agent_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM runs WHERE agent_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM sessions WHERE agent_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM op_ambiguities WHERE agent_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM workspace_backups WHERE session_name = ?").bind(agentName),
    env.DB.prepare("DELETE FROM agents WHERE agent_name = ?").bind(agentName),
  ]);
});

/** A page that must render: 200, HTML, no sign of a failure. */
async function rendered(path: string) {
  const res = await getText(path, "viewer");
  expect(res.status, path).toBe(200);
  expect(res.type).toMatch(/^text\/html/);
  expect(res.text).not.toContain("Something went wrong");
  return res.text;
}

describe("an event with time 9e15", () => {
  const PAGES: [string, () => string, () => string[]][] = [
    // The overview's worst incidents are in its lazily loaded 24 h part (the page's first screen lists none).
    ["overview fragment", () => "/partials/overview", () => [openIncidentId]],
    ["incident list", () => "/incidents", () => [incidentId]],
    ["incident drill-down", () => `/incidents/${enc(incidentId)}`, () => ["max_attempts_exceeded"]],
    ["fiber list", () => "/runs", () => [futureFiber]],
    ["fiber page", () => `/runs/${enc(futureFiber)}`, () => ["Fiber etl"]],
    ["session list", () => "/sessions", () => [agentName]],
    ["session page", () => `/sessions/${enc(agentName)}`, () => ["session.status_running"]],
    ["agent page", () => `/agents/ProbeAgent/${enc(agentName)}`, () => [futureFiber, `data-missing="${Number.MAX_SAFE_INTEGER - 1}"`]],
    ["agents with missing events", () => "/agents?gaps=true", () => [agentName]],
    ["backups", () => `/backups?sessionName=${enc(agentName)}`, () => ["acme"]],
    ["audit log", () => `/audit?targetName=${enc(agentName)}`, () => ["odd row"]],
  ];

  it.each(PAGES)("%s answers 200 and shows the invalid-time marker", async (_name, path, shows) => {
    const html = await rendered(path());
    expect(html).toContain(MARKER);
    for (const s of shows()) expect(html).toContain(s);
  });

  it("ops list answers 200 (it shows the time only as 'ago')", async () => {
    const html = await rendered("/ops");
    expect(html).toContain("charged twice?");
    expect(html).toContain(MARKER);
  });

  it("the JSON answers keep the stored value as it is", async () => {
    const res = await call(`/incidents/${enc(incidentId)}`, { as: "viewer", headers: { Accept: "application/json" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { incident: { lastSeen: number }; timeline: { items: { time: number }[] } };
    expect(body.incident.lastSeen).toBe(FUTURE);
    expect(body.timeline.items.map((e) => e.time)).toContain(FUTURE);
  });
});

describe("a deeply nested snapshot (and a 10,000-deep audit row)", () => {
  const PAGES: [string, () => string][] = [
    ["fiber page (last-known snapshot and timeline)", () => `/runs/${enc(deepFiber)}`],
    ["run viewer (last-known, the run row is gone)", () => `/agents/ProbeAgent/${enc(agentName)}/runs/${enc(deepFiber)}`],
    ["session timeline", () => `/sessions/${enc(agentName)}`],
  ];

  it.each(PAGES)("%s answers 200 with the depth marker", async (_name, path) => {
    const html = await rendered(path());
    expect(html).toContain(DEEPER_MARKER);
  });

  it("the audit log shows a row whose deep `before` it cannot summarise", async () => {
    const html = await rendered(`/audit?targetName=${enc(agentName)}`);
    expect(html).toContain("odd row");
    const json = await call(`/audit?targetName=${enc(agentName)}`, { as: "viewer", headers: { Accept: "application/json" } });
    expect(json.status).toBe(200);
  });
});

describe("times no event could carry, written straight into D1", () => {
  // D1 keeps what it is given: a REAL past any Date, or text in an INTEGER column (a hand-fixed row, an old migration).
  it.each([
    ["a REAL of 1e300", 1e300, "invalid time (1e+300)"],
    ["text", "soon", "invalid time (soon)"],
  ] as const)("%s renders as a marker", async (_name, value, marker) => {
    const id = `req-${uid()}:odd`;
    // Open, so the overview lists it too.
    expect(
      await ingest([makeEvent("chat.recovery.attempt", { attempt: 1, maxAttempts: 1, recoveryKind: "retry" }, { agentName, corr: { incidentId: id } })]),
    ).toMatchObject({ stored: 1 });
    await env.DB.batch([
      env.DB.prepare("UPDATE incidents SET first_seen = ?, last_seen = ? WHERE incident_id = ?").bind(value, value, id),
      // The event's time inside its stored segment (one event: the incident's attempt).
      env.DB.prepare("UPDATE event_segments SET body = json_replace(body, '$[0].t', ?) WHERE agent_name = ? AND body ->> '$[0].n' = ?").bind(
        value,
        agentName,
        id,
      ),
    ]);
    for (const path of [`/incidents/${enc(id)}`, `/incidents?agentName=${enc(agentName)}`, "/partials/overview"]) {
      const html = await rendered(path);
      expect(html, path).toContain(marker);
    }
  });
});
