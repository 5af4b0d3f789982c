import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { expect } from "vitest";
import { pollRows } from "../../helpers";
import { patient } from "../../patience";
import { envToken } from "../access-tokens";

/**
 * Shared by the route tests: calls to the real Worker (the test entry's default export, i.e. the
 * instrumented console Worker) with real Access tokens, CSRF tokens taken from the pages, and seeding
 * through real agents (their telemetry reaches D1 through the real Queue and ingest).
 */

export const ORIGIN = "https://console.example.com";

/** Who calls: no token, the two roles of the test Worker's ROLES, and a verified email with no role. */
export const USERS = { viewer: "viewer@example.com", operator: "operator@example.com", norole: "mallory@elsewhere.org" } as const;
export type Who = "anonymous" | keyof typeof USERS;

const worker = (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default;

const tokens = new Map<string, Promise<string>>();
/** One Access token per email and file (valid for an hour). */
export function accessToken(email: string): Promise<string> {
  let t = tokens.get(email);
  if (!t) tokens.set(email, (t = envToken(email)));
  return t;
}

export type CallOptions = { as?: Who; method?: string; headers?: Record<string, string>; body?: BodyInit; redirect?: "follow" | "manual" };

/**
 * Calls the Worker at `path` as `as` (default anonymous). Every response is checked to be below 500:
 * whatever a test sends, the console must never answer with a server error.
 */
export async function call(path: string, opts: CallOptions = {}): Promise<Response> {
  const method = opts.method ?? "GET";
  const headers = new Headers(opts.headers);
  const who = opts.as ?? "anonymous";
  if (who !== "anonymous") headers.set("Cf-Access-Jwt-Assertion", await accessToken(USERS[who]));
  const res = await worker.fetch(new Request(`${ORIGIN}${path}`, { method, headers, body: opts.body, ...(opts.redirect ? { redirect: opts.redirect } : {}) }));
  expect(res.status, `${method} ${path} as ${who} answered ${res.status}`).toBeLessThan(500);
  return res;
}

/** GET as `who`, returning status, content type and the body text. */
export async function getText(path: string, who: Who, headers: Record<string, string> = {}) {
  const res = await call(path, { as: who, headers });
  return { status: res.status, type: res.headers.get("content-type") ?? "", text: await res.text() };
}

/**
 * The overview as a browser shows it once its lazy fragment loaded: `/`, with each `data-lazy` element's placeholder
 * replaced by what its hx-get answers, as htmx does on "load" (the page itself reads only its first screen).
 */
export async function getOverview(who: Who, headers: Record<string, string> = {}) {
  const page = await getText("/", who, headers);
  let text = page.text;
  for (const m of page.text.matchAll(/<div[^>]*\sdata-lazy[^>]*>/g)) {
    const url = unescapeAttr(/hx-get="([^"]+)"/.exec(m[0])![1]!);
    const part = await getText(url, who, headers);
    expect(part.status, `${url} answered ${part.status}`).toBe(200);
    const at = text.indexOf(m[0]) + m[0].length;
    const placeholder = /^\s*<p class="muted" data-testid="lazy-placeholder">[\s\S]*?<\/p>/.exec(text.slice(at));
    expect(placeholder, `${url}: its placeholder follows the lazy element`).not.toBeNull();
    text = text.slice(0, at) + part.text + text.slice(at + placeholder![0].length);
  }
  return { ...page, text };
}

/** Decodes the entities hono/html uses in attribute values. */
export const unescapeAttr = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The CSRF token a page hands to htmx: the `hx-headers` attribute of its <body>. */
export function csrfFromPage(html: string): string {
  const m = /<body[^>]*\shx-headers="([^"]*)"/.exec(html);
  expect(m, "the page has <body hx-headers=…>").not.toBeNull();
  const token = (JSON.parse(unescapeAttr(m![1]!)) as Record<string, string>)["X-CSRF-Token"];
  expect(token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{43}$/);
  return token!;
}

/** Gets `who`'s CSRF token the way the console does: from the overview page's <body hx-headers>. */
export async function csrfFor(who: "viewer" | "operator"): Promise<string> {
  const page = await getText("/", who);
  expect(page.status).toBe(200);
  return csrfFromPage(page.text);
}

