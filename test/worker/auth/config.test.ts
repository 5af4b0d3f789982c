import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app as consoleWorkerApp } from "../../../worker/app";
import { type AuthBindings, type AuthEnv, auth, CONFIG_ERROR_MESSAGE, readAuthConfig } from "../../../worker/auth";

const ORIGIN = "https://console.example.com";
const good = { ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com", ACCESS_AUD: "aud", ROLES: '{"viewer":["*@example.com"]}', CSRF_SECRET: "s".repeat(32) };

function appWith(bindings: AuthBindings) {
  const app = new Hono<AuthEnv>();
  app.use(auth({ bindings }));
  app.get("/health", (c) => c.text("ok"));
  app.get("/", (c) => c.text(`hello ${c.var.user.email}`));
  return app;
}

/** The problems readAuthConfig reports, as "SETTING problem" lines. */
const problems = (bindings: AuthBindings) => {
  const r = readAuthConfig(bindings);
  return r.ok ? [] : r.problems.map((p) => `${p.setting} ${p.problem}`);
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe("https only for the team domain and the JWKS URL", () => {
  it("refuses an http:// team domain with a clear problem, and upgrades a bare host to https", () => {
    expect(problems({ ...good, ACCESS_TEAM_DOMAIN: "http://t.cloudflareaccess.com" })).toEqual([
      'ACCESS_TEAM_DOMAIN must use https:// (got "http://t.cloudflareaccess.com"): tokens and signing keys are only trusted over TLS',
    ]);
    expect(problems({ ...good, ACCESS_TEAM_DOMAIN: "ftp://t.cloudflareaccess.com" })[0]).toMatch(/^ACCESS_TEAM_DOMAIN must use https:\/\//);
    // No loopback exception for the issuer: only the key URL override has one.
    expect(problems({ ...good, ACCESS_TEAM_DOMAIN: "http://127.0.0.1:9999" })[0]).toMatch(/^ACCESS_TEAM_DOMAIN must use https:\/\//);
    expect(readAuthConfig({ ...good, ACCESS_TEAM_DOMAIN: "t.cloudflareaccess.com" })).toMatchObject({
      ok: true,
      config: { teamDomain: "https://t.cloudflareaccess.com", jwksUrl: "https://t.cloudflareaccess.com/cdn-cgi/access/certs" },
    });
    expect(problems({ ...good, ACCESS_TEAM_DOMAIN: "https://user:pw@t.cloudflareaccess.com" })[0]).toMatch(/is not a team domain like/);
  });

  it("allows http:// for ACCESS_JWKS_URL only on a loopback host (the test setup's key server)", () => {
    for (const url of ["http://127.0.0.1:8788/cdn-cgi/access/certs?team=x", "http://localhost:8788/certs", "http://[::1]:8788/certs"]) {
      expect(readAuthConfig({ ...good, ACCESS_JWKS_URL: url }), url).toMatchObject({ ok: true, config: { jwksUrl: url } });
    }
    expect(readAuthConfig({ ...good, ACCESS_JWKS_URL: "https://keys.example.com/certs" })).toMatchObject({
      ok: true,
      config: { jwksUrl: "https://keys.example.com/certs" },
    });
    for (const url of [
      "http://keys.example.com/certs",
      "http://127.0.0.1.evil.example/certs",
      "http://10.0.0.1/certs",
      "file:///etc/keys",
      "javascript:alert(1)",
    ]) {
      expect(problems({ ...good, ACCESS_JWKS_URL: url }), url).toEqual([
        `ACCESS_JWKS_URL must be an https:// URL (got ${JSON.stringify(url)}; http:// is accepted only for a loopback host such as 127.0.0.1)`,
      ]);
    }
    expect(problems({ ...good, ACCESS_JWKS_URL: "https://u:p@keys.example.com/" })).toEqual(["ACCESS_JWKS_URL must not carry a user name or password"]);
    expect(problems({ ...good, ACCESS_JWKS_URL: "not a url" })[0]).toMatch(/^ACCESS_JWKS_URL is not a URL/);
  });

  it("the test Worker's own settings pass: https team domain, loopback http key URL", () => {
    expect(readAuthConfig(env)).toMatchObject({ ok: true, config: { mode: "access", teamDomain: env.ACCESS_TEAM_DOMAIN, jwksUrl: env.ACCESS_JWKS_URL } });
  });
});

describe("a misconfigured console tells visitors nothing about its settings", () => {
  it("answers every request 503 with a generic sentence, and logs the details once", async () => {
    const error = vi.spyOn(console, "error");
    const secretDomain = `secret-${crypto.randomUUID().slice(0, 8)}.example`;
    const bindings = {
      ACCESS_TEAM_DOMAIN: `http://${secretDomain}`,
      ACCESS_AUD: "aud",
      ROLES: JSON.stringify({ operator: [`ceo@${secretDomain}`, `*oncall.${secretDomain}`], viewer: ["group:board-of-directors"] }),
      CSRF_SECRET: "short",
    };
    const app = appWith(bindings);
    for (const headers of [{}, { "HX-Request": "true" }, { Accept: "application/json" }] as Record<string, string>[]) {
      const res = await app.request(`${ORIGIN}/`, { headers });
      expect(res.status).toBe(503);
      const body = (await res.text()).replace(/&#39;/g, "'"); // the HTML page escapes the apostrophe
      expect(body).toContain(CONFIG_ERROR_MESSAGE);
      expect(body).toContain("The operator's log has the details.");
      for (const leak of [secretDomain, "ceo@", "oncall", "board-of-directors", "ROLES", "ACCESS_TEAM_DOMAIN", "CSRF_SECRET", "http://"])
        expect(body).not.toContain(leak);
      expect(body).not.toMatch(/\bat \S+ \(|Error:|ZodError/);
    }
    expect((await app.request(`${ORIGIN}/health`)).status).toBe(200);

    const logged = error.mock.calls.map((args) => args.join(" ")).filter((line) => line.includes(secretDomain));
    expect(logged).toHaveLength(1); // once per isolate, not once per request
    expect(logged[0]).toContain("ACCESS_TEAM_DOMAIN must use https://");
    expect(logged[0]).toContain(`ROLES "*oncall.${secretDomain}" is not an email`);
    expect(logged[0]).toContain("CSRF_SECRET must be at least 32 characters");
  });

  it("the real console Worker shows an anonymous visitor no role entries", async () => {
    const roles = JSON.stringify({ operator: ["alice@hidden-corp.example", "*@sre.hidden-corp.example"], viewer: ["not-an-entry"] });
    const res = await consoleWorkerApp.request(`${ORIGIN}/incidents`, {}, { ...env, ROLES: roles });
    expect(res.status).toBe(503);
    const page = await res.text();
    expect(page).toContain("configuration refuses ROLES");
    expect(page).not.toContain("hidden-corp");
    expect(page).not.toContain("not-an-entry");
    expect(page).not.toContain("alice");
  });

  it("still names every problem for the operator's log", () => {
    expect(problems({})).toEqual(["ACCESS_TEAM_DOMAIN is missing", "ACCESS_AUD is missing", "ROLES is missing", "CSRF_SECRET is missing"]);
    expect(problems({ ...good, ACCESS_AUD: "  " })).toEqual(["ACCESS_AUD is missing"]);
    expect(problems({ ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com/some/path", ACCESS_AUD: "a", ROLES: "{operator:", CSRF_SECRET: "short" })).toEqual([
      expect.stringContaining("ACCESS_TEAM_DOMAIN is not a team domain like https://<team>.cloudflareaccess.com"),
      expect.stringContaining("ROLES is not valid JSON"),
      "CSRF_SECRET must be at least 32 characters",
    ]);
  });
});
