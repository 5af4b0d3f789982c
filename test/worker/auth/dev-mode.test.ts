import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  type AuthBindings,
  type AuthEnv,
  auth,
  CONFIG_ERROR_MESSAGE,
  DEV_AUTH_BANNER,
  DEV_MODE_LOCAL_ONLY_MESSAGE,
  readAuthConfig,
  requireRole,
} from "../../../worker/auth";
import { mustTestId } from "../html";

/** An auth refusal page's code (its JSON body's error.code). */
const codeOf = async (res: Response) => mustTestId(await res.text(), "auth-problem").attrs["data-code"];

const ORIGIN = "http://127.0.0.1:8787";

/** A tiny layout that does what the console layout must do with the flag. */
function appWith(bindings: AuthBindings) {
  const app = new Hono<AuthEnv>();
  app.use(auth({ bindings }));
  app.get("/health", (c) => c.text("ok"));
  app.get("/", (c) => c.html(`${c.var.devAuth ? `<div class="dev-banner">${DEV_AUTH_BANNER}</div>` : ""}<p>${c.var.user.email} (${c.var.user.role})</p>`));
  app.get("/me", (c) => c.json({ user: c.var.user, devAuth: c.var.devAuth }));
  app.get("/ops", requireRole("operator"), (c) => c.text("operator page"));
  return app;
}
const get = (app: Hono<AuthEnv>, path: string, headers: Record<string, string> = {}) => app.request(`${ORIGIN}${path}`, { headers });

describe("local dev mode", () => {
  it("AUTH_MODE=dev gives dev@localhost as operator and sets the banner flag", async () => {
    const app = appWith({ AUTH_MODE: "dev" });
    expect(await (await get(app, "/me")).json()).toEqual({ user: { email: "dev@localhost", role: "operator", via: "dev" }, devAuth: true });
    const page = await (await get(app, "/")).text();
    expect(page).toContain(DEV_AUTH_BANNER);
    expect((await get(app, "/ops")).status).toBe(200);
  });

  it("takes the identity and role from DEV_USER and DEV_ROLE", async () => {
    const app = appWith({ AUTH_MODE: "dev", DEV_USER: "Viewer@Local", DEV_ROLE: "viewer" });
    expect(await (await get(app, "/me")).json()).toEqual({ user: { email: "viewer@local", role: "viewer", via: "dev" }, devAuth: true });
    const ops = await get(app, "/ops");
    expect(ops.status).toBe(403);
    const text = await ops.text();
    expect(mustTestId(text, "auth-problem").attrs["data-code"]).toBe("insufficient_role");
    expect(mustTestId(text, "auth-problem-message").text).toContain("viewer@local");
    expect(text).not.toContain("/cdn-cgi/access/logout"); // no Access session to leave in dev mode
  });

  it("is off unless AUTH_MODE=dev: DEV_USER/DEV_ROLE alone do not switch it on", async () => {
    const app = appWith({
      DEV_USER: "dev@localhost",
      DEV_ROLE: "operator",
      ACCESS_TEAM_DOMAIN: "team.cloudflareaccess.com",
      ACCESS_AUD: "aud",
      ROLES: '{"operator":["dev@localhost"]}',
      CSRF_SECRET: "x".repeat(32),
    });
    const res = await get(app, "/me");
    expect(res.status).toBe(401);
    expect(await codeOf(res)).toBe("missing");
    expect(
      readAuthConfig({
        AUTH_MODE: "access",
        ACCESS_TEAM_DOMAIN: "t.cloudflareaccess.com",
        ACCESS_AUD: "a",
        ROLES: '{"viewer":["*@a.b"]}',
        CSRF_SECRET: "y".repeat(32),
      }),
    ).toMatchObject({
      ok: true,
      config: { mode: "access", teamDomain: "https://t.cloudflareaccess.com", jwksUrl: "https://t.cloudflareaccess.com/cdn-cgi/access/certs" },
    });
  });

  it("refuses an AUTH_MODE it does not know instead of guessing", async () => {
    for (const mode of ["Development", "off", "none"]) {
      const res = await get(appWith({ AUTH_MODE: mode }), "/me");
      expect(res.status).toBe(503);
      expect(await codeOf(res)).toBe("auth_not_configured");
      expect(readAuthConfig({ AUTH_MODE: mode })).toEqual({ ok: false, problems: [{ setting: "AUTH_MODE", problem: 'must be "access" or "dev"' }] });
    }
    const badRole = await get(appWith({ AUTH_MODE: "dev", DEV_ROLE: "admin" }), "/me", { "HX-Request": "true" });
    expect(badRole.status).toBe(503);
    expect(await badRole.text()).toBe(CONFIG_ERROR_MESSAGE);
    expect(readAuthConfig({ AUTH_MODE: "dev", DEV_ROLE: "admin" })).toEqual({
      ok: false,
      problems: [{ setting: "DEV_ROLE", problem: 'must be "viewer" or "operator"' }],
    });
  });
});

