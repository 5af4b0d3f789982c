import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { type AssetName, asset } from "../../console/assets";
import { HTMX_CONFIG } from "../../console/htmx-config";
import { LAYOUT_SCRIPTS } from "../../console/layout";
import { app } from "../../worker/app";
import { CONTENT_SECURITY_POLICY, PERMISSIONS_POLICY, STRICT_TRANSPORT_SECURITY, securityHeaders } from "../../worker/security-headers";
import { publishEnvTeamKeys } from "./access-tokens";
import { byTestId, findAll } from "./html";
import { bulkBatch, call, csrfFor, exhaustedChatIncident, getText, postForm, type StalledSession, stalledSession, uid, type Who } from "./routes/harness";

// Every answer of the console Worker — pages, fragments, JSON, refusals, 404s, errors — carries the
// security headers, and no page needs what the CSP forbids (inline scripts, inline handlers, inline
// styles, eval). The routes come from the app itself, so a new route is covered without being listed.

const enc = encodeURIComponent;
let session: StalledSession;
let incidentId: string;
let batchId: string;

/** What each route parameter is filled with; a route with a parameter not listed here fails the test. */
const PARAMS: Record<string, () => string> = {
  incidentId: () => incidentId,
  fiberId: () => session.runId,
  agentClass: () => session.agentClass,
  agentName: () => session.name,
  runId: () => session.runId,
  name: () => session.name,
  batchId: () => batchId,
  // No such view: its address answers 404 with a sentence, deleting it 404 too.
  viewId: () => "no-such-view",
  // A list to download (/export/:list).
  list: () => "runs",
};

