import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAssets } from "../../scripts/assets.mjs";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

/**
 * The browser edge, in a real Chromium against the real dev stack: the live overview (chart included) refreshes
 * under the CSP without a single violation, the security headers raise no complaint from the browser, and static
 * files have content-hashed names served with a year's immutable cache while pages stay uncached.
 */

// These run inside the page (page.evaluate / addInitScript); the test project has no DOM types of its own.
declare const window: Record<string, unknown>;
declare const document: {
  addEventListener: (
    type: string,
    cb: (e: { target?: unknown; violatedDirective?: string; blockedURI?: string; sourceFile?: string; lineNumber?: number; sample?: string }) => void,
  ) => void;
  getElementById: (id: string) => { hasAttribute: (n: string) => boolean } | null;
  querySelectorAll: (s: string) => ArrayLike<{ getAttribute: (n: string) => string | null }>;
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
  const running = await appPost(server, "/dev/sessions/edge-1/messages", {
    text: "migrate my data",
    script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
  });
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

describe("static files", () => {
  it("are referenced by hashed names and served with a year's immutable cache; the page itself is not cached", async () => {
    const page = await browser.newPage();
    const res = await page.goto(`${server.base}/`, { waitUntil: "load" });
    expect(res?.headers()["cache-control"]).toBe("no-store");
    const refs = await page.evaluate(() =>
      Array.from(document.querySelectorAll("script[src], link[href]"), (e) => e.getAttribute("src") ?? e.getAttribute("href") ?? ""),
    );
    // htmx, chart.js, our four scripts, the stylesheet and the favicon.
    expect(refs).toHaveLength(8);
    for (const ref of refs) {
      expect(ref).toMatch(/^\/assets\/[\w.-]+\.[0-9a-f]{10}\.(js|css|svg)$/);
      const file = await fetch(`${server.base}${ref}`);
      expect(file.status, ref).toBe(200);
      expect(file.headers.get("cache-control"), ref).toBe("public, max-age=31536000, immutable");
      await file.body?.cancel();
    }
    // Another page takes the same files from the browser's cache without asking the server.
    await page.goto(`${server.base}/incidents`, { waitUntil: "load" });
    const sizes = await page.evaluate(() =>
      (globalThis as unknown as { performance: { getEntriesByType: (t: string) => { name: string; transferSize: number }[] } }).performance
        .getEntriesByType("resource")
        .filter((e) => e.name.includes("/assets/"))
        .map((e) => [e.name, e.transferSize] as const),
    );
    // transferSize 0: served from the HTTP cache, with no request on the wire (no revalidation either).
    expect(sizes.length).toBeGreaterThanOrEqual(6);
    expect(sizes.filter(([, bytes]) => bytes !== 0)).toEqual([]);
    await page.close();
  });
});

describe("the asset build", () => {
  it("gives a changed file a new name, keeps an unchanged one, and serves only the current names", () => {
    const work = mkdtempSync(path.join(tmpdir(), "assets-build-"));
    const staticDir = path.join(work, "static");
    mkdirSync(staticDir);
    writeFileSync(path.join(staticDir, "app.js"), "console.log(1);\n");
    writeFileSync(path.join(staticDir, "app.css"), "body { color: black; }\n");
    writeFileSync(path.join(staticDir, "_headers"), "/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n");
    const opts = { root: repoRoot, staticDir, outDir: path.join(work, "public"), manifestFile: path.join(work, "manifest.json") };

    const first = buildAssets(opts);
    expect(Object.keys(first).sort()).toEqual(["app.css", "app.js", "chart.umd.min.js", "htmx.min.js"]);
    expect(JSON.parse(readFileSync(opts.manifestFile, "utf8"))).toEqual(first);
    // Config files are copied as they are, not hashed.
    expect(readFileSync(path.join(opts.outDir, "_headers"), "utf8")).toContain("immutable");

    writeFileSync(path.join(staticDir, "app.js"), "console.log(2);\n");
    const second = buildAssets(opts);
    expect(second["app.js"]).not.toBe(first["app.js"]);
    expect(second["app.js"]).toMatch(/^\/assets\/app\.[0-9a-f]{10}\.js$/);
    expect(second["app.css"]).toBe(first["app.css"]);
    expect(second["htmx.min.js"]).toBe(first["htmx.min.js"]);
    // The old name is gone from the served folder; the new one holds the new content.
    const served = readdirSync(path.join(opts.outDir, "assets"));
    expect(served).toHaveLength(4);
    expect(existsSync(path.join(opts.outDir, first["app.js"]!))).toBe(false);
    expect(readFileSync(path.join(opts.outDir, second["app.js"]!), "utf8")).toBe("console.log(2);\n");
  });
});