describe("dev mode answers only on this machine", () => {
  const dev = () => appWith({ AUTH_MODE: "dev" });
  const at = (url: string, headers: Record<string, string> = {}) => dev().request(url, { headers });

  it("serves loopback addresses: 127.0.0.0/8, ::1, localhost and *.localhost, with or without a port", async () => {
    const local = [
      ["http://127.0.0.1:8787/me", "127.0.0.1:8787"],
      ["http://127.0.0.1/me", "127.0.0.1"],
      ["http://127.9.8.7:1234/me", "127.9.8.7:1234"],
      ["http://[::1]:8787/me", "[::1]:8787"],
      ["http://[::1]/me", "[::1]"],
      ["http://localhost:8787/me", "localhost:8787"],
      ["http://localhost/me", "LOCALHOST"],
      ["http://console.localhost:8787/me", "console.localhost:8787"],
      ["https://a.b.localhost/me", "a.b.localhost"],
    ];
    for (const [url, host] of local) {
      const res = await at(url!, { Host: host! });
      expect(res.status, `${url} with Host ${host}`).toBe(200);
      expect(((await res.json()) as { user: { email: string } }).user.email).toBe("dev@localhost");
    }
    // What wrangler dev adds for a local client.
    expect((await at("http://127.0.0.1:8787/me", { Host: "127.0.0.1:8787", "CF-Connecting-IP": "127.0.0.1" })).status).toBe(200);
    expect((await at("http://localhost:8787/me", { Host: "localhost:8787", "CF-Connecting-IP": "::1" })).status).toBe(200);
  });

  it("refuses a DNS-rebinding request (a loopback URL, but the Host of the attacker's page) with a page saying dev mode is local-only", async () => {
    const res = await at("http://127.0.0.1:8787/ops", { Host: "evil.example" });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const page = await res.text();
    expect(mustTestId(page, "auth-problem").attrs["data-code"]).toBe("dev_mode_local_only");
    expect(mustTestId(page, "auth-problem-message").text).toBe(DEV_MODE_LOCAL_ONLY_MESSAGE);
    expect(page).not.toContain("dev@localhost");
    expect(page).not.toContain("operator page");
  });

  it("checks the Host header and the request URL, each on its own", async () => {
    // The URL names another host, the Host header says loopback: refused.
    expect((await at("http://evil.example/me", { Host: "127.0.0.1:8787" })).status).toBe(403);
    // A deployed Worker is reached under its public name.
    expect((await at("https://console.acme.workers.dev/me")).status).toBe(403);
    expect((await at("https://console.acme.workers.dev/me", { Host: "console.acme.workers.dev" })).status).toBe(403);
    // Loopback URL, Host header not loopback (or not a host at all).
    for (const host of [
      "evil.example",
      "evil.example:8787",
      "127.0.0.1.evil.example",
      "localhost.evil.example",
      "localhost.",
      "evil_localhost",
      "127.0.0.1@evil.example",
      "evil.example#.localhost",
      "[::ffff:127.0.0.1]",
      "0.0.0.0:8787",
      "10.0.0.1",
      "192.168.1.10:8787",
      "",
    ]) {
      expect((await at("http://127.0.0.1:8787/me", { Host: host })).status, `Host ${JSON.stringify(host)}`).toBe(403);
    }
  });

  it("refuses a proxied or tunnelled request: X-Forwarded-Host or a client address that is not loopback", async () => {
    const url = "http://127.0.0.1:8787/me";
    expect((await at(url, { Host: "127.0.0.1:8787", "X-Forwarded-Host": "console.acme.com" })).status).toBe(403);
    expect((await at(url, { Host: "127.0.0.1:8787", "X-Forwarded-Host": "localhost, evil.example" })).status).toBe(403);
    expect((await at(url, { Host: "127.0.0.1:8787", "X-Forwarded-Host": "localhost:8787" })).status).toBe(200);
    expect((await at(url, { Host: "127.0.0.1:8787", "CF-Connecting-IP": "203.0.113.7" })).status).toBe(403);
    expect((await at(url, { Host: "127.0.0.1:8787", "CF-Connecting-IP": "2001:db8::1" })).status).toBe(403);
  });

  it("answers htmx and JSON callers briefly, and keeps /health public", async () => {
    const hx = await at("http://127.0.0.1:8787/me", { Host: "evil.example", "HX-Request": "true" });
    expect(hx.status).toBe(403);
    expect(await hx.text()).toBe(DEV_MODE_LOCAL_ONLY_MESSAGE);
    const json = await at("http://127.0.0.1:8787/me", { Host: "evil.example", Accept: "application/json" });
    expect(await json.json()).toEqual({ ok: false, error: { code: "dev_mode_local_only", message: DEV_MODE_LOCAL_ONLY_MESSAGE } });
    expect((await at("https://console.acme.workers.dev/health")).status).toBe(200);
  });

  it("does not restrict access mode: it is Access that decides there", async () => {
    const app = appWith({ ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com", ACCESS_AUD: "a", ROLES: '{"viewer":["*@a.b"]}', CSRF_SECRET: "y".repeat(32) });
    const res = await app.request("https://console.acme.com/me", { headers: { Host: "console.acme.com" } });
    expect(res.status).toBe(401); // asked to sign in, not told about dev mode
  });
});