/** POSTs an urlencoded form as `who`, from this origin unless `origin` says otherwise, with `csrf` in X-CSRF-Token when given. */
export function postForm(
  path: string,
  who: Who,
  form: Record<string, string>,
  opts: { csrf?: string; origin?: string | null; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded", ...opts.headers };
  if (opts.origin !== null) headers.Origin = opts.origin ?? ORIGIN;
  if (opts.csrf) headers["X-CSRF-Token"] = opts.csrf;
  return call(path, { as: who, method: "POST", headers, body: new URLSearchParams(form).toString() });
}

/** What hono/jsx makes of a text value: the five HTML-significant characters escaped. */
export const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

export const uid = () => crypto.randomUUID().slice(0, 8);

// ----- seeding through real agents -----

/** A FaultySessionAgent whose first turn streams, then stalls: a running session with one live run and its fiber in D1. */
export async function stalledSession(prefix = "route") {
  const name = `${prefix}-${uid()}`;
  const s = await getAgentByName(env.FaultySessionAgent, name);
  await s.setScript({ chunks: ["Working on the migration"], stall: true });
  expect(await s.sendMessage("migrate the tenant")).toMatchObject({ ok: true });
  const runs = await s.runRows();
  expect(runs).toHaveLength(1);
  const runId = runs[0]!.id;
  await pollRows("SELECT 1 FROM agents WHERE agent_class = 'FaultySessionAgent' AND agent_name = ?", [name], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM sessions WHERE session_name = ? AND status = 'running'", [name], (r) => r.length === 1);
  await pollRows("SELECT 1 FROM runs WHERE fiber_id = ? AND snapshot_preview IS NOT NULL", [runId], (r) => r.length === 1);
  return { agentClass: "FaultySessionAgent" as const, name, stub: s, runId };
}
export type StalledSession = Awaited<ReturnType<typeof stalledSession>>;

/** Asserts the session is still mid-turn: running, with exactly the same live run row. */
export async function expectStillRunning(s: StalledSession) {
  expect(await s.stub.status()).toBe("running");
  expect((await s.stub.runRows()).map((r) => r.id)).toEqual([s.runId]);
}

/** Audit rows about one agent, oldest first. */
export async function auditOf(agentName: string) {
  return (
    await env.DB.prepare("SELECT actor, role, action, reason, result, error FROM audit_log WHERE target_name = ? ORDER BY time, rowid").bind(agentName).all<{
      actor: string;
      role: string;
      action: string;
      reason: string;
      result: string;
      error: string | null;
    }>()
  ).results;
}

/** A chat-recovery incident exhausted on a ProbeAgent, emitted through the agent's own observability emitter. */
export async function exhaustedChatIncident(agentName = `probe-${uid()}`, extra: Record<string, unknown> = {}) {
  const stub = await getAgentByName(env.ProbeAgent, agentName);
  const incidentId = `req-${uid()}:msg-1`;
  await stub.emitSdkEvent("chat:recovery:exhausted", {
    incidentId,
    requestId: incidentId.split(":")[0],
    attempt: 3,
    maxAttempts: 3,
    recoveryKind: "retry",
    reason: "max_attempts_exceeded",
    partialText: "half an answer",
    terminalMessage: "Sorry, I could not finish.",
    ...extra,
  });
  await pollRows("SELECT 1 FROM incidents WHERE incident_id = ? AND status = 'exhausted'", [incidentId], (r) => r.length === 1);
  return { agentName, stub, incidentId };
}

/** Makes an agent known to the console the way any agent becomes known: an event of its own through the Queue. */
export async function registerAgent(agentClass: string, agentName: string) {
  const t = new Telemetry({ source: { agentClass, agentName }, queue: env.TELEMETRY_QUEUE });
  t.record("sdk.event", { sdkType: "test:hello", data: { preview: "{}", bytes: 2, truncated: false } });
  await t.settle();
  await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, agentName], (r) => r.length === 1);
}

/**
 * A bulk trigger-alarm batch started by the operator through POST /bulk, on one ProbeAgent with an exhausted
 * incident of a reason of its own (so it selects that agent alone). Returns the batch id and the agent.
 */
export async function bulkBatch(prefix = "bulk") {
  const reason = `${prefix}_${uid()}`;
  const { agentName } = await exhaustedChatIncident(`probe-${prefix}-${uid()}`, { reason });
  const res = await postForm(
    "/bulk",
    "operator",
    { incidentReason: reason, action: "trigger_alarm", reason: `${prefix}: nudge recovery` },
    { csrf: await csrfFor("operator"), headers: { Accept: "application/json" } },
  );
  expect(res.status).toBe(202);
  const { value } = (await res.json()) as { value: { batchId: string } };
  return { batchId: value.batchId, agentName, reason };
}

/** Calls through a stub that may be mid-eviction: a planned eviction's error is expected, anything else is thrown. */
async function tolerateEviction<T>(p: PromiseLike<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (!/planned (eviction|fault)|test eviction|reset|broken|Network connection lost/i.test(String(e))) throw e;
    return undefined;
  }
}

/**
 * A FaultySessionAgent whose paid, non-idempotent charge was cut by an eviction between op.started and its
 * completion: its ledger marks the op ambiguous on recovery, and the console has the open op in op_ambiguities.
 */
export async function ambiguousCharge(prefix = "charge") {
  const name = `${prefix}-${uid()}`;
  const s = await getAgentByName(env.FaultySessionAgent, name);
  await s.setScript({ chunks: ["Charging your card. "], tool: { name: "charge_card", args: { amountCents: 1299 } }, final: ["Done."] } as never);
  await s.setFault({ point: "after_op_started", kind: "tool.charge_card", times: 1 } as never);
  await tolerateEviction(s.sendMessage("please charge me") as PromiseLike<unknown>);
  // Waking the agent recovers the turn, which finds the charge started and never completed.
  let opId: string | undefined;
  const deadline = Date.now() + patient(15_000);
  while (!opId) {
    const ops = await tolerateEviction((async () => (await getAgentByName(env.FaultySessionAgent, name)).ops())());
    opId = ops?.find((o) => o.kind === "tool.charge_card" && o.status === "ambiguous")?.op_id;
    if (!opId) {
      if (Date.now() > deadline) expect.fail(`session ${name} never reported its charge ambiguous`);
      await tolerateEviction((async () => runDurableObjectAlarm(await getAgentByName(env.FaultySessionAgent, name)))());
      await scheduler.wait(50);
    }
  }
  await pollRows("SELECT 1 FROM op_ambiguities WHERE op_id = ? AND agent_name = ? AND resolution_at IS NULL", [opId, name], (r) => r.length === 1);
  return { agentClass: "FaultySessionAgent" as const, name, opId, stub: await getAgentByName(env.FaultySessionAgent, name) };
}
