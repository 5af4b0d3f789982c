import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launch, shot } from "./browser";
import { appPost, d1, type DevServer, startDev, stop, until } from "./wrangler-dev";

/**
 * The browser edge, in a real Chromium against the real dev stack: the live overview (chart included) refreshes
 * under the CSP without a single violation, and the security headers raise no complaint from the browser.
 */

// These run inside the page (page.evaluate / addInitScript); the test project has no DOM types of its own.
declare const window: Record<string, unknown>;
declare const document: {
  addEventListener: (type: string, cb: (e: { target?: unknown; violatedDirective?: string; blockedURI?: string; sourceFile?: string; lineNumber?: number; sample?: string }) => void) => void;
  getElementById: (id: string) => { hasAttribute: (n: string) => boolean } | null;
};

const PORT = 8871;

let server: DevServer;
let browser: Browser;
let dir: string;

/** What the page saw: CSP violations (the DOM event) and settled refreshes of the overview's live part. */
type Seen = { violations: string[]; refreshes: number };

/** Records, from before the first script runs, every `securitypolicyviolation` and every settled htmx swap of the live overview. */
async function watch(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const seen = { violations: [] as string[], refreshes: 0 };
    window.__seen = seen;
    document.addEventListener("securitypolicyviolation", (e) => {
      seen.violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber} ${e.sample ?? ""}`);
    });
    document.addEventListener("htmx:afterSettle", (e) => {
      const t = e.target as { id?: string } | undefined;
      if (t?.id === "overview-live") seen.refreshes++;
    });
  });
}

const seen = (page: Page) => page.evaluate(() => window.__seen as Seen);

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "edge-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  // A turn that keeps running: events for the chart, a running run for the cards.
  const running = await appPost(server, "/dev/sessions/edge-1/messages", { text: "migrate my data", script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }) });
  expect(running.status).toBe(200);
  await until("the running turn to reach the console", async () => d1(dir, "SELECT fiber_id FROM runs WHERE agent_name = 'edge-1' LIMIT 1")[0]?.fiber_id);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

describe("the live overview under the CSP", () => {
  it("refreshes the chart several times without one CSP violation or console error", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // The browser's own report of a violation (and any other console error) arrives over the devtools protocol.
    const consoleErrors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(e.message));
    await watch(page);
    await page.goto(`${server.base}/`, { waitUntil: "load" });
    // chart.js drew on the canvas: it sizes it through its style (the attribute htmx would copy on settle).
    await expect.poll(() => page.evaluate(() => document.getElementById("events-chart")?.hasAttribute("style") ?? false)).toBe(true);
    // The overview polls every 2 s (POLL_SECONDS in startDev): wait for four refreshes, each swapping in a new canvas.
    await expect.poll(async () => (await seen(page)).refreshes, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
    await expect.poll(() => page.evaluate(() => document.getElementById("events-chart")?.hasAttribute("style") ?? false)).toBe(true);
    await shot(page, "edge-overview-refreshed");
    const { violations } = await seen(page);
    expect(violations, "CSP violations seen by the page").toEqual([]);
    expect(consoleErrors, "console errors (CSP reports, Permissions-Policy parse errors, script errors)").toEqual([]);
    await page.close();
  });
});
