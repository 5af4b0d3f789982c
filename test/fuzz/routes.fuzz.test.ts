import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { app } from "../../worker/app";
import { SeededRandom as Rng } from "../fixtures/seeded-random";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { mustTestId } from "../worker/html";
import { csrfFor, escapeHtml, type Who } from "../worker/routes/harness";
import { drainTraceExports, fuzzSeed, hostileUrlValues, MARKUP, Recorder, registeredRoutes, table, victimEvents, victimOf } from "./corpus";

// Every route the app registers (GET and POST), with hostile path parameters, query strings and form
// bodies, as anonymous, viewer and operator (POSTs with a valid CSRF token, so they reach the handlers).
// No answer may be a 5xx, hostile markup must never come back unescaped in HTML, and every 4xx must say
// what was wrong in words. The values are seeded (FUZZ_SEED replays a run).

const SEED = fuzzSeed();
const NONCE = crypto.randomUUID().replace(/-/g, "").slice(0, 8);
const r = new Rng(SEED);
const enc = encodeURIComponent;

/** A registered agent with a session, a fiber, two incidents, an op and a backup, so routes also reach their "found" paths. */
const seed = victimOf(`r${NONCE}`);

/** Every query key a console route reads, and a few it does not. */
const QUERY_KEYS = [
  "cursor",
  "limit",
  "agentClass",
  "agentName",
  "status",
  "kind",
  "reason",
  "since",
  "until",
  "groupBy",
  "outcome",
  "tenant",
  "environment",
  "sessionName",
  "expired",
  "open",
  "actor",
  "action",
  "targetClass",
  "targetName",
  "result",
  "types",
  "unknownKey",
  "q",
  "rule",
  "incidentReason",
  "openOnly",
  "stuckRule",
  "batchId",
  "gaps",
];

