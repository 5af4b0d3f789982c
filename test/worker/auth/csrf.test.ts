import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  type AuthBindings,
  type AuthEnv,
  auth,
  CSRF_WINDOW_MS,
  csrf,
  csrfHxHeaders,
  csrfKey,
  csrfToken,
  issueCsrfToken,
  verifyCsrfToken,
} from "../../../worker/auth";
import type { RefusalBody } from "../../../worker/http/refusal";
import { mustTestId } from "../html";

/** Dev mode only answers loopback addresses (a `*.localhost` name is one). */
const ORIGIN = "https://console.localhost";
const SECRET = "csrf-test-secret-0123456789abcdef0123";

/** Dev mode gives a fixed identity, so these tests isolate the CSRF rules. */
function appAs(email: string, extra: AuthBindings = { CSRF_SECRET: SECRET }) {
  const app = new Hono<AuthEnv>();
  app.use(auth({ bindings: { AUTH_MODE: "dev", DEV_USER: email, ...extra } }));
  app.use(csrf());
  app.get("/form", (c) => c.json({ token: csrfToken(c), hx: csrfHxHeaders(c) }));
  app.post("/actions/note", async (c) => {
    const body = await c.req.parseBody();
    return c.json({ ok: true, by: c.var.user.email, note: body.note ?? null });
  });
  app.delete("/actions/session", (c) => c.text("deleted"));
  return app;
}
const tokenFor = async (app: Hono<AuthEnv>) => (await (await app.request(`${ORIGIN}/form`)).json()) as { token: string; hx: string };
const post = (app: Hono<AuthEnv>, headers: Record<string, string>, body?: BodyInit) => app.request(`${ORIGIN}/actions/note`, { method: "POST", headers, body });

describe("csrf()", () => {
  it("lets safe methods through without a token", async () => {
    expect((await appAs("alice@example.com").request(`${ORIGIN}/form`)).status).toBe(200);
  });

  it("passes a same-origin request with a valid header token", async () => {
    const app = appAs("alice@example.com");
    const { token, hx } = await tokenFor(app);
    expect(JSON.parse(hx)).toEqual({ "X-CSRF-Token": token });
    const res = await post(app, { Origin: ORIGIN, "X-CSRF-Token": token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, by: "alice@example.com", note: null });
    const del = await app.request(`${ORIGIN}/actions/session`, { method: "DELETE", headers: { "Sec-Fetch-Site": "same-origin", "X-CSRF-Token": token } });
    expect(del.status).toBe(200);
  });

  it("reads the _csrf form field and leaves the body readable for the handler", async () => {
    const app = appAs("alice@example.com");
    const { token } = await tokenFor(app);
    const urlencoded = await post(
      app,
      { Origin: ORIGIN, "Content-Type": "application/x-www-form-urlencoded" },
      new URLSearchParams({ _csrf: token, note: "restart <now>" }),
    );
    expect(urlencoded.status).toBe(200);
    expect(await urlencoded.json()).toMatchObject({ note: "restart <now>" });

    const form = new FormData();
    form.set("_csrf", token);
    form.set("note", "multipart works");
    const multipart = await post(app, { "Sec-Fetch-Site": "same-origin" }, form);
    expect(multipart.status).toBe(200);
    expect(await multipart.json()).toMatchObject({ note: "multipart works" });
  });

  it("refuses a missing token with 403 and a clear message", async () => {
    const app = appAs("alice@example.com");
    const res = await post(app, { Origin: ORIGIN });
    expect(res.status).toBe(403);
    expect(mustTestId(await res.text(), "auth-problem").attrs["data-code"]).toBe("csrf_missing");
    const form = await post(app, { Origin: ORIGIN, "Content-Type": "application/x-www-form-urlencoded" }, "note=hi");
    expect(form.status).toBe(403);
  });

  it("refuses a wrong or absent origin even with a valid token", async () => {
    const app = appAs("alice@example.com");
    const { token } = await tokenFor(app);
    const evil = await post(app, { Origin: "https://evil.example", "X-CSRF-Token": token, "HX-Request": "true" });
    expect(evil.status).toBe(403);
    expect(await evil.text()).toBe(
      "This change was refused because it was sent from https://evil.example, not from https://console.localhost. Changes are only accepted from the console's own pages.",
    );
    const crossSite = await post(app, { "Sec-Fetch-Site": "cross-site", "X-CSRF-Token": token, Accept: "application/json" });
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as RefusalBody).error.code).toBe("csrf_origin");
    expect((await post(app, { "X-CSRF-Token": token })).status).toBe(403);
    expect((await post(app, { Origin: "null", "X-CSRF-Token": token })).status).toBe(403);
  });

  it("refuses a token issued to another user", async () => {
    const { token: alicesToken } = await tokenFor(appAs("alice@example.com"));
    const res = await post(appAs("bob@example.com"), { Origin: ORIGIN, "X-CSRF-Token": alicesToken, Accept: "application/json" });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      ok: false,
      error: {
        code: "csrf_invalid",
        message:
          "This change was refused because its security token is not valid for you: it has expired or was issued to another user. Reload the page and try again.",
      },
    });
  });

  it("refuses expired and tampered tokens, accepts one from the previous window", async () => {
    const app = appAs("alice@example.com");
    const key = await csrfKey(SECRET);
    const old = await issueCsrfToken(key, "alice@example.com", Date.now() - 2 * CSRF_WINDOW_MS);
    expect((await post(app, { Origin: ORIGIN, "X-CSRF-Token": old })).status).toBe(403);
    const previous = await issueCsrfToken(key, "alice@example.com", Date.now() - CSRF_WINDOW_MS);
    expect((await post(app, { Origin: ORIGIN, "X-CSRF-Token": previous })).status).toBe(200);
    const { token } = await tokenFor(app);
    const tampered = token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA");
    expect((await post(app, { Origin: ORIGIN, "X-CSRF-Token": tampered })).status).toBe(403);
    expect(await verifyCsrfToken(key, token, "alice@example.com")).toBe(true);
    expect(await verifyCsrfToken(await csrfKey("another-secret-0123456789abcdef0123"), token, "alice@example.com")).toBe(false);
  });

  it("works in dev mode without CSRF_SECRET (per-isolate key)", async () => {
    const app = appAs("dev@localhost", {});
    const { token } = await tokenFor(app);
    expect((await post(app, { Origin: ORIGIN, "X-CSRF-Token": token })).status).toBe(200);
    expect((await post(appAs("dev@localhost"), { Origin: ORIGIN, "X-CSRF-Token": token })).status).toBe(403); // not valid under CSRF_SECRET
  });
});
