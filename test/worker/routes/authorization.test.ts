import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { saveView } from "../../../src/store/views";
import { app } from "../../../worker/app";
import { rejectionOf } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";

/** A refusal's code, wherever the answer shows it: the JSON body (/api), the auth page, the error page or an action's result. */
const refusalCode = (text: string) =>
  text.startsWith("{")
    ? (JSON.parse(text) as { error?: { code?: string } }).error?.code
    : (byTestId(text, "auth-problem") ?? byTestId(text, "error-message") ?? byTestId(text, "action-result"))?.attrs["data-code"];
/** An action's result says it was done, and which action. */
const expectDone = (html: string, action: string) =>
  expect(mustTestId(html, "action-result").attrs).toMatchObject({ "data-ok": "true", "data-action": action });

import {
  accessToken,
  ambiguousCharge,
  auditOf,
  bulkBatch,
  call,
  csrfFor,
  exhaustedChatIncident,
  expectStillRunning,
  getText,
  postForm,
  type StalledSession,
  stalledSession,
  USERS,
  uid,
  type Who,
} from "./harness";

// The authorization matrix: every route of the console × anonymous, a verified email without a role,
// viewer and operator, against the real Worker with real Access tokens. The table below is checked
// against the routes the app actually registers, so a new route must be added here to pass.

type Fixture = { session: StalledSession; incidentId: string; victim: StalledSession; batchId: string; bulkReason: string; teamViewId: string };
const enc = encodeURIComponent;

type Base = { method: "GET" | "POST"; pattern: string; url: (fx: Fixture) => string };
type Route =
  | (Base & { kind: "public" })
  /** A read: 200 for both roles, showing these texts. */
  | (Base & { kind: "read"; shows: (fx: Fixture, who: "viewer" | "operator") => string[] })
  /** An operator action on an agent: `prepare` readies a fresh target, `effect` checks it ran. */
  | (Base & { kind: "action"; action: string; prepare?: (s: StalledSession) => Promise<void>; effect: (s: StalledSession) => Promise<void> })
  /**
   * An operator action on one op of an agent's ledger: `target` readies an agent with an ambiguous op and the
   * form fields naming it; refused callers aim at the stalled victim, which must stay untouched.
   */
  | (Base & {
      kind: "op_action";
      action: string;
      target: () => Promise<{ agentClass: string; name: string; fields: Record<string, string>; effect: () => Promise<void> }>;
    })
  /**
   * An operator-only request that acts on no single agent: `okStatus` (default 200) for an operator, showing these
   * texts; 403 for a viewer, saying `viewerSees`. `form` is what is posted (default nothing).
   */
  | (Base & { kind: "operate"; shows: string[]; form?: (fx: Fixture) => Record<string, string>; okStatus?: number; viewerSees?: string })
  /**
   * A change to the caller's own things (saved views): any signed-in role may make it, answered `okStatus` (JSON).
   * `urlAs` readies a target of the caller's own (default: `url`).
   */
  | (Base & { kind: "personal"; form: () => Record<string, string>; okStatus: number; urlAs?: (who: "viewer" | "operator") => Promise<string> })
  /** A dev-mode helper: does not exist in access mode. */
  | (Base & { kind: "dev" });

const agentPath = (fx: Fixture) => `/agents/FaultySessionAgent/${enc(fx.session.name)}`;

