import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axe, readable } from "./axe";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, devSession, startDev, stop, until, wakeSession } from "./wrangler-dev";

/**
 * Accessibility and the phone layout, in a real browser against the real dev stack: axe-core (WCAG 2.0/2.1
 * A and AA rules) finds no violation on any console page, no page scrolls sideways at 390 px, and the
 * keyboard works (skip link, shortcuts and their help overlay). No page scrolls sideways at 1,280 px either.
 */

// These run inside the page (page.evaluate); the test project has no DOM types of its own.
declare const window: Record<string, unknown>;
declare const document: { documentElement: { scrollWidth: number }; scrollingElement: { scrollWidth: number; clientWidth: number } };

const PORT = 8801;

/** The ids the setup produced, for the pages that show one thing. */
type Ids = { incident: string; incidentAgent: string; run: string; session: string; agentClass: string; agentName: string };

/** Every console page this test checks: every page of the nav, each kind of detail page, and the tool pages. */
/** Waits until the page's lazily loaded parts (the overview's 24 h part) replaced their placeholders: what a person sees. */
const lazyLoaded = (page: Page) => page.locator("[data-testid='lazy-placeholder']").waitFor({ state: "detached", timeout: 30_000 });

const PAGES: { name: string; path: (ids: Ids) => string }[] = [
  { name: "overview", path: () => "/" },
  { name: "incidents", path: () => "/incidents" },
  { name: "incident", path: (i) => `/incidents/${encodeURIComponent(i.incident)}?agentClass=${i.agentClass}&agentName=${encodeURIComponent(i.incidentAgent)}` },
  { name: "runs", path: () => "/runs" },
  { name: "run", path: (i) => `/runs/${encodeURIComponent(i.run)}?agentClass=${i.agentClass}&agentName=${encodeURIComponent(i.agentName)}` },
  { name: "sessions", path: () => "/sessions" },
  { name: "session", path: (i) => `/sessions/${encodeURIComponent(i.session)}` },
  { name: "agent", path: (i) => `/agents/${i.agentClass}/${encodeURIComponent(i.agentName)}` },
  { name: "snapshot", path: (i) => `/agents/${i.agentClass}/${encodeURIComponent(i.agentName)}/runs/${encodeURIComponent(i.run)}` },
  { name: "ops", path: () => "/ops" },
  { name: "backups", path: () => "/backups" },
  { name: "audit", path: () => "/audit" },
  { name: "agents", path: () => "/agents" },
  { name: "agents with missing events", path: () => "/agents?gaps=true" },
  { name: "stuck", path: () => "/stuck" },
  { name: "awake", path: () => "/awake" },
  { name: "deploys", path: () => "/deploys" },
  { name: "incidents by version", path: () => "/incidents?groupBy=version" },
  { name: "views", path: () => "/views" },
  { name: "alerts", path: () => "/alerts" },
  { name: "search", path: () => "/search?q=x" },
  { name: "search results", path: () => "/search?q=a11y-2" },
  { name: "incidents last hour", path: () => "/incidents?since=1h" },
  { name: "bulk", path: () => "/bulk" },
  { name: "dead letters", path: () => "/dead-letters" },
  { name: "bulk preview", path: (i) => `/bulk?agentClass=${i.agentClass}` },
];

/** The phone viewport the issue names. */
const PHONE = { width: 390, height: 844 };

let server: DevServer;
let browser: Browser;
let dir: string;
let ids: Ids;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "a11y-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();

  // A turn evicted once at its start: the SDK recovers it on wake, which opens (and closes) an incident.
  const evicted = await appPost(server, "/dev/sessions/a11y-1/messages", {
    text: "summarise the ledger",
    script: JSON.stringify({ chunks: ["Summarising"] }),
    evictAt: "turn_start",
    evictTimes: "1",
  });
  expect([200, 500, 502, 503]).toContain(evicted.status); // the planned eviction may cut this very call short
  const incident = await until(
    "the recovery incident to reach the console",
    async () => {
      await wakeSession(server, "a11y-1");
      return d1(dir, "SELECT incident_id FROM incidents WHERE agent_name = 'a11y-1' LIMIT 1")[0]?.incident_id as string | undefined;
    },
    90_000,
  );
  // A turn that keeps running: a live agent page with actions, a running run.
  const running = await appPost(server, "/dev/sessions/a11y-2/messages", {
    text: "migrate my data",
    script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
  });
  expect(running.status).toBe(200);
  const run = await until(
    "the running turn to reach the console",
    async () => d1(dir, "SELECT fiber_id FROM runs WHERE agent_name = 'a11y-2' LIMIT 1")[0]?.fiber_id as string | undefined,
  );
  ids = { incident, incidentAgent: "a11y-1", run, session: "a11y-2", agentClass: "DemoSessionAgent", agentName: "a11y-2" };
  // A bulk action refused for want of a reason: its audit row names the whole filter as one unbreakable target.
  const refused = await (await devSession(server.base)).post("/bulk", {
    agentClass: "DemoSessionAgent",
    incidentReason: "max_turn_recoveries",
    openOnly: "true",
    status: "running_sessions",
    action: "trigger-alarm",
    reason: "",
  });
  expect(refused.status).toBe(400);
  expect(d1(dir, "SELECT COUNT(*) AS n FROM audit_log WHERE target_class = 'batch'")[0]?.n).toBe(1);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

