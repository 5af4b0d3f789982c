import { beforeAll, describe, expect, it } from "vitest";
import { publishEnvTeamKeys } from "../access-tokens";
import { hrefs, mustTestId } from "../html";
import { auditOf, call, csrfFor, exhaustedChatIncident, getText, ORIGIN, postForm, type StalledSession, stalledSession } from "./harness";

// Content negotiation: the CLI sends Accept: application/json and gets JSON; browsers get HTML pages;
// htmx gets HTML fragments. Same data either way.

const enc = encodeURIComponent;
const JSON_ACCEPT = { Accept: "application/json" };

let session: StalledSession;
let incidentId: string;
let incidentAgent: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  [session, { incidentId, agentName: incidentAgent }] = await Promise.all([stalledSession("ctype"), exhaustedChatIncident()]);
});

describe("reads", () => {
  it("/incidents answers JSON pages for Accept: application/json and an HTML page otherwise", async () => {
    const json = await call("/incidents?status=exhausted", { as: "viewer", headers: JSON_ACCEPT });
    expect(json.status).toBe(200);
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await json.json()) as { items: { incidentId: string; status: string; reason: string }[]; next: string | null; rowsRead: number };
    expect(body.items).toContainEqual(expect.objectContaining({ incidentId, status: "exhausted", reason: "max_attempts_exceeded" }));
    expect(body).toHaveProperty("next");
    expect(body.rowsRead).toBeTypeOf("number");

    const html = await getText("/incidents?status=exhausted", "viewer");
    expect(html.type).toMatch(/^text\/html/);
    // The detail link names its agent, so it stays unambiguous when two agents report the same id.
    expect(hrefs(mustTestId(html.text, "incidents").html)).toContain(`/incidents/${enc(incidentId)}?agentClass=ProbeAgent&agentName=${enc(incidentAgent)}`);
  });

  it("/incidents/:id answers the incident and its timeline as JSON", async () => {
    const res = await call(`/incidents/${enc(incidentId)}`, { as: "viewer", headers: JSON_ACCEPT });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { incident: { incidentId: string }; timeline: { items: { type: string; payload: { reason?: string } }[] } };
    expect(body.incident.incidentId).toBe(incidentId);
    expect(body.timeline.items.map((e) => e.type)).toContain("chat.recovery.exhausted");
    expect(body.timeline.items.find((e) => e.type === "chat.recovery.exhausted")?.payload.reason).toBe("max_attempts_exceeded");
  });

  it.each([
    ["/runs", () => ({ fiberId: session.runId, name: "session-turn", outcome: null })],
    ["/sessions", () => ({ sessionName: session.name, status: "running" })],
    ["/api/agents", () => ({ agentClass: "FaultySessionAgent", agentName: session.name })],
    ["/backups", null],
    ["/audit", null],
    ["/ops", null],
    ["/alerts", null],
  ] as const)("%s answers a JSON page too", async (path, item) => {
    const res = await call(path, { as: "viewer", headers: JSON_ACCEPT });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { items: unknown[]; next: unknown };
    expect(Array.isArray(body.items)).toBe(true);
    expect(body).toHaveProperty("next");
    if (item) expect(body.items).toContainEqual(expect.objectContaining(item()));
  });

  it("fragments for htmx are HTML without the page shell", async () => {
    for (const path of ["/partials/overview", `/agents/FaultySessionAgent/${enc(session.name)}/live`, `/sessions/${enc(session.name)}/status`]) {
      const res = await getText(path, "viewer", { "HX-Request": "true" });
      expect(res.status).toBe(200);
      expect(res.type).toMatch(/^text\/html/);
      expect(res.text).not.toContain("<html");
    }
  });
});

describe("actions", () => {
  it("answer the admin result as JSON for Accept: application/json, and an HTML fragment otherwise", async () => {
    const csrf = await csrfFor("operator");
    const s = await stalledSession("ctype-act");
    const json = await postForm(
      "/actions/trigger-alarm",
      "operator",
      { agentClass: s.agentClass, agentName: s.name, reason: "json please" },
      { csrf, headers: JSON_ACCEPT },
    );
    expect(json.status).toBe(200);
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json.json()).toMatchObject({ ok: true, value: { before: { status: "running" }, after: { status: "running" }, recoveredRuns: [] } });

    const html = await postForm("/actions/force-idle", "operator", { agentClass: s.agentClass, agentName: s.name, reason: "html please" }, { csrf });
    expect(html.status).toBe(200);
    expect(html.headers.get("content-type")).toMatch(/^text\/html/);
    const fragment = await html.text();
    expect(fragment.startsWith("<div")).toBe(true);
    const result = mustTestId(fragment, "action-result");
    expect(result.attrs).toMatchObject({ "data-ok": "true", "data-action": "force_idle" });
    expect(hrefs(result.html)).toContain(`/audit?targetName=${enc(s.name)}`);

    const again = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: s.agentClass, agentName: s.name, reason: "json again" },
      { csrf, headers: JSON_ACCEPT },
    );
    expect(await again.json()).toMatchObject({ ok: true, value: { noop: true } });
    expect((await auditOf(s.name)).map((a) => [a.action, a.result])).toEqual([
      ["trigger_alarm", "ok"],
      ["force_idle", "ok"],
      ["force_idle", "noop"],
    ]);
  });

  it("answer failures as JSON with a status that says what went wrong", async () => {
    const csrf = await csrfFor("operator");
    const cases: [Record<string, string>, number, string][] = [
      [{ agentClass: "ProbeAgent", agentName: "nobody-here", reason: "r" }, 404, "not_found"],
      [{ agentClass: "Not A Class", agentName: "x", reason: "r" }, 400, "invalid_input"],
      [{ agentClass: session.agentClass, agentName: session.name, reason: "" }, 400, "invalid_input"],
      [{ agentClass: session.agentClass, agentName: "" }, 400, "invalid_input"],
    ];
    for (const [form, status, code] of cases) {
      const res = await postForm("/actions/force-idle", "operator", form, { csrf, headers: JSON_ACCEPT });
      expect(res.status, JSON.stringify(form)).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await res.json()).toMatchObject({ ok: false, error: { code, message: expect.any(String) } });
    }
    expect(await session.stub.status()).toBe("running");
  });

  it("answer refusals as JSON: a viewer's and a CSRF failure", async () => {
    const viewer = await postForm(
      "/actions/force-idle",
      "viewer",
      { agentClass: session.agentClass, agentName: session.name, reason: "r" },
      {
        csrf: await csrfFor("viewer"),
        headers: JSON_ACCEPT,
      },
    );
    expect(viewer.status).toBe(403);
    expect(viewer.headers.get("content-type")).toMatch(/^application\/json/);
    // The role is checked by the audited admin client, so the refusal has the admin contract's shape.
    expect(await viewer.json()).toEqual({
      ok: false,
      error: { code: "not_permitted", message: "refused: viewer@example.com has the viewer role; this action needs operator" },
    });

    const csrf = await call("/actions/trigger-alarm", { as: "operator", method: "POST", headers: { ...JSON_ACCEPT, Origin: ORIGIN } });
    expect(csrf.status).toBe(403);
    expect(await csrf.json()).toMatchObject({ ok: false, error: { code: "csrf_missing" } });
    expect(await session.stub.status()).toBe("running");
  });
});
