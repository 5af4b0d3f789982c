import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { auditOf, csrfFor, escapeHtml, getText, postForm, registerAgent, uid, type Who } from "./harness";

// Markup in every kind of value the console shows, put there through the real paths (a fiber's stash,
// the runtime's events, the SDK's chat-recovery events, an agent's name, an operator's reason, the URL),
// then every page that shows it: the raw markup must never appear, and its escaped form must (so the value
// is shown, not dropped). Each source gets its own #tag so a page proves which values it rendered.

const PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(2)>";
const mark = (tag: string) => `${PAYLOAD}#${tag}`;
const enc = encodeURIComponent;

/** The page never carries the payload as markup, and shows each tagged value escaped. */
function expectEscaped(page: string, tags: string[]) {
  expect(page).not.toContain("<script>alert(1)");
  expect(page).not.toMatch(/<img[^>]*onerror/i);
  // The only <script> elements are the layout's own external ones.
  expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
  for (const tag of tags) expect(page, `shows #${tag} escaped`).toContain(escapeHtml(mark(tag)));
}

type Seeded = {
  fiberAgent: string;
  runId: string;
  markupAgent: string;
  chatIncident: string;
  turnIncident: string;
};
let s: Seeded;

beforeAll(async () => {
  await publishEnvTeamKeys();

  // (a) A fiber whose name and stashed snapshot carry markup: live run row (admin RPC) and runs.snapshot_preview (telemetry).
  const fiberAgent = `xss-fiber-${uid()}`;
  const a = await getAgentByName(env.ProbeAgent, fiberAgent);
  await a.startHangingFiber(undefined, `hang ${mark("fibername")}`, { note: mark("snapshot"), step: 1 });
  const runId = (await a.runRows())[0]!.id;
  await pollRows("SELECT 1 FROM runs WHERE fiber_id = ? AND snapshot_preview LIKE '%#snapshot%'", [runId], (r) => r.length === 1);

  // (b) An agent whose NAME is markup, reporting a session, an ambiguous op, a session error, a chat exhaustion and a backup.
  const markupAgent = `xss-${uid()} ${mark("agentname")}`;
  const b = await getAgentByName(env.ProbeAgent, markupAgent);
  const session = { sessionName: markupAgent };
  const turnIncident = `turn:ProbeAgent/${markupAgent}/2`;
  const chatIncident = `req-${uid()}:msg-1`;
  await b.recordEvent("session.status_running", { turnSeq: 1 }, session);
  await b.recordEvent(
    "op.ambiguous",
    { opKind: `payment.charge ${mark("opkind")}`, turnSeq: 1, detail: mark("opdetail") },
    { ...session, opId: `op-${uid()}` },
  );
  await b.recordEvent("session.error", { turnSeq: 2, error: mark("sessionerror") }, { ...session, incidentId: turnIncident });
  await b.emitSdkEvent("chat:recovery:exhausted", {
    incidentId: chatIncident,
    requestId: chatIncident.split(":")[0],
    attempt: 3,
    maxAttempts: 3,
    recoveryKind: "retry",
    reason: mark("reason"),
    partialText: mark("partial"),
    terminalMessage: mark("terminal"),
  });
  // An incident still open: the overview's worst open incidents show the agent's name.
  const openIncident = `req-${uid()}:msg-2`;
  await b.recordEvent(
    "chat.recovery.attempt",
    { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
    { incidentId: openIncident, requestId: openIncident.split(":")[0] },
  );
  await b.recordEvent(
    "backup.created",
    {
      handle: `ws/${uid()}/${mark("handle")}`,
      tenant: mark("tenant"),
      environment: "prod",
      sessionName: markupAgent,
      expiresAt: Date.now() + 86_400_000,
      bytes: 42,
    },
    session,
  );

  await pollRows("SELECT 1 FROM sessions WHERE session_name = ?", [markupAgent], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM op_ambiguities WHERE session_name = ?", [markupAgent], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM workspace_backups WHERE session_name = ?", [markupAgent], (r) => r.length === 1);
  await pollRows("SELECT incident_id FROM incidents WHERE incident_id IN (?, ?) AND status = 'exhausted'", [chatIncident, turnIncident], (r) => r.length === 2);
  await pollRows("SELECT 1 FROM events WHERE incident_id = ? AND type = 'session.error'", [turnIncident], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM incidents WHERE incident_id = ? AND status = 'open'", [openIncident], (r) => r.length === 1);
  // Alerts on the two exhaustions and the ambiguous op, one per channel (the test config sets both).
  await pollRows("SELECT 1 FROM alert_deliveries WHERE agent_name = ?", [markupAgent], (r) => r.length === 6);
  s = { fiberAgent, runId, markupAgent, chatIncident, turnIncident };
});

type PageCase = { page: string; path: () => string; tags: string[] };

const PAGES: PageCase[] = [
  // (a) the fiber snapshot and name
  { page: "fiber page", path: () => `/runs/${enc(s.runId)}`, tags: ["snapshot", "fibername"] },
  {
    page: "run snapshot viewer (live, through admin RPC)",
    path: () => `/agents/ProbeAgent/${enc(s.fiberAgent)}/runs/${enc(s.runId)}`,
    tags: ["snapshot", "fibername"],
  },
  { page: "agent page of the fiber's agent", path: () => `/agents/ProbeAgent/${enc(s.fiberAgent)}`, tags: ["fibername"] },
  { page: "agent live fragment", path: () => `/agents/ProbeAgent/${enc(s.fiberAgent)}/live`, tags: ["fibername"] },
  { page: "fiber list", path: () => `/runs?agentName=${enc(s.fiberAgent)}`, tags: ["fibername"] },
  // (b) event text and the agent name
  { page: "agent page of the markup-named agent", path: () => `/agents/ProbeAgent/${enc(s.markupAgent)}`, tags: ["agentname"] },
  { page: "chat incident drill-down", path: () => `/incidents/${enc(s.chatIncident)}`, tags: ["reason", "partial", "terminal", "agentname"] },
  { page: "turn incident drill-down", path: () => `/incidents/${enc(s.turnIncident)}`, tags: ["sessionerror", "agentname"] },
  { page: "incident list", path: () => `/incidents?agentName=${enc(s.markupAgent)}`, tags: ["reason", "sessionerror", "agentname"] },
  { page: "incidents grouped by reason", path: () => `/incidents?agentName=${enc(s.markupAgent)}&groupBy=reason`, tags: ["reason", "sessionerror"] },
  { page: "incidents grouped by agent", path: () => `/incidents?agentName=${enc(s.markupAgent)}&groupBy=agent`, tags: ["agentname"] },
  { page: "session list", path: () => "/sessions", tags: ["agentname"] },
  { page: "session page", path: () => `/sessions/${enc(s.markupAgent)}`, tags: ["sessionerror", "opdetail", "agentname"] },
  { page: "ops page", path: () => "/ops", tags: ["opdetail", "opkind", "agentname"] },
  { page: "backups page", path: () => "/backups", tags: ["tenant", "handle", "agentname"] },
  { page: "alerts page", path: () => "/alerts", tags: ["reason", "sessionerror", "opkind", "opdetail", "agentname"] },
  // The page's first screen shows neither (they are in its lazily loaded part, the fragment below): escaped all the same.
  { page: "overview", path: () => "/", tags: [] },
  { page: "overview fragment", path: () => "/partials/overview", tags: ["reason", "agentname"] },
  // values reflected from the URL
  { page: "incident list with a markup filter", path: () => `/incidents?reason=${enc(mark("filter"))}`, tags: ["filter"] },
  { page: "fiber list with a markup filter", path: () => `/runs?agentClass=${enc(mark("filter"))}`, tags: ["filter"] },
  { page: "audit list with a markup filter", path: () => `/audit?actor=${enc(mark("filter"))}`, tags: ["filter"] },
  { page: "bulk preview with a markup filter", path: () => `/bulk?incidentReason=${enc(mark("filter"))}&agentClass=${enc(mark("filter"))}`, tags: ["filter"] },
  { page: "bulk preview listing the markup-named agent", path: () => "/bulk?agentClass=ProbeAgent", tags: ["agentname"] },
];

describe.each(["viewer", "operator"] as const)("as %s", (who: Who) => {
  it.each(PAGES)("$page escapes every value", async ({ path, tags }) => {
    const res = await getText(path(), who);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/text\/html/);
    expectEscaped(res.text, tags);
  });
});

describe("error pages and action results", () => {
  it("escapes ids and filter values echoed in 404 and 400 pages", async () => {
    const cases: [string, number, string][] = [
      [`/incidents/${enc(mark("id404"))}`, 404, escapeHtml(mark("id404"))],
      [`/runs/${enc(mark("id404"))}`, 404, escapeHtml(mark("id404"))],
      [`/sessions/${enc(mark("id404"))}`, 404, escapeHtml(mark("id404"))],
      [`/agents/ProbeAgent/${enc(mark("id404"))}`, 404, escapeHtml(mark("id404"))],
      [`/agents/ProbeAgent/${enc(s.fiberAgent)}/runs/${enc(mark("id404"))}`, 404, escapeHtml(mark("id404"))],
      [`/incidents?status=${enc(mark("bad400"))}`, 400, escapeHtml(mark("bad400"))],
      [`/runs?since=${enc(mark("bad400"))}`, 400, escapeHtml(mark("bad400"))],
      // The router decodes the path with decodeURI, which keeps reserved characters (/ = #) encoded.
      [`/no/such/page/${enc(mark("path404"))}`, 404, "&lt;script&gt;alert(1)&lt;%2Fscript&gt;&lt;img src%3Dx onerror%3Dalert(2)&gt;%23path404"],
    ];
    for (const [path, status, shown] of cases) {
      const res = await getText(path, "viewer");
      expect(res.status, path).toBe(status);
      expectEscaped(res.text, []);
      // Messages quote the value as text: shown, escaped.
      expect(res.text, path).toContain(shown);
    }
  });

  it("escapes the agent name in an action's result and the operator's reason in the audit log", async () => {
    const csrf = await csrfFor("operator");
    const ran = await postForm(
      "/actions/trigger-alarm",
      "operator",
      { agentClass: "ProbeAgent", agentName: s.markupAgent, reason: mark("auditreason") },
      { csrf },
    );
    expect(ran.status).toBe(200);
    const ranText = await ran.text();
    expect(mustTestId(ranText, "action-result").attrs).toMatchObject({ "data-ok": "true", "data-action": "trigger_alarm" });
    expectEscaped(ranText, []);
    expect(await auditOf(s.markupAgent)).toEqual([expect.objectContaining({ action: "trigger_alarm", result: "ok", reason: mark("auditreason") })]);

    const missing = await postForm("/actions/force-idle", "operator", { agentClass: "ProbeAgent", agentName: mark("missing"), reason: "nobody" }, { csrf });
    expect(missing.status).toBe(404);
    const missingText = await missing.text();
    expect(mustTestId(missingText, "action-result").attrs).toMatchObject({ "data-ok": "false", "data-code": "not_found" });
    expectEscaped(missingText, ["missing"]);

    for (const who of ["viewer", "operator"] as const) {
      const audit = await getText(`/audit?targetName=${enc(s.markupAgent)}`, who);
      expect(audit.status).toBe(200);
      expectEscaped(audit.text, ["auditreason", "agentname"]);
      const unknown = await getText(`/audit?targetName=${enc(mark("missing"))}`, who);
      expectEscaped(unknown.text, ["missing"]);
    }
  });

  it("escapes a fiber's name in the verified after-state: the result's sentence, the live panel out of band, and the audit page", async () => {
    const name = `xss-stubborn-${uid()}`;
    const stub = await getAgentByName(env.StubbornAgent, name);
    await stub.startStubborn(`export ${mark("stubbornfiber")}`);
    // Known to the console (the fixture has no telemetry of its own): a registry row like any agent's.
    await registerAgent("StubbornAgent", name);
    try {
      const res = await postForm(
        "/actions/force-idle",
        "operator",
        { agentClass: "StubbornAgent", agentName: name, reason: "xss", panel: "agent-live" },
        { csrf: await csrfFor("operator"), headers: { "HX-Request": "true" } },
      );
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('hx-swap-oob="innerHTML"');
      expectEscaped(text, ["stubbornfiber"]);
      const audit = await getText(`/audit?targetName=${enc(name)}`, "viewer");
      expectEscaped(audit.text, ["stubbornfiber"]);
    } finally {
      await stub.evict().catch(() => {});
    }
  });
});