describe("every console page", () => {
  it("answers 200 on every page", async () => {
    // Through the browser, as a person would open them.
    const page = await browser.newPage();
    for (const p of PAGES) {
      const status = (await page.goto(`${server.base}${p.path(ids)}`, { waitUntil: "domcontentloaded" }))?.status();
      expect(status, `${p.name} ${p.path(ids)}`).toBe(200);
    }
    await page.close();
  });

  it("has no axe violations (WCAG 2.1 A and AA)", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const report: Record<string, number> = {};
    const failures: string[] = [];
    for (const p of PAGES) {
      const res = await page.goto(`${server.base}${p.path(ids)}`, { waitUntil: "load" });
      expect(res?.status(), `${p.name} ${p.path(ids)}`).toBe(200);
      await lazyLoaded(page);
      const violations = await axe(page);
      report[p.name] = violations.reduce((n, v) => n + v.nodes.length, 0);
      if (violations.length) failures.push(`${p.name} (${p.path(ids)}):\n  ${readable(violations).replace(/\n/g, "\n  ")}`);
    }
    console.log(`axe: elements in violation per page ${JSON.stringify(report)}`);
    expect(failures.join("\n\n"), "axe violations").toBe("");
    expect(Object.keys(report).length).toBe(PAGES.length);
    await page.close();
  });

  it("never scrolls sideways at 390 px wide, and has no axe violations there either", async () => {
    const page = await browser.newPage({ viewport: PHONE });
    const widths: Record<string, number> = {};
    const failures: string[] = [];
    for (const p of PAGES) {
      const res = await page.goto(`${server.base}${p.path(ids)}`, { waitUntil: "load" });
      expect(res?.status(), `${p.name} ${p.path(ids)}`).toBe(200);
      await lazyLoaded(page);
      widths[p.name] = await page.evaluate(() => document.documentElement.scrollWidth);
      // Lists are cards on a phone (console.css): nothing may be wider than the screen.
      const violations = await axe(page);
      if (violations.length) failures.push(`${p.name} at 390 px:\n  ${readable(violations).replace(/\n/g, "\n  ")}`);
      await shot(page, `a11y-phone-${p.name}`);
    }
    console.log(`390 px: page scroll widths ${JSON.stringify(widths)}`);
    const wide = Object.entries(widths).filter(([, w]) => w > PHONE.width);
    expect(wide, "pages wider than the phone").toEqual([]);
    expect(Object.keys(widths).length).toBe(PAGES.length);
    expect(failures.join("\n\n"), "axe violations at 390 px").toBe("");
    await page.close();
  });

  it("never scrolls sideways at 1,280 px wide", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const overflow: Record<string, number> = {};
    for (const p of PAGES) {
      const res = await page.goto(`${server.base}${p.path(ids)}`, { waitUntil: "load" });
      expect(res?.status(), `${p.name} ${p.path(ids)}`).toBe(200);
      await lazyLoaded(page);
      // Pixels the page is wider than its viewport (0: nothing to scroll sideways).
      overflow[p.name] = await page.evaluate(() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth);
    }
    // The audit log has its batch row, whose target is the longest unbreakable text on any page.
    await page.goto(`${server.base}/audit`);
    expect(await page.locator("[data-testid='audit'] tbody tr").count()).toBeGreaterThanOrEqual(1);
    await shot(page, "wide-audit");
    console.log(`1280 px: sideways overflow per page ${JSON.stringify(overflow)}`);
    expect(
      Object.entries(overflow).filter(([, px]) => px > 0),
      "pages that scroll sideways at 1,280 px",
    ).toEqual([]);
    expect(Object.keys(overflow).length).toBe(PAGES.length);
    await page.close();
  });
});

