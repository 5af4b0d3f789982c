import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { type AuthBindings, type AuthEnv, auth, createJwksCache, csrf, csrfToken, requireRole, verifyAccessJwt } from "../../../worker/auth";
import type { RefusalBody } from "../../../worker/http/refusal";
import { b64urlJson, fetchCount, jwksUrl, makeKey, nowSec, publish, publishEnvTeamKeys, sign, type TestKey } from "../access-tokens";
import { hrefs, mustTestId } from "../html";

/** An auth refusal page as data: its code (the JSON body's) and its sentence, which must say something. */
async function refusalOf(res: Response) {
  const html = await res.text();
  const page = mustTestId(html, "auth-problem");
  const message = mustTestId(html, "auth-problem-message").text;
  expect(message, "the refusal has a sentence").not.toBe("");
  return { code: page.attrs["data-code"], status: page.attrs["data-status"], message, hrefs: hrefs(html) };
}

// Real keys, real signatures: RSA pairs are generated here, the public halves are served by the real Node
// test server (test/otlp-receiver.ts) as a team's /cdn-cgi/access/certs, and tokens are signed here
// (helpers in test/worker/access-tokens.ts).

const TEAM_DOMAIN = "https://unit-team.cloudflareaccess.com";
const AUD = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2";
const ORIGIN = "https://console.example.com";

const claimsFor = (email: string, extra: Record<string, unknown> = {}) => ({
  iss: TEAM_DOMAIN,
  aud: [AUD],
  email,
  sub: crypto.randomUUID(),
  type: "app",
  iat: nowSec(),
  nbf: nowSec(),
  exp: nowSec() + 600,
  identity_nonce: "n",
  country: "NL",
  ...extra,
});

const ROLES = { operator: ["alice@example.com", "*@sre.example.com"], viewer: ["*@example.com", "*@x.com", "group:oncall-readers"] };

let key: TestKey;
let otherKey: TestKey;
const team = `access-${crypto.randomUUID().slice(0, 8)}`;
const bindings = (): AuthBindings => ({
  ACCESS_TEAM_DOMAIN: TEAM_DOMAIN,
  ACCESS_AUD: AUD,
  ACCESS_JWKS_URL: jwksUrl(team),
  ROLES: JSON.stringify(ROLES),
  CSRF_SECRET: "access-test-csrf-secret-0123456789abcdef",
});
const verifyOpts = () => ({ teamDomain: TEAM_DOMAIN, audience: AUD, jwksUrl: jwksUrl(team), jwks: createJwksCache({ minRefetchIntervalMs: 0 }) });

function consoleApp(b: AuthBindings = bindings()) {
  const app = new Hono<AuthEnv>();
  app.use(auth({ bindings: b, jwks: createJwksCache({ minRefetchIntervalMs: 0 }) }));
  app.use(csrf());
  app.get("/health", (c) => c.json({ ok: true }));
  app.get("/", (c) => c.json({ user: c.var.user, devAuth: c.var.devAuth, csrf: csrfToken(c) }));
  app.get("/ops", requireRole("operator"), (c) => c.text("operator page"));
  app.post("/actions/force-idle", requireRole("operator"), (c) => c.text(`forced idle by ${c.var.user.email}`));
  return app;
}
const get = (app: Hono<AuthEnv>, path: string, headers: Record<string, string> = {}) => app.request(`${ORIGIN}${path}`, { headers });
const withToken = (token: string, more: Record<string, string> = {}) => ({ "Cf-Access-Jwt-Assertion": token, ...more });

beforeAll(async () => {
  [key, otherKey] = await Promise.all([makeKey(), makeKey()]);
  await publish(team, [key]);
});