const ROUTES = [...new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`))].map((key) => {
  const [method, pattern] = key.split(" ") as [string, string];
  return { method, pattern };
});

function urlOf(pattern: string): string {
  return pattern.replace(/:(\w+)/g, (_m, p: string) => {
    const fill = PARAMS[p];
    if (!fill) throw new Error(`no test value for :${p} in ${pattern}: add it to PARAMS`);
    return enc(fill());
  });
}

/** Asserts the headers every Worker response carries (access mode over https, as in production). */
function expectSecurityHeaders(res: Response, what: string) {
  const h = res.headers;
  expect(h.get("content-security-policy"), what).toBe(CONTENT_SECURITY_POLICY);
  expect(h.get("x-content-type-options"), what).toBe("nosniff");
  expect(h.get("x-frame-options"), what).toBe("DENY");
  expect(h.get("referrer-policy"), what).toBe("same-origin");
  expect(h.get("cache-control"), what).toBe("no-store");
  expect(h.get("strict-transport-security"), what).toBe(STRICT_TRANSPORT_SECURITY);
  expect(h.get("permissions-policy"), what).toBe(PERMISSIONS_POLICY);
}

/** Markup the CSP would block, or that would need eval from htmx. */
function expectNothingInline(html: string, what: string) {
  // Every <script> has a src and no body.
  for (const tag of html.match(/<script\b[^>]*>[\s\S]*?<\/script>/gi) ?? []) expect(tag, what).toMatch(/^<script\b[^>]*\ssrc="[^"]+"[^>]*><\/script>$/i);
  expect(html, what).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
  // No inline event handler (onclick=, onerror=, …) as an attribute of any element.
  expect(html, what).not.toMatch(/<[a-z][^>]*\son[a-z]+\s*=/i);
  // No inline style: neither <style> elements nor style attributes.
  expect(html, what).not.toMatch(/<style\b/i);
  expect(html, what).not.toMatch(/<[a-z][^>]*\sstyle\s*=/i);
  // No htmx feature that evaluates code: hx-on, hx-vars, js: values, [filter] conditions in hx-trigger.
  expect(html, what).not.toMatch(/\shx-on[:-]|\shx-vars=|\shx-vals="js:/i);
  expect(html, what).not.toMatch(/\shx-trigger="[^"]*\[/i);
  expect(html, what).not.toMatch(/javascript:/i);
}

beforeAll(async () => {
  await publishEnvTeamKeys();
  [session, { incidentId }, { batchId }] = await Promise.all([stalledSession("headers"), exhaustedChatIncident(), bulkBatch("headers")]);
});

describe("every registered route", () => {
  it("is found in the app (the table below is derived from it)", () => {
    expect(ROUTES.length).toBeGreaterThan(15);
    expect(ROUTES.map((r) => `${r.method} ${r.pattern}`)).toEqual(
      expect.arrayContaining(["GET /health", "GET /", "GET /incidents/:incidentId", "POST /actions/force-idle"]),
    );
  });

  const WHO: Who[] = ["anonymous", "norole", "viewer", "operator"];
  describe.each(ROUTES)("$method $pattern", ({ method, pattern }) => {
    it.each(WHO)("answers %s with the security headers", async (who) => {
      const url = urlOf(pattern);
      if (method === "GET") {
        const res = await call(url, { as: who });
        expectSecurityHeaders(res, `GET ${url} as ${who}`);
        const type = res.headers.get("content-type") ?? "";
        const body = await res.text();
        if (type.startsWith("text/html")) expectNothingInline(body, `GET ${url} as ${who}`);
        return;
      }
      // State-changing routes, aimed at an agent that does not exist so nothing is changed. A reconciliation
      // pass has no target: an operator's succeeds (it only reads agents and records what they said).
      const csrf = who === "viewer" || who === "operator" ? await csrfFor(who) : undefined;
      const res = await postForm(
        url,
        who,
        { agentClass: "ProbeAgent", agentName: `nobody-${uid()}`, reason: "headers check" },
        { csrf, headers: { "HX-Request": "true" } },
      );
      expectSecurityHeaders(res, `${method} ${url} as ${who}`);
      if (pattern === "/api/reconcile" && who === "operator") expect(res.status).toBe(200);
      else expect(res.status).toBeGreaterThanOrEqual(400);
      const type = res.headers.get("content-type") ?? "";
      if (type.startsWith("text/html")) expectNothingInline(await res.text(), `${method} ${url} as ${who}`);
    });
  });

  it("404s, htmx 404s and JSON answers carry them too", async () => {
    expectSecurityHeaders(await call("/no/such/page", { as: "viewer" }), "404 page");
    expectSecurityHeaders(await call("/no/such/page", { as: "viewer", headers: { "HX-Request": "true" } }), "htmx 404");
    expectSecurityHeaders(await call("/incidents?status=nonsense", { as: "viewer", headers: { Accept: "application/json" } }), "JSON 400");
    const post = await call("/health", { method: "POST" });
    expect(post.status).toBe(405);
    expect(await post.text()).toBe("/health answers GET only, not POST.");
    expectSecurityHeaders(post, "POST /health");
  });
});

describe("pages under the CSP", () => {
  it("load only same-origin scripts and styles under content-hashed names, each a static file with nosniff and a year's immutable cache", async () => {
    const page = await getText("/", "viewer");
    const scripts = [...page.text.matchAll(/<script\b[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]!);
    const links = [...page.text.matchAll(/<link\b[^>]*\shref="([^"]+)"/g)].map((m) => m[1]!);
    // The overview adds chart.js to the layout's own scripts.
    expect(scripts).toEqual((["htmx.min.js", "chart.umd.min.js", ...LAYOUT_SCRIPTS.slice(1)] as AssetName[]).map(asset));
    // The stylesheet and the favicon (img-src 'self' covers it).
    expect([...links].sort()).toEqual([asset("console.css"), asset("favicon.svg")].sort());
    // Every one under /assets/, its name carrying a hash of its content.
    for (const src of [...scripts, ...links]) expect(src).toMatch(/^\/assets\/[\w.-]+\.[0-9a-f]{10}\.(js|css|svg)$/);
    const types: Record<string, RegExp> = { css: /^text\/css/, js: /javascript/, svg: /^image\/svg\+xml/ };
    for (const src of [...scripts, ...links]) {
      expect(src, "a path on this origin, not //host or a URL").toMatch(/^\/(?!\/)[\w./-]+$/);
      // exports.default reaches the Worker, not Workers Assets: the files come from the ASSETS binding.
      const file = await env.ASSETS!.fetch(`https://console.example.com${src}`);
      expect(file.status, src).toBe(200);
      expect(file.headers.get("content-type"), src).toMatch(types[src.split(".").pop()!]!);
      expect(file.headers.get("x-content-type-options"), src).toBe("nosniff");
      expect(file.headers.get("cache-control"), src).toBe("public, max-age=31536000, immutable");
      await file.body?.cancel();
    }
    // A name from no build is not served.
    expect((await env.ASSETS!.fetch("https://console.example.com/assets/console.0000000000.css")).status).toBe(404);
    // The headers file configures the assets; it is not served itself.
    expect((await env.ASSETS!.fetch("https://console.example.com/_headers")).status).toBe(404);
  });

  it("configure htmx not to eval, inject or copy styles, run swapped scripts or keep page snapshots", async () => {
    const page = await getText("/sessions", "viewer");
    const m = /<meta name="htmx-config" content="([^"]+)"/.exec(page.text);
    expect(m).not.toBeNull();
    const config = JSON.parse(m![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&")) as Record<string, unknown>;
    expect(config).toEqual(JSON.parse(HTMX_CONFIG));
    expect(config).toMatchObject({ allowEval: false, allowScriptTags: false, includeIndicatorStyles: false, historyCacheSize: 0 });
    // Settling would copy an element's style attribute with setAttribute: an inline style the CSP refuses.
    expect(config.attributesToSettle).not.toContain("style");
  });

  it("the action forms cannot be framed and are never cached with their CSRF token", async () => {
    const res = await call(`/sessions/${enc(session.name)}`, { as: "operator" });
    const html = await res.text();
    expect(findAll(html, "id", "action-form-force-idle")).toHaveLength(1);
    expect(html).toMatch(/<body[^>]*\shx-headers="[^"]*X-CSRF-Token/);
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("cache-control")).toBe("no-store");
    // The disclosure buttons are wired by console.js, not by an inline handler.
    const disclosure = findAll(html, "aria-controls", "action-form-force-idle")[0];
    expect(disclosure?.tag).toBe("button");
    expect(disclosure?.attrs).toEqual({ type: "button", "data-disclosure": "true", "aria-expanded": "false", "aria-controls": "action-form-force-idle" });

    const token = await call("/api/csrf", { as: "viewer" });
    expect(await token.json()).toMatchObject({ token: expect.any(String) });
    expect(token.headers.get("cache-control")).toBe("no-store");
  });
});