describe("the keyboard", () => {
  /** Where keyboard focus is, as its tag, id and text. */
  const focused = (page: Page) =>
    page.evaluate(() => {
      const a = (document as unknown as { activeElement: { tagName: string; id: string; textContent: string | null } | null }).activeElement;
      return a ? { tag: a.tagName.toLowerCase(), id: a.id, text: (a.textContent ?? "").trim() } : null;
    });

  it("reaches a skip link first, which moves focus to the page's content; the nav marks the current page", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/incidents`);
    await page.keyboard.press("Tab");
    expect(await focused(page)).toMatchObject({ tag: "a", text: "Skip to content" });
    expect(await page.getByRole("link", { name: "Skip to content" }).isVisible()).toBe(true);
    await page.keyboard.press("Enter");
    expect(await focused(page)).toMatchObject({ tag: "main", id: "content" });
    // The next Tab starts inside the content, past the header's nav links.
    await page.keyboard.press("Tab");
    expect(
      await page.evaluate(() => (document as unknown as { activeElement: { closest: (s: string) => unknown } }).activeElement.closest("main") !== null),
    ).toBe(true);

    const current = page.locator("header nav a[aria-current='page']");
    expect(await current.count()).toBe(1);
    expect(await current.textContent()).toBe("Incidents");
    // A favicon, served as an image from this origin (img-src 'self').
    const iconHref = await page.locator("link[rel='icon']").getAttribute("href");
    expect(iconHref).toMatch(/^\/assets\/favicon\.[0-9a-f]{10}\.svg$/);
    const icon = await page.request.get(`${server.base}${iconHref}`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()["content-type"]).toMatch(/^image\/svg\+xml/);
    await page.close();
  });

  it("opens the shortcut help with ? and closes it with Escape, giving focus back", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/sessions`);
    const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    expect(await help.isVisible()).toBe(false);
    await page.keyboard.press("?");
    expect(await help.isVisible()).toBe(true);
    expect(await help.textContent()).toContain("Go to incidents");
    expect(await focused(page)).toMatchObject({ tag: "button", text: "Close" });
    await shot(page, "a11y-shortcut-help");
    await page.keyboard.press("Escape");
    expect(await help.isVisible()).toBe(false);
    // Its Close button closes it too.
    await page.keyboard.press("?");
    await help.getByRole("button", { name: "Close" }).click();
    expect(await help.isVisible()).toBe(false);
    await page.close();
  });

  it("goes to the overview, incidents, runs and sessions with g o, g i, g r, g s", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/audit`);
    for (const [key, path] of [
      ["i", "/incidents"],
      ["r", "/runs"],
      ["s", "/sessions"],
      ["o", "/"],
    ] as const) {
      await page.keyboard.press("g");
      await Promise.all([page.waitForURL(`${server.base}${path}`), page.keyboard.press(key)]);
      await page.waitForLoadState("load");
    }
    await page.close();
  });

  it("walks the list with j and k and opens the selected row with Enter", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/runs`);
    const rows = page.locator("[data-testid='fibers'] > tbody > tr");
    expect(await rows.count()).toBeGreaterThanOrEqual(2);
    const selected = page.locator("[data-testid='fibers'] > tbody > tr.kb-selected");
    await page.keyboard.press("j");
    expect(await selected.count()).toBe(1);
    expect(await rows.nth(0).evaluate((r) => (r as unknown as { classList: { contains: (c: string) => boolean } }).classList.contains("kb-selected"))).toBe(
      true,
    );
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    // j stops at the last row: with two rows (D1 lists what is running or needs a person) the walk ends on the first.
    const at = Math.min(2, (await rows.count()) - 1) - 1;
    expect(await rows.nth(at).evaluate((r) => (r as unknown as { classList: { contains: (c: string) => boolean } }).classList.contains("kb-selected"))).toBe(
      true,
    );
    expect(await selected.count()).toBe(1);
    const target = await rows.nth(at).locator("a[href]").first().getAttribute("href");
    await Promise.all([page.waitForURL(`${server.base}${target}`), page.keyboard.press("Enter")]);
    expect(await page.locator("h1").textContent()).not.toBe("Runs");
    await page.close();
  });

  it("puts the cursor in the search box with / when the page has one, and does nothing without it", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${server.base}/incidents`);
    const hasSearch = (await page.locator("#global-search").count()) > 0;
    await page.keyboard.press("/");
    if (hasSearch) {
      expect(await focused(page)).toMatchObject({ id: "global-search" });
    } else {
      // This branch has no header search yet (another slice adds #global-search): the key changes nothing.
      expect(await focused(page)).toMatchObject({ tag: "body" });
      expect(page.url()).toBe(`${server.base}/incidents`);
    }
    expect(errors).toEqual([]);
    await page.close();
  });

  it("fires no shortcut while someone types in a field", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/incidents`);
    const reason = page.getByRole("textbox", { name: "reason" });
    await reason.click();
    await page.keyboard.type("gi?jk");
    expect(await reason.inputValue()).toBe("gi?jk");
    expect(page.url()).toBe(`${server.base}/incidents`);
    expect(await page.getByRole("dialog", { name: "Keyboard shortcuts" }).isVisible()).toBe(false);
    expect(await page.locator("tr.kb-selected").count()).toBe(0);
    await page.close();
  });

  it("gives each admin action one tab stop, which opens its form with the cursor in the reason", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.base}/sessions/${ids.session}`);
    const actions = page.locator("#admin-actions");
    const forceIdle = actions.getByRole("button", { name: "Force idle…" });
    await forceIdle.focus();
    // From the first action, one Tab reaches the second: nothing focusable sits between them.
    await page.keyboard.press("Tab");
    expect(await focused(page)).toMatchObject({ tag: "button", text: "Trigger alarm…" });
    expect(await forceIdle.getAttribute("aria-expanded")).toBe("false");
    expect(await actions.locator("form[hx-post='/actions/force-idle']").isVisible()).toBe(false);

    await forceIdle.focus();
    await page.keyboard.press("Enter");
    expect(await forceIdle.getAttribute("aria-expanded")).toBe("true");
    expect(await focused(page)).toMatchObject({ tag: "textarea" });
    expect(await actions.locator("form[hx-post='/actions/force-idle']").isVisible()).toBe(true);
    await page.close();
  });
});