const ROUTES: Route[] = [
  { kind: "public", method: "GET", pattern: "/health", url: () => "/health" },
  // The page draws its first screen; the 24 h part (below) loads as a fragment.
  {
    kind: "read",
    method: "GET",
    pattern: "/",
    url: () => "/",
    shows: () => ["On-call overview", 'data-testid="now-figures"', 'hx-get="/partials/overview"'],
  },
  { kind: "read", method: "GET", pattern: "/partials/overview", url: () => "/partials/overview", shows: () => ["Running runs", "Top exhaustion reasons"] },
  {
    kind: "read",
    method: "GET",
    pattern: "/partials/overview-now",
    url: () => "/partials/overview-now",
    shows: () => ['data-testid="overview-now"', "Recovery attempts"],
  },
  { kind: "read", method: "GET", pattern: "/incidents", url: () => "/incidents", shows: (fx) => [fx.incidentId] },
  { kind: "read", method: "GET", pattern: "/partials/incidents", url: () => "/partials/incidents", shows: (fx) => [fx.incidentId, 'data-testid="incidents"'] },
  {
    kind: "read",
    method: "GET",
    pattern: "/events",
    url: () => "/events?type=chat.recovery.exhausted",
    shows: () => ['data-testid="events"', "chat.recovery.exhausted"],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/incidents/:incidentId",
    url: (fx) => `/incidents/${enc(fx.incidentId)}`,
    shows: (fx) => [`Incident ${fx.incidentId}`, "chat.recovery.exhausted", "max_attempts_exceeded"],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/incidents/:incidentId/facts",
    url: (fx) => `/incidents/${enc(fx.incidentId)}/facts`,
    shows: () => ['id="incident-facts"', "max_attempts_exceeded"],
  },
  { kind: "read", method: "GET", pattern: "/runs", url: () => "/runs", shows: (fx) => [fx.session.runId] },
  // A download of a list: any role may export (it only reads).
  { kind: "read", method: "GET", pattern: "/export/:list", url: () => "/export/runs?format=csv", shows: (fx) => ["runId", fx.session.runId] },
  {
    kind: "read",
    method: "GET",
    pattern: "/runs/:fiberId",
    url: (fx) => `/runs/${enc(fx.session.runId)}`,
    shows: (fx) => [fx.session.runId, "Fiber session-turn", "streamedChars"],
  },
  // Old links: redirected (followed here, as a browser does) to the runs pages, behind the same sign-in.
  { kind: "read", method: "GET", pattern: "/fibers", url: () => "/fibers", shows: (fx) => [fx.session.runId] },
  {
    kind: "read",
    method: "GET",
    pattern: "/fibers/:runId",
    url: (fx) => `/fibers/${enc(fx.session.runId)}`,
    shows: (fx) => [fx.session.runId, "Fiber session-turn"],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName",
    url: agentPath,
    shows: (fx, who) => ["Run history", fx.session.runId, who === "operator" ? "Confirm force idle" : "need the operator role; you are signed in as a viewer"],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName/live",
    url: (fx) => `${agentPath(fx)}/live`,
    shows: (fx) => ["Live runs", fx.session.runId, ">running<"],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName/history",
    url: (fx) => `${agentPath(fx)}/history`,
    shows: (fx) => ['data-testid="run-history"', fx.session.runId],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName/awake",
    url: (fx) => `${agentPath(fx)}/awake`,
    shows: () => ['data-testid="awake-panel"', 'data-holder="keepalive"'],
  },
  { kind: "read", method: "GET", pattern: "/awake", url: () => "/awake", shows: () => ["<h1>Awake</h1>"] },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName/pause",
    url: (fx) => `${agentPath(fx)}/pause`,
    shows: () => ['data-testid="recovery-pause"'],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents/:agentClass/:agentName/runs/:runId",
    url: (fx) => `${agentPath(fx)}/runs/${enc(fx.session.runId)}`,
    shows: (fx) => ["Snapshot (live)", fx.session.runId, "streamedChars"],
  },
  { kind: "read", method: "GET", pattern: "/sessions", url: () => "/sessions", shows: (fx) => [fx.session.name] },
  {
    kind: "read",
    method: "GET",
    pattern: "/sessions/:name",
    url: (fx) => `/sessions/${enc(fx.session.name)}`,
    shows: (fx) => [`Session ${fx.session.name}`, "session.status_running"],
  },
  { kind: "read", method: "GET", pattern: "/sessions/:name/status", url: (fx) => `/sessions/${enc(fx.session.name)}/status`, shows: () => [">running<"] },
  { kind: "read", method: "GET", pattern: "/backups", url: () => "/backups", shows: () => ["Workspace backups"] },
  { kind: "read", method: "GET", pattern: "/deploys", url: () => "/deploys", shows: () => ["<h1>Deploys</h1>", "All incidents grouped by version"] },
  {
    kind: "read",
    method: "GET",
    pattern: "/dead-letters",
    url: () => "/dead-letters",
    shows: () => ["Dead letters: events lost on the way", "never became an event"],
  },
  { kind: "read", method: "GET", pattern: "/audit", url: () => "/audit", shows: () => ["Audit log"] },
  { kind: "read", method: "GET", pattern: "/ops", url: () => "/ops", shows: () => ["Ambiguous operations"] },
  { kind: "read", method: "GET", pattern: "/alerts", url: () => "/alerts", shows: () => ["Alerts are on"] },
  { kind: "read", method: "GET", pattern: "/search", url: (fx) => `/search?q=${enc(fx.session.name)}`, shows: (fx) => [fx.session.name] },
  { kind: "read", method: "GET", pattern: "/stuck", url: () => "/stuck", shows: () => ["<h1>Stuck</h1>", "STUCK_NO_PROGRESS_MINUTES"] },
  { kind: "read", method: "GET", pattern: "/partials/stuck", url: () => "/partials/stuck", shows: () => ['data-testid="stuck'] },
  {
    kind: "read",
    method: "GET",
    pattern: "/agents",
    url: () => "/agents?agentClass=FaultySessionAgent",
    shows: (fx) => ['data-testid="agents"', fx.session.name],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/api/agents",
    url: () => "/api/agents?agentClass=FaultySessionAgent",
    shows: (fx) => [`"agentName":"${fx.session.name}"`],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/api/agents/:agentClass/:agentName",
    url: (fx) => `/api/agents/FaultySessionAgent/${enc(fx.session.name)}`,
    shows: (fx) => ['"status":"running"', fx.session.runId],
  },
  { kind: "operate", method: "POST", pattern: "/api/reconcile", url: () => "/api/reconcile", shows: ['"ok":true', '"asked":', '"findings":', '"unanswered":'] },
  {
    kind: "read",
    method: "GET",
    pattern: "/bulk",
    url: (fx) => `/bulk?incidentReason=${enc(fx.bulkReason)}`,
    shows: (_fx, who) => [
      'data-testid="bulk-count">1<',
      who === "operator" ? "Confirm on 1 agent" : "Bulk actions need the operator role; you are signed in as a viewer.",
    ],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/bulk/batches/:batchId",
    url: (fx) => `/bulk/batches/${fx.batchId}`,
    shows: (fx) => [fx.batchId, "Bulk trigger alarm", 'data-testid="batch-progress"'],
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/bulk/batches/:batchId/progress",
    url: (fx) => `/bulk/batches/${fx.batchId}/progress`,
    shows: () => ['data-testid="batch-progress"', 'data-testid="batch-total">1<'],
  },
  {
    kind: "operate",
    method: "POST",
    pattern: "/bulk",
    url: () => "/bulk",
    okStatus: 202,
    form: (fx) => ({ incidentReason: fx.bulkReason, action: "trigger_alarm", reason: "matrix bulk" }),
    shows: ['"ok":true', '"batchId":', '"total":1'],
    viewerSees: "viewer@example.com has the viewer role; bulk actions need operator",
  },
  {
    kind: "read",
    method: "GET",
    pattern: "/api/csrf",
    url: () => "/api/csrf",
    shows: (_fx, who) => [`"email":"${USERS[who]}"`, `"role":"${who}"`, '"token":"'],
  },
  {
    kind: "action",
    method: "POST",
    pattern: "/actions/force-idle",
    url: () => "/actions/force-idle",
    action: "force_idle",
    effect: async (s) => {
      expect(await s.stub.status()).toBe("idle");
      expect(await s.stub.runRows()).toEqual([]);
    },
  },
  {
    kind: "action",
    method: "POST",
    pattern: "/actions/trigger-alarm",
    url: () => "/actions/trigger-alarm",
    action: "trigger_alarm",
    // Evicted mid-turn: the alarm the operator triggers is what recovers the orphaned turn.
    prepare: async (s) => void (await rejectionOf(s.stub.evict())),
    effect: async (s) => {
      const after = await getAgentByName(env.FaultySessionAgent, s.name);
      expect(await after.recoveries(1)).toBe(1);
    },
  },
  {
    kind: "action",
    method: "POST",
    pattern: "/actions/pause-recovery",
    url: () => "/actions/pause-recovery",
    action: "pause_recovery",
    effect: async (s) => {
      const st = await s.stub.adminStatus();
      expect(st.ok && st.value.recoveryPause).toMatchObject({ active: true, reason: "matrix pause_recovery as operator" });
    },
  },
  {
    kind: "action",
    method: "POST",
    pattern: "/actions/resume-recovery",
    url: () => "/actions/resume-recovery",
    action: "resume_recovery",
    // A pause to resume, put on by the agent's own RPC (not through the console, so not audited).
    prepare: async (s) => void (await s.stub.adminPauseRecovery({ reason: "held for the matrix", hours: 1 })),
    effect: async (s) => {
      const st = await s.stub.adminStatus();
      expect(st.ok && st.value.recoveryPause).toBeNull();
    },
  },
  {
    kind: "op_action",
    method: "POST",
    pattern: "/actions/resolve-op",
    url: () => "/actions/resolve-op",
    action: "resolve_op",
    target: async () => {
      const c = await ambiguousCharge("matrix-op");
      return {
        agentClass: c.agentClass,
        name: c.name,
        fields: { opId: c.opId, resolution: "verified_not_ran" },
        effect: async () => expect((await c.stub.ops()).find((o) => o.op_id === c.opId)?.status).toBe("resolved"),
      };
    },
  },
  { kind: "read", method: "GET", pattern: "/views", url: () => "/views", shows: (fx) => ["Saved views", fx.teamViewId] },
  { kind: "read", method: "GET", pattern: "/partials/views", url: () => "/partials/views", shows: (fx) => [`data-view-id="${fx.teamViewId}"`] },
  // Followed to the list it opens: the incidents, marked with the view.
  {
    kind: "read",
    method: "GET",
    pattern: "/views/:viewId",
    url: (fx) => `/views/${fx.teamViewId}`,
    shows: (fx) => ['data-testid="incidents"', `data-testid="view-marker" data-view-id="${fx.teamViewId}"`],
  },
  {
    kind: "personal",
    method: "POST",
    pattern: "/views",
    url: () => "/views",
    okStatus: 201,
    form: () => ({ name: `matrix ${uid()}`, list: "incidents", query: "status=open" }),
  },
  // Also undoes what opening the team view above recorded: the viewer's and operator's bare /incidents is unfiltered again.
  { kind: "personal", method: "POST", pattern: "/views/forget", url: () => "/views/forget", okStatus: 200, form: () => ({ list: "incidents" }) },
  {
    kind: "personal",
    method: "POST",
    pattern: "/views/:viewId/delete",
    url: (fx) => `/views/${fx.teamViewId}/delete`,
    okStatus: 200,
    form: () => ({}),
    urlAs: async (who) => {
      const r = await saveView(env.DB, { owner: USERS[who], shelf: "personal", list: "runs", name: `matrix delete ${uid()}`, query: "" }, Date.now());
      if (!r.ok) throw new Error(r.reason);
      return `/views/${r.view.viewId}/delete`;
    },
  },
];