describe("Permissions-Policy", () => {
  it("denies every powerful feature the console does not use, to itself and to anything it embeds", () => {
    const features = Object.fromEntries(PERMISSIONS_POLICY.split(", ").map((d) => d.split("=") as [string, string]));
    for (const f of ["camera", "microphone", "geolocation", "payment", "usb", "serial", "hid", "display-capture"]) expect(features[f], f).toBe("()");
    // Features Chromium does not recognise make it log an error on every page: none is listed.
    for (const f of ["bluetooth", "web-share"]) expect(features[f], f).toBeUndefined();
    // Nothing is allowed to any origin: every directive is an empty allowlist.
    expect(Object.values(features).every((v) => v === "()")).toBe(true);
  });

  it("is sent in dev mode too", async () => {
    const dev = await app.fetch(new Request("http://127.0.0.1:8787/incidents"), { ...env, AUTH_MODE: "dev" });
    expect(dev.headers.get("permissions-policy")).toBe(PERMISSIONS_POLICY);
    await dev.body?.cancel();
  });
});

describe("Strict-Transport-Security", () => {
  it("is sent in access mode, not in dev mode on http loopback (other headers are)", async () => {
    expect((await call("/health")).headers.get("strict-transport-security")).toBe(STRICT_TRANSPORT_SECURITY);

    const dev = await app.fetch(new Request("http://127.0.0.1:8787/incidents"), { ...env, AUTH_MODE: "dev" });
    expect(dev.status).toBe(200);
    expect(dev.headers.get("strict-transport-security")).toBeNull();
    expect(dev.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
    expect(dev.headers.get("cache-control")).toBe("no-store");
    expect(byTestId(await dev.text(), "dev-banner")).toBeDefined();
  });
});

describe("the middleware", () => {
  it("puts the headers on an answer made by onError after a throw", async () => {
    const mini = new Hono();
    mini.use("*", securityHeaders());
    mini.get("/boom", () => {
      throw new Error("kaput");
    });
    mini.onError((_e, c) => c.text("Something went wrong on our side.", 500));
    const res = await mini.request("https://console.example.com/boom");
    expect(res.status).toBe(500);
    expectSecurityHeaders(res, "500 from onError");
  });

  it("copies a response whose headers are immutable (passed through from fetch) instead of failing", async () => {
    const mini = new Hono();
    mini.use("*", securityHeaders());
    mini.get("/asset", () => env.ASSETS!.fetch(`https://console.example.com${asset("console.css")}`));
    const res = await mini.request("https://console.example.com/asset");
    expect(res.status).toBe(200);
    expectSecurityHeaders(res, "passed-through response");
    expect(await res.text()).toContain("--fg");
  });
});