describe("verifyAccessJwt with real RS256 keys", () => {
  it("accepts a valid token and returns its claims", async () => {
    const result = await verifyAccessJwt(await sign(key, claimsFor("alice@example.com")), verifyOpts());
    expect(result.ok).toBe(true);
    expect(result.ok && result.claims.email).toBe("alice@example.com");
  });

  it("accepts aud as a plain string, and a token just past exp within the clock skew", async () => {
    const token = await sign(key, claimsFor("alice@example.com", { aud: AUD, exp: nowSec() - 10 }));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: true });
  });

  it("refuses an expired token", async () => {
    const token = await sign(key, claimsFor("alice@example.com", { exp: nowSec() - 120 }));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: false, reason: "expired" });
  });

  it("refuses a token that is not valid yet (nbf beyond the skew)", async () => {
    const token = await sign(key, claimsFor("alice@example.com", { nbf: nowSec() + 300 }));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: false, reason: "not_yet_valid" });
  });

  it("refuses a token for another application (wrong audience)", async () => {
    const token = await sign(key, claimsFor("alice@example.com", { aud: ["some-other-app-aud"] }));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: false, reason: "wrong_audience" });
  });

  it("refuses a token from another Access team (wrong issuer)", async () => {
    const token = await sign(key, claimsFor("alice@example.com", { iss: "https://evil-team.cloudflareaccess.com" }));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: false, reason: "wrong_issuer" });
  });

  it("refuses a token signed by another key under the published kid (bad signature)", async () => {
    const forger = { ...otherKey, kid: key.kid };
    const token = await sign(forger, claimsFor("alice@example.com"));
    expect(await verifyAccessJwt(token, verifyOpts())).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("refuses a validly signed token whose payload was altered afterwards", async () => {
    const [h, , s] = (await sign(key, claimsFor("bob@example.com"))).split(".");
    const tampered = `${h}.${b64urlJson(claimsFor("alice@example.com"))}.${s}`;
    expect(await verifyAccessJwt(tampered, verifyOpts())).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("refuses alg none / HS256 and garbage", async () => {
    const none = `${b64urlJson({ alg: "none", kid: key.kid })}.${b64urlJson(claimsFor("alice@example.com"))}.`;
    expect(await verifyAccessJwt(none, verifyOpts())).toMatchObject({ ok: false, reason: "unsupported_algorithm" });
    const hs = await sign(key, claimsFor("alice@example.com"), { alg: "HS256" });
    expect(await verifyAccessJwt(hs, verifyOpts())).toMatchObject({ ok: false, reason: "unsupported_algorithm" });
    expect(await verifyAccessJwt("not-a-jwt", verifyOpts())).toMatchObject({ ok: false, reason: "malformed" });
    expect(await verifyAccessJwt("a.b.c", verifyOpts())).toMatchObject({ ok: false, reason: "malformed" });
  });
});

describe("JWKS cache", () => {
  it("caches keys, and refetches when a token names an unknown kid", async () => {
    const t = `rotate-${crypto.randomUUID().slice(0, 8)}`;
    const [a, b] = await Promise.all([makeKey(), makeKey()]);
    await publish(t, [a]);
    const opts = { teamDomain: TEAM_DOMAIN, audience: AUD, jwksUrl: jwksUrl(t), jwks: createJwksCache({ minRefetchIntervalMs: 0 }) };

    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    expect(await fetchCount(t)).toBe(1);

    await publish(t, [a, b]); // Access rotated its keys
    expect(await verifyAccessJwt(await sign(b, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    expect(await fetchCount(t)).toBe(2);

    const stranger = await makeKey();
    expect(await verifyAccessJwt(await sign(stranger, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(t)).toBe(3);
  });

  it("limits refetches caused by unknown kids", async () => {
    const t = `limit-${crypto.randomUUID().slice(0, 8)}`;
    const [a, b] = await Promise.all([makeKey(), makeKey()]);
    await publish(t, [a]);
    const opts = { teamDomain: TEAM_DOMAIN, audience: AUD, jwksUrl: jwksUrl(t), jwks: createJwksCache({ minRefetchIntervalMs: 60_000 }) };
    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    await publish(t, [a, b]);
    for (let i = 0; i < 3; i++)
      expect(await verifyAccessJwt(await sign(b, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: false, reason: "unknown_key" });
    expect(await fetchCount(t)).toBe(1);
  });

  it("keeps using cached keys while the endpoint is down, and reports keys_unavailable without any", async () => {
    const t = `down-${crypto.randomUUID().slice(0, 8)}`;
    const a = await makeKey();
    await publish(t, [a]);
    const opts = { teamDomain: TEAM_DOMAIN, audience: AUD, jwksUrl: jwksUrl(t), jwks: createJwksCache({ ttlMs: 0, minRefetchIntervalMs: 0 }) };
    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    await publish(t, [a], 503);
    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), opts)).toMatchObject({ ok: true });
    expect(await fetchCount(t)).toBe(2);

    const cold = { ...opts, jwks: createJwksCache() };
    expect(await verifyAccessJwt(await sign(a, claimsFor("alice@example.com")), cold)).toMatchObject({ ok: false, reason: "keys_unavailable" });
  });
});

describe("auth() in access mode", () => {
  it("sets c.var.user from a valid token (header), with the role from ROLES", async () => {
    const res = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("Alice@Example.com"))));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { user: unknown; devAuth: boolean; csrf: string };
    expect(body.user).toEqual({ email: "alice@example.com", role: "operator", via: "access" });
    expect(body.devAuth).toBe(false);
    expect(body.csrf).toMatch(/\./);
  });

  it("falls back to the CF_Authorization cookie", async () => {
    const token = await sign(key, claimsFor("bob@example.com"));
    const res = await get(consoleApp(), "/", { Cookie: `other=1; CF_Authorization=${token}` });
    expect(((await res.json()) as { user: unknown }).user).toEqual({ email: "bob@example.com", role: "viewer", via: "access" });
  });

  it("maps *@domain and Access groups to roles", async () => {
    const sre = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("dana@sre.example.com"))));
    expect(((await sre.json()) as { user: { role: string } }).user.role).toBe("operator");
    // *@sre.example.com and *@example.com match exactly that domain, not its subdomains.
    const sub = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("eve@eu.sre.example.com"))));
    expect(sub.status).toBe(403);
    const grouped = await get(
      consoleApp(),
      "/",
      withToken(await sign(key, claimsFor("carol@partner.org", { groups: [{ id: "g1", name: "oncall-readers" }] }))),
    );
    expect(((await grouped.json()) as { user: { role: string } }).user.role).toBe("viewer");
  });

  it("refuses a verified email that is not one plain address: two @, or a character imitating ASCII (403, in words)", async () => {
    const twoAts = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("mallory@evil.com@example.com"))));
    expect(twoAts.status).toBe(403);
    const page = await refusalOf(twoAts);
    expect(page.code).toBe("bad_email");
    expect(page.hrefs).toContain("/cdn-cgi/access/logout");
    const kelvin = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("\u212Aim@example.com")), { Accept: "application/json" }));
    expect(kelvin.status).toBe(403);
    const body = (await kelvin.json()) as RefusalBody;
    expect(body).toMatchObject({ ok: false, error: { code: "bad_email" } });
    // The sentence names the imitating character, so the person can see what is wrong with their address.
    expect(body.error.message).toContain("U+212A");
  });

  it("answers 401 with a page saying the token is missing", async () => {
    const res = await get(consoleApp(), "/");
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const text = await res.clone().text();
    expect(text.startsWith("<!doctype html>")).toBe(true);
    expect(await refusalOf(res)).toMatchObject({ code: "missing", status: "401" });
  });

  it("says why an invalid token was refused: expired, wrong audience, bad signature", async () => {
    const app = consoleApp();
    const expired = await get(app, "/", withToken(await sign(key, claimsFor("alice@example.com", { exp: nowSec() - 3600 }))));
    expect(expired.status).toBe(401);
    expect((await refusalOf(expired)).code).toBe("expired");
    const aud = await get(app, "/", withToken(await sign(key, claimsFor("alice@example.com", { aud: ["other-app"] }))));
    expect((await refusalOf(aud)).code).toBe("wrong_audience");
    const forged = await get(app, "/", withToken(await sign({ ...otherKey, kid: key.kid }, claimsFor("alice@example.com"))));
    expect(forged.status).toBe(401);
    expect((await refusalOf(forged)).code).toBe("bad_signature");
    const iss = await get(app, "/", withToken(await sign(key, claimsFor("alice@example.com", { iss: "https://evil.cloudflareaccess.com" }))));
    expect((await refusalOf(iss)).code).toBe("wrong_issuer");
  });

  it("answers htmx with one line of text and API clients with JSON", async () => {
    const app = consoleApp();
    const token = await sign(key, claimsFor("alice@example.com", { exp: nowSec() - 3600 }));
    const hx = await get(app, "/", withToken(token, { "HX-Request": "true" }));
    expect(hx.status).toBe(401);
    expect(hx.headers.get("content-type")).toMatch(/text\/plain/);
    const line = await hx.text();
    const json = await get(app, "/", withToken(token, { Accept: "application/json" }));
    expect(json.status).toBe(401);
    const body = (await json.json()) as RefusalBody;
    expect(body).toMatchObject({ ok: false, error: { code: "expired" } });
    // The same sentence in both forms: htmx's line is the JSON body's message.
    expect(line).toBe(body.error.message);
    expect(line).not.toContain("<");
  });

  it("lets an operator reach operator routes and answers a viewer 403", async () => {
    const app = consoleApp();
    const op = await get(app, "/ops", withToken(await sign(key, claimsFor("alice@example.com"))));
    expect(op.status).toBe(200);
    expect(await op.text()).toBe("operator page");

    const viewer = await get(app, "/ops", withToken(await sign(key, claimsFor("bob@example.com"))));
    expect(viewer.status).toBe(403);
    const page = await refusalOf(viewer);
    expect(page.code).toBe("insufficient_role");
    expect(page.message).toContain("bob@example.com");
    expect(page.hrefs).toContain("/cdn-cgi/access/logout");
  });

  it("answers 403 to a verified user with no role", async () => {
    const res = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("mallory@elsewhere.org"))));
    expect(res.status).toBe(403);
    const page = await refusalOf(res);
    expect(page.code).toBe("no_role");
    expect(page.message).toContain("mallory@elsewhere.org");
    const json = await get(consoleApp(), "/", withToken(await sign(key, claimsFor("mallory@elsewhere.org")), { Accept: "application/json" }));
    expect(((await json.json()) as RefusalBody).error.code).toBe("no_role");
  });

  it("renders an XSS-ish email escaped in the 403 pages", async () => {
    const email = "<script>alert(1)</script>@x.com";
    for (const [path, claims] of [
      ["/ops", claimsFor(email)],
      ["/", claimsFor(email.replace("x.com", "nowhere.org"))],
    ] as const) {
      const res = await get(consoleApp(), path, withToken(await sign(key, claims)));
      expect(res.status).toBe(403);
      const page = await res.text();
      expect(page).not.toContain("<script>");
      expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;@");
    }
  });

  it("exempts /health only", async () => {
    const app = consoleApp();
    expect((await get(app, "/health")).status).toBe(200);
    expect((await get(app, "/health/")).status).toBe(401);
    expect((await get(app, "/healthz")).status).toBe(401);
  });

  it("answers 503 in words when the signing keys cannot be fetched", async () => {
    const res = await get(
      consoleApp({ ...bindings(), ACCESS_JWKS_URL: jwksUrl(`nobody-${crypto.randomUUID()}`) }),
      "/",
      withToken(await sign(key, claimsFor("alice@example.com"))),
    );
    expect(res.status).toBe(503);
    expect((await refusalOf(res)).code).toBe("keys_unavailable");
  });

  it("lets an operator change state with a CSRF token, and refuses a viewer", async () => {
    const app = consoleApp();
    const token = await sign(key, claimsFor("alice@example.com"));
    const { csrf: csrfValue } = (await (await get(app, "/", withToken(token))).json()) as { csrf: string };
    const ok = await app.request(`${ORIGIN}/actions/force-idle`, { method: "POST", headers: withToken(token, { Origin: ORIGIN, "X-CSRF-Token": csrfValue }) });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("forced idle by alice@example.com");

    const viewerToken = await sign(key, claimsFor("bob@example.com"));
    const { csrf: viewerCsrf } = (await (await get(app, "/", withToken(viewerToken))).json()) as { csrf: string };
    const refused = await app.request(`${ORIGIN}/actions/force-idle`, {
      method: "POST",
      headers: withToken(viewerToken, { Origin: ORIGIN, "X-CSRF-Token": viewerCsrf }),
    });
    expect(refused.status).toBe(403);
  });

  it("reads its settings from the Worker env by default", async () => {
    // The env team's key is shared by every test file (see access-tokens.ts); publishing it again is idempotent.
    const envKey = await publishEnvTeamKeys();
    const app = new Hono<AuthEnv>();
    app.use(auth());
    app.get("/", (c) => c.json(c.var.user));
    const token = await sign(envKey, { ...claimsFor("operator@example.com"), iss: env.ACCESS_TEAM_DOMAIN, aud: [env.ACCESS_AUD] });
    const res = await app.request(`${ORIGIN}/`, { headers: withToken(token) }, env);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ email: "operator@example.com", role: "operator", via: "access" });
  });
});