/** The status each kind of route answers each caller. */
function expectedStatus(route: Route, who: Who): number {
  if (route.kind === "public") return 200;
  if (who === "anonymous") return 401;
  if (who === "norole") return 403;
  if (route.kind === "read") return 200;
  if (route.kind === "operate" && who === "operator") return route.okStatus ?? 200;
  if (route.kind === "personal") return route.okStatus;
  return who === "operator" ? 200 : 403;
}

const WHO: Who[] = ["anonymous", "norole", "viewer", "operator"];

let fx: Fixture;

beforeAll(async () => {
  await publishEnvTeamKeys();
  const [session, victim, incident, batch] = await Promise.all([
    stalledSession("matrix"),
    stalledSession("victim"),
    exhaustedChatIncident(),
    bulkBatch("matrix"),
  ]);
  const team = await saveView(
    env.DB,
    { owner: USERS.operator, shelf: "team", list: "incidents", name: `matrix team ${uid()}`, query: "status=exhausted" },
    Date.now(),
  );
  if (!team.ok) throw new Error(team.reason);
  fx = { session, victim, incidentId: incident.incidentId, batchId: batch.batchId, bulkReason: batch.reason, teamViewId: team.view.viewId };
});

describe("the route table", () => {
  it("lists every route the app registers, and only those", () => {
    // A route with a middleware (requireRole) registers one entry per handler: compare the distinct routes.
    const registered = new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`));
    const listed = ROUTES.map((r) => `${r.method} ${r.pattern}`);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.sort()).toEqual([...registered].sort());
  });
});

describe.each(ROUTES)("$method $pattern", (route) => {
  it.each(WHO)("as %s", async (who) => {
    const expected = expectedStatus(route, who);
    const url = route.url(fx);

    if (route.method === "GET") {
      const res = await getText(url, who);
      expect(res.status).toBe(expected);
      if (route.kind === "public") expect(JSON.parse(res.text)).toEqual({ ok: true });
      else if (who === "anonymous") expect(refusalCode(res.text)).toBe("missing");
      else if (who === "norole") expect(refusalCode(res.text)).toBe("no_role");
      else if (route.kind === "read") for (const s of route.shows(fx, who)) expect(res.text).toContain(s);
      return;
    }

    // State-changing routes. Signed-in callers send a valid CSRF token of their own, so only the role decides.
    const csrf = who === "viewer" || who === "operator" ? await csrfFor(who) : undefined;
    if (route.kind === "action") {
      const target = who === "operator" ? await stalledSession(`act-${route.action}`) : fx.victim;
      if (who === "operator") await route.prepare?.(target);
      const res = await postForm(url, who, { agentClass: target.agentClass, agentName: target.name, reason: `matrix ${route.action} as ${who}` }, { csrf });
      const text = await res.text();
      expect(res.status).toBe(expected);
      if (who === "operator") {
        expectDone(text, route.action);
        await route.effect(target);
        expect(await auditOf(target.name)).toEqual([
          { actor: USERS.operator, role: "operator", action: route.action, reason: `matrix ${route.action} as operator`, result: "ok", error: null },
        ]);
        return;
      }
      if (who === "anonymous") expect(refusalCode(text)).toBe("missing");
      if (who === "norole") expect(refusalCode(text)).toBe("no_role");
      if (who === "viewer") expect(refusalCode(text)).toBe("not_permitted");
      // Refused means not executed: the agent is untouched. A signed-in viewer's attempt is audited as denied;
      // callers who never signed in did not reach the admin client at all.
      await expectStillRunning(target);
      const mine = (await auditOf(target.name)).filter((a) => a.reason === `matrix ${route.action} as ${who}`);
      expect(mine).toEqual(
        who === "viewer"
          ? [
              {
                actor: USERS.viewer,
                role: "viewer",
                action: route.action,
                reason: `matrix ${route.action} as viewer`,
                result: "denied",
                error: expect.stringContaining("not_permitted"),
              },
            ]
          : [],
      );
      return;
    }

    if (route.kind === "op_action") {
      const reason = `matrix ${route.action} as ${who}`;
      const t =
        who === "operator"
          ? await route.target()
          : { agentClass: fx.victim.agentClass, name: fx.victim.name, fields: { opId: "op-matrix", resolution: "verified_not_ran" }, effect: async () => {} };
      const res = await postForm(url, who, { agentClass: t.agentClass, agentName: t.name, ...t.fields, reason }, { csrf });
      const text = await res.text();
      expect(res.status).toBe(expected);
      if (who === "operator") {
        expectDone(text, route.action);
        await t.effect();
        expect(await auditOf(t.name)).toEqual([{ actor: USERS.operator, role: "operator", action: route.action, reason, result: "ok", error: null }]);
        return;
      }
      if (who === "viewer") expect(refusalCode(text)).toBe("not_permitted");
      await expectStillRunning(fx.victim);
      expect((await auditOf(fx.victim.name)).filter((a) => a.reason === reason)).toEqual(
        who === "viewer"
          ? [{ actor: USERS.viewer, role: "viewer", action: route.action, reason, result: "denied", error: expect.stringContaining("not_permitted") }]
          : [],
      );
      return;
    }

    if (route.kind === "operate") {
      const res = await postForm(url, who, route.form?.(fx) ?? {}, { csrf, headers: { Accept: "application/json" } });
      const text = await res.text();
      expect(res.status).toBe(expected);
      if (who === "operator") for (const s of route.shows) expect(text).toContain(s);
      if (who === "viewer") expect(text).toContain(route.viewerSees ?? "viewer@example.com has the viewer role; this needs the operator role");
      return;
    }

    if (route.kind === "personal") {
      const url = route.urlAs && (who === "viewer" || who === "operator") ? await route.urlAs(who) : route.url(fx);
      const res = await postForm(url, who, route.form(), { csrf, headers: { Accept: "application/json" } });
      const text = await res.text();
      expect(res.status).toBe(expected);
      if (who === "viewer" || who === "operator") expect(JSON.parse(text)).toMatchObject({ ok: true });
      return;
    }

    throw new Error(`no POST handling for ${route.kind}`);
  });
});

describe("refusals are plain and uncached", () => {
  it("answers JSON clients and htmx in their own form", async () => {
    const anon = await call("/incidents", { headers: { Accept: "application/json" } });
    expect(anon.status).toBe(401);
    expect(anon.headers.get("content-type")).toMatch(/application\/json/);
    expect(anon.headers.get("cache-control")).toBe("no-store");
    expect(await anon.json()).toMatchObject({ ok: false, error: { code: "missing" } });

    const norole = await call("/api/csrf", { as: "norole", headers: { Accept: "application/json" } });
    expect(norole.status).toBe(403);
    expect(await norole.json()).toMatchObject({ ok: false, error: { code: "no_role" } });

    const viewer = await postForm(
      "/actions/force-idle",
      "viewer",
      { agentClass: "FaultySessionAgent", agentName: fx.victim.name, reason: "htmx" },
      {
        csrf: await csrfFor("viewer"),
        headers: { "HX-Request": "true" },
      },
    );
    // htmx gets the inline result fragment it swaps into the page.
    expect(viewer.status).toBe(403);
    expect(viewer.headers.get("content-type")).toMatch(/text\/html/);
    const result = mustTestId(await viewer.text(), "action-result");
    expect(result.attrs).toMatchObject({ "data-ok": "false", "data-code": "not_permitted" });
    expect(result.text).toContain(USERS.viewer);
    await expectStillRunning(fx.victim);
  });

  it("accepts the token from the CF_Authorization cookie as the browser sends it", async () => {
    const res = await call("/api/csrf", { headers: { Cookie: `CF_Authorization=${await accessToken(USERS.viewer)}`, Accept: "application/json" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ user: { email: USERS.viewer, role: "viewer", via: "access" } });
  });
});
