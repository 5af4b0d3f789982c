import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { type AuthBindings, type AuthEnv, DEV_AUTH_BANNER, auth, readAuthConfig, requireRole } from "../../../worker/auth";

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
    expect(page).toContain("Local dev auth — not for production");
    expect((await get(app, "/ops")).status).toBe(200);
  });

  it("takes the identity and role from DEV_USER and DEV_ROLE", async () => {
    const app = appWith({ AUTH_MODE: "dev", DEV_USER: "Viewer@Local", DEV_ROLE: "viewer" });
    expect(await (await get(app, "/me")).json()).toEqual({ user: { email: "viewer@local", role: "viewer", via: "dev" }, devAuth: true });
    const ops = await get(app, "/ops");
    expect(ops.status).toBe(403);
    const text = await ops.text();
    expect(text).toContain("viewer@local has the viewer role; this needs the operator role");
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
    expect(await res.text()).toContain("You are not signed in");
    expect(readAuthConfig({ AUTH_MODE: "access", ACCESS_TEAM_DOMAIN: "t.cloudflareaccess.com", ACCESS_AUD: "a", ROLES: '{"viewer":["*@a.b"]}', CSRF_SECRET: "y".repeat(32) })).toMatchObject({
      ok: true,
      config: { mode: "access", teamDomain: "https://t.cloudflareaccess.com", jwksUrl: "https://t.cloudflareaccess.com/cdn-cgi/access/certs" },
    });
  });

  it("refuses an AUTH_MODE it does not know instead of guessing", async () => {
    for (const mode of ["Development", "off", "none"]) {
      const res = await get(appWith({ AUTH_MODE: mode }), "/me");
      expect(res.status).toBe(503);
      expect(await res.text()).toContain("AUTH_MODE must be &quot;access&quot; or &quot;dev&quot;");
    }
    const badRole = await get(appWith({ AUTH_MODE: "dev", DEV_ROLE: "admin" }), "/me", { "HX-Request": "true" });
    expect(badRole.status).toBe(503);
    expect(await badRole.text()).toContain('DEV_ROLE must be "viewer" or "operator"');
  });
});

describe("access mode without its settings", () => {
  it("answers every request 503 naming the missing settings, without a stack trace", async () => {
    const app = appWith({});
    for (const path of ["/", "/me", "/ops"]) {
      const res = await get(app, path);
      expect(res.status).toBe(503);
      const page = await res.text();
      expect(page).toContain("Sign-in is not configured for this console");
      expect(page).toContain("missing settings: ACCESS_TEAM_DOMAIN, ACCESS_AUD, ROLES, CSRF_SECRET");
      expect(page).not.toMatch(/\bat \S+ \(|Error:|ZodError/);
    }
    expect((await get(app, "/health")).status).toBe(200);
  });

  it("names only what is missing, and treats blank values as missing", async () => {
    const res = await get(appWith({ ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com", ACCESS_AUD: "  ", ROLES: '{"viewer":["*@example.com"]}', CSRF_SECRET: "z".repeat(40) }), "/", {
      Accept: "application/json",
    });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe("auth_not_configured");
    expect(body.message).toContain("missing setting: ACCESS_AUD)");
  });

  it("explains settings that are present but wrong", async () => {
    const bad = readAuthConfig({ ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com/some/path", ACCESS_AUD: "a", ROLES: "{operator:", CSRF_SECRET: "short" });
    expect(bad.ok).toBe(false);
    const problems = bad.ok ? [] : bad.problems.map((p) => `${p.setting} ${p.problem}`);
    expect(problems).toEqual([
      expect.stringContaining("ACCESS_TEAM_DOMAIN is not a team domain like https://<team>.cloudflareaccess.com"),
      expect.stringContaining("ROLES is not valid JSON"),
      "CSRF_SECRET must be at least 32 characters",
    ]);
  });
});