const b64url = (s: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(s)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

/** Query strings that no single value can express: cursors, limits, repeated keys, JSON, prototype names, bad encodings. */
const SPECIAL_QUERIES = [
  `cursor=${"A".repeat(5000)}`,
  `cursor=${b64url(JSON.stringify(["incidents", "x".repeat(1400), 1]))}`,
  `cursor=${b64url(JSON.stringify(["incidents:last_seen", 1e308, "x", "y", "z"]))}`,
  `cursor=${b64url(`${"[".repeat(500)}${"]".repeat(500)}`)}`,
  `cursor=${b64url(MARKUP[0])}`,
  `cursor=${b64url("\u0000\uFFFF")}`,
  `cursor=${enc(MARKUP[1])}`,
  "cursor=%E0%A4%A",
  ...["-1", "NaN", "0", "201", "1.5", "%205", "0x10", "Infinity", "1e2", "99999999999999999999", "", "-0", "%00"].map((l) => `limit=${l}`),
  "status=open&status=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
  "limit=1&limit=-1",
  "cursor=a&cursor=b&cursor=c",
  "agentClass=SessionAgent&agentClass=ProbeAgent&agentName=a&agentName=",
  `agentName=${enc('{"$ne":null}')}`,
  `since=${enc('{"a":1}')}`,
  `types=${enc('["fiber.started"]')}`,
  "agentClass[]=x&agentName[0]=y",
  "__proto__=x",
  "__proto__[polluted]=1",
  "constructor=x&toString=y&hasOwnProperty=z&valueOf=1",
  "since=-1",
  "since=9e15",
  "since=2026-13-45",
  `until=${enc(MARKUP[0])}`,
  "since=1e309",
  "since=2000&until=1000",
  "since=9999999999999999999999",
  `groupBy=${enc(MARKUP[2])}`,
  "groupBy=__proto__",
  "groupBy=toString",
  "agentName=%E0%A4%A",
  "%=1",
  "a%ZZb=1",
  "=",
  "&&&",
  "?",
  "agentName=%C0%AF",
  "agentName=%ED%A0%80",
  `agentClass=${enc(seed.identity.agentClass)}`,
  `agentClass=${enc(seed.identity.agentClass)}&agentName=${enc(MARKUP[0])}`,
  `reason=${"r".repeat(10_000)}`,
];

let csrf: Record<"viewer" | "operator", string>;

beforeAll(async () => {
  await publishEnvTeamKeys();
  const events = victimEvents(seed, Date.now());
  await env.TELEMETRY_QUEUE.send(JSON.stringify(events), { contentType: "text" });
  const deadline = Date.now() + patient(20_000);
  for (;;) {
    const n = await env.DB.prepare("SELECT COUNT(*) AS n FROM events WHERE agent_class = ? AND agent_name = ?")
      .bind(seed.identity.agentClass, seed.identity.agentName)
      .first<{ n: number }>();
    if (n!.n === events.length) break;
    if (Date.now() > deadline) throw new Error(`the seeded agent's events were not stored within ${patient(20_000) / 1000} s`);
    await scheduler.wait(100);
  }
  csrf = { viewer: await csrfFor("viewer"), operator: await csrfFor("operator") };
});

/** What a parameter holds when it is not the one being fuzzed: the seeded agent's real ids. */
const REAL: Record<string, () => string> = {
  incidentId: () => seed.chat,
  fiberId: () => seed.fiberId,
  runId: () => seed.fiberId,
  name: () => seed.session,
  agentClass: () => seed.identity.agentClass,
  agentName: () => seed.identity.agentName,
  // No batch is started here (that would act on agents): its page answers 404 with a sentence.
  batchId: () => `batch-${NONCE}`,
  // A list to download (/export/:list): hostile filters reach its read model as they reach the list's page.
  list: () => "runs",
  // Nobody saved this view: its address and its delete answer 404 with a sentence.
  viewId: () => `view-${NONCE}`,
};

function fill(pattern: string, params: string[], fuzzed: string | null, raw: string): string {
  let path = pattern;
  for (const p of params) {
    const real = REAL[p];
    if (!real) throw new Error(`no value for :${p} in ${pattern}: add it to REAL`);
    path = path.replace(`:${p}`, p === fuzzed ? raw : enc(real()));
  }
  return path;
}

const ROLES = ["anonymous", "viewer", "operator"] as const satisfies readonly Who[];
/** The viewer asks in each of the console's three forms in turn: a page, JSON (the CLI), a fragment (htmx). */
const VARIANTS: Record<string, string>[] = [{}, { Accept: "application/json" }, { "HX-Request": "true" }];

// Let the console's trace exports (of the queue batch and the CSRF requests above: the fuzzed requests export none,
// see corpus.ts) finish before the worker shuts down. The drain gives up after 15 s of its own.
afterAll(() => drainTraceExports(env.OTLP_CONTROL));

// The work is fixed (the seed decides every request: about 10,500 GETs and 7,900 POSTs) and nothing in the tests
// waits on the clock: their timeout is a safety net for a hang, as on a quiet machine times test/patience.ts's allowance.
describe(`every registered route under hostile input (seed ${SEED}, run ${NONCE})`, () => {
  const routes = registeredRoutes(app.routes);
  const values = hostileUrlValues(r);

  it("is found in the app", () => {
    expect(routes.length).toBeGreaterThan(15);
    expect(routes.filter((x) => x.method === "POST").length).toBeGreaterThanOrEqual(2);
    expect(values.length).toBeGreaterThan(40);
  });

  it("answers GETs with hostile path parameters and query strings: no 5xx, no unescaped markup, readable 4xx", { timeout: patient(120_000) }, async () => {
    const t = Date.now();
    const rec = new Recorder();
    const urls: string[] = [];
    for (const { pattern, params } of routes.filter((x) => x.method === "GET")) {
      urls.push(fill(pattern, params, null, ""));
      // Each parameter in turn takes every hostile value, the others keep real ids.
      for (const p of params) for (const v of values) urls.push(fill(pattern, params, p, v.raw));
      // Every hostile value in two query keys picked by the seed, and the special query strings. A route that
      // does not refuse `?limit=-1` reads no paging (the overview, the CSRF token, a status fragment): a sample does.
      const base = fill(pattern, params, null, "");
      const readsQuery = (await rec.call(`${base}?limit=-1`, "viewer")).status === 400;
      const sample = <T>(xs: readonly T[]) => (readsQuery ? [...xs] : r.shuffle(xs).slice(0, 12));
      for (const v of sample(values)) {
        const [k1, k2] = [r.pick(QUERY_KEYS), r.pick(QUERY_KEYS)];
        urls.push(`${base}?${k1}=${v.raw}&${k2}=${v.raw}`);
      }
      // A page of one id reads only its timeline's cursor and limit and the owner; lists read every filter.
      const special = params.length
        ? SPECIAL_QUERIES.filter((x) => /^(cursor|limit|agentClass|agentName|__proto__|constructor|%|a%ZZb|=|&&&|\?)/.test(x))
        : SPECIAL_QUERIES;
      for (const q of sample(special)) urls.push(`${base}?${q}`);
    }
    let i = 0;
    const calls = urls.flatMap((url) => {
      const variant = VARIANTS[i++ % VARIANTS.length]!;
      return [() => rec.call(url, "anonymous"), () => rec.call(url, "viewer", { headers: variant }), () => rec.call(url, "operator")];
    });
    await rec.all(calls);
    console.log(`${rec.summary(`GET routes (${urls.length} URLs × anonymous, viewer, operator)`)}\n  took ${Date.now() - t} ms`);
    expect(rec.tried).toBe(urls.length * 3 + routes.filter((x) => x.method === "GET").length);
    expect(rec.serverErrors, JSON.stringify(rec.serverErrors.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.reflected, JSON.stringify(rec.reflected.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.unreadable, JSON.stringify(rec.unreadable.slice(0, 10), null, 1)).toEqual([]);
  });

  it("answers POSTs with hostile queries, form fields and bodies (with a valid CSRF token): no 5xx, no unescaped markup, readable 4xx", {
    timeout: patient(120_000),
  }, async () => {
    const t = Date.now();
    const rec = new Recorder();
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const post = (path: string, who: Who, body: BodyInit, contentType: string, extra: Record<string, string> = {}) => {
      const headers: Record<string, string> = { Origin: "https://console.example.com", "Content-Type": contentType, ...extra };
      if (who === "viewer" || who === "operator") headers["X-CSRF-Token"] = csrf[who];
      return rec.call(path, who, { method: "POST", headers, body });
    };
    const urlencoded = "application/x-www-form-urlencoded";
    // Aimed at an agent nobody registered, so a hostile value never reaches a real agent by accident.
    const nobody = { agentClass: "SessionAgent", agentName: `fzr-${NONCE}-nobody`, reason: "fuzz" };
    const calls: (() => Promise<unknown>)[] = [];
    for (const { pattern } of routes.filter((x) => x.method === "POST")) {
      for (const who of ROLES) {
        for (const v of values) {
          // Hostile query string.
          calls.push(() => post(`${pattern}?${r.pick(QUERY_KEYS)}=${v.raw}`, who, form(nobody), urlencoded));
          // Each form field hostile in turn (the decoded value, as a browser would send it).
          let decoded: string;
          try {
            decoded = decodeURIComponent(v.raw);
          } catch {
            decoded = v.raw;
          }
          for (const field of ["agentClass", "agentName", "reason"] as const)
            calls.push(() => post(pattern, who, form({ ...nobody, [field]: decoded }), urlencoded, who === "viewer" ? { "HX-Request": "true" } : {}));
          // Raw (possibly invalid) percent-encoding in the body itself.
          calls.push(() =>
            post(
              pattern,
              who,
              `agentClass=SessionAgent&agentName=${v.raw}&reason=${v.raw}`,
              urlencoded,
              who === "viewer" ? { Accept: "application/json" } : {},
            ),
          );
        }
        // Bodies that are not the form the handler expects.
        const bodies: [string, BodyInit, string][] = [
          ["empty", "", urlencoded],
          ["repeated keys", "agentClass=SessionAgent&agentClass=ProbeAgent&agentName=a&agentName=b&reason=x&reason=y", urlencoded],
          ["JSON", `{"agentClass":"SessionAgent","agentName":"${nobody.agentName}","reason":"r","__proto__":{"polluted":1}}`, "application/json"],
          ["JSON markup", JSON.stringify({ agentClass: MARKUP[0], agentName: MARKUP[1], reason: MARKUP[2] }), "application/json"],
          ["not JSON", "{'agentClass':", "application/json"],
          ["multipart without boundary", '--x\r\nContent-Disposition: form-data; name="agentClass"\r\n\r\nSessionAgent\r\n--x--', "multipart/form-data"],
          ["multipart, broken", '--b\r\nContent-Disposition: form-data; name="agentName"\r\n\r\n<script>alert(1)</script>', "multipart/form-data; boundary=b"],
          ["plain text", MARKUP[0], "text/plain"],
          ["binary", new Uint8Array([0, 255, 60, 115, 0, 1]), "application/octet-stream"],
          ["1 MB reason", form({ ...nobody, reason: "r".repeat(1_000_000) }), urlencoded],
          ["10k-deep JSON", `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`, "application/json"],
          ["NUL in fields", form({ agentClass: "Session\u0000Agent", agentName: "\u0000", reason: "\u0000" }), urlencoded],
          ["_csrf and __proto__ fields", "_csrf=forged&__proto__=x&constructor=y&agentClass=SessionAgent&agentName=z&reason=r", urlencoded],
        ];
        for (const [, body, type] of bodies)
          calls.push(
            () => post(pattern, who, body, type),
            () => post(pattern, who, body, type, { Accept: "application/json" }),
          );
        // The token in the `_csrf` field instead of the header: the CSRF check itself must read these bodies.
        if (who !== "anonymous") {
          const token = csrf[who];
          const noHeader = (body: BodyInit, type: string) => () =>
            rec.call(pattern, who, { method: "POST", headers: { Origin: "https://console.example.com", "Content-Type": type }, body });
          calls.push(
            noHeader(form({ ...nobody, _csrf: token }), urlencoded),
            noHeader(`--b\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${token}`, "multipart/form-data; boundary=b"),
            noHeader(`_csrf=${token}&agentName=%E0%A4%A`, "multipart/form-data"),
            noHeader(`_csrf=%E0%A4%A&agentClass=${enc(MARKUP[0])}`, urlencoded),
          );
        }
      }
    }
    await rec.all(calls);

    // A real action on a registered agent, with markup as the operator's reason: done, audited, and shown escaped.
    const reason = `fuzz ${MARKUP[0]} ${MARKUP[1]}`;
    const done = await post(
      "/actions/force-idle",
      "operator",
      form({ agentClass: seed.identity.agentClass, agentName: seed.identity.agentName, reason }),
      urlencoded,
    );
    expect(done.status, done.text.slice(0, 300)).toBe(200);
    // Done (the fuzzed agent may hold no work: a verified no-op is done too), as read back from the agent.
    expect(mustTestId(done.text, "action-result").attrs).toMatchObject({ "data-ok": "true", "data-action": "force_idle" });
    expect(mustTestId(done.text, "after-state").attrs).toMatchObject({ "data-result": expect.stringMatching(/^(ok|noop)$/), "data-verified": "true" });
    const audit = await rec.call(`/audit?targetName=${enc(seed.identity.agentName)}`, "viewer");
    expect(audit.status).toBe(200);
    expect(audit.text).toContain(escapeHtml(reason));

    console.log(`${rec.summary(`POST routes (${calls.length + 1} requests × hostile queries, fields and bodies)`)}\n  took ${Date.now() - t} ms`);
    expect(rec.serverErrors, JSON.stringify(rec.serverErrors.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.reflected, JSON.stringify(rec.reflected.slice(0, 10), null, 1)).toEqual([]);
    expect(rec.unreadable, JSON.stringify(rec.unreadable.slice(0, 10), null, 1)).toEqual([]);
    // No hostile action reached an agent: the only audited action on the seeded agent is the one above.
    const audited = await env.DB.prepare("SELECT action, reason, result FROM audit_log WHERE target_name = ?").bind(seed.identity.agentName).all();
    expect(audited.results).toEqual([{ action: "force_idle", reason, result: expect.stringMatching(/^(ok|noop)$/) }]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    console.log(
      table("request mix", [
        ["hostile URL values", values.length],
        ["special query strings", SPECIAL_QUERIES.length],
      ]),
    );
  });
});
