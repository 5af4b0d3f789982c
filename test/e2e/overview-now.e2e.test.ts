import { mkdirSync, mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startAlertReceiver } from "../alert-receiver";
import { ARTIFACTS, launch, shot } from "./browser";
import { appPost, type DevServer, startDev, stop, until, wakeSession } from "./wrangler-dev";

/**
 * 3 a.m. on the real dev stack: poison turns of the demo fleet (evicted at every start) exhaust their recovery, more
 * than ten a minute, each incident opening and closing within seconds. The overview in Chromium must then show, on
 * its first screen at 1,280 and at 390 px wide, that it burns (the burning class), the alert banner and the recent
 * figures, within the overview's refresh interval (POLL_SECONDS, 2 s here; 15 s by default).
 */

// What the page scripts below read in the browser (this file is typed for Node).
declare const document: { documentElement: { scrollWidth: number } };
declare const window: { innerWidth: number };

const PORT = 8987;
const POLL_SECONDS = 2;
const SESSIONS = Array.from({ length: 14 }, (_, k) => `storm-${k}`);
let server: DevServer;
let browser: Browser;
let receiver: { port: number; server: Server };
let stormStart = 0;
let tenOfThemWithinMs = Number.POSITIVE_INFINITY;
const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];
/** The overview, opened before the storm, per width. */
const open = new Map<number, Page>();
const turnedAfterMs = new Map<number, number>();

type IncidentPage = { items: { incidentId: string; statusAt: number }[]; next: string | null };
/** Incidents exhausted since `since`, through the console's JSON (first page of 200 is plenty here). */
async function exhaustedSince(since: number): Promise<IncidentPage["items"]> {
  const r = await fetch(`${server.base}/incidents?${new URLSearchParams({ status: "exhausted", since: String(since), limit: "200" })}`, {
    headers: { Accept: "application/json" },
  }).catch(() => null);
  return r?.ok ? ((await r.json()) as IncidentPage).items : [];
}

beforeAll(async () => {
  receiver = await startAlertReceiver();
  const dir = mkdtempSync(path.join(tmpdir(), "overview-now-e2e-"));
  server = await startDev({
    port: PORT,
    persistDir: dir,
    vars: { POLL_SECONDS: String(POLL_SECONDS), ALERT_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook/webhook`, ALERT_RETRY_DELAY_SECONDS: "1" },
  });
  browser = await launch();
  // The overview is open at both widths before the storm, quiet; it must turn by its own refresh.
  for (const viewport of VIEWPORTS) {
    const page = await browser.newPage({ viewport });
    await page.goto(`${server.base}/`);
    expect(await page.locator("[data-testid='overview-now']").getAttribute("data-burning")).toBe("false");
    open.set(viewport.width, page);
  }
  stormStart = Date.now();
  // Every session gets a poison turn: evicted at each start, so after MAX_TURN_RECOVERIES wakes its runtime gives up.
  await Promise.all(
    SESSIONS.map((s) =>
      appPost(server, `/dev/sessions/${s}/messages`, {
        text: "reconcile the ledger",
        script: JSON.stringify({ chunks: ["Reconciling"] }),
        evictAt: "turn_start",
        evictTimes: "10",
      }).then((r) => r.arrayBuffer()),
    ),
  );
  // Wake them all, again and again, as clients retrying would: each wake is one more recovery, evicted again.
  const exhausted = await until(
    "ten poison turns to exhaust",
    async () => {
      await Promise.all(SESSIONS.map((s) => wakeSession(server, s)));
      const got = await exhaustedSince(stormStart - 60_000);
      return got.length >= 10 ? got : undefined;
    },
    150_000,
  );
  // The rate: the shortest span holding ten exhaustions (by when each incident became exhausted).
  const at = exhausted.map((i) => i.statusAt).sort((a, b) => a - b);
  tenOfThemWithinMs = Math.min(...at.slice(9).map((t, k) => t - at[k]!));
  console.log(
    `[overview-now e2e] ${exhausted.length} exhaustions ${Math.round((Date.now() - stormStart) / 1000)} s after the storm began; ten of them within ${Math.round(tenOfThemWithinMs / 1000)} s`,
  );
  // From the moment the console lists them, each open page has one refresh (POLL_SECONDS) to say it burns.
  const known = Date.now();
  for (const [width, page] of open) {
    await page.locator("[data-testid='overview-now'][data-burning='true']").waitFor({ timeout: POLL_SECONDS * 1000 + 1500 });
    turnedAfterMs.set(width, Date.now() - known);
  }
  console.log(`[overview-now e2e] open pages burning ${JSON.stringify(Object.fromEntries(turnedAfterMs))} ms after the console listed ten exhaustions`);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
  receiver?.server.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.server.close(() => r()) : r()));
});

/** The element's box lies within the first screen: its bottom edge above the viewport's height, nothing scrolled. */
async function onFirstScreen(page: Page, selector: string) {
  const box = await page.locator(selector).first().boundingBox();
  const height = page.viewportSize()!.height;
  expect(box, `${selector} is rendered`).not.toBeNull();
  expect(box!.y + box!.height, `${selector} ends at ${Math.round(box!.y + box!.height)} px, the screen at ${height} px`).toBeLessThanOrEqual(height);
  return box!;
}

for (const viewport of VIEWPORTS) {
  it(`at ${viewport.width} px, the open overview turns to burning within one refresh, with the alert banner and the recent figures on its first screen`, async () => {
    // A storm, not a trickle: at least ten exhaustions within one minute.
    expect(tenOfThemWithinMs).toBeLessThanOrEqual(60_000);
    const page = open.get(viewport.width)!;
    expect(turnedAfterMs.get(viewport.width)).toBeLessThanOrEqual(POLL_SECONDS * 1000 + 1500);
    // The exhaustion alerts go through the alerts Queue as well: the banner follows by the next refresh or two.
    const t0 = Date.now();
    await page.locator("[data-testid='banner-alert'][data-kind='exhausted']").waitFor({ timeout: POLL_SECONDS * 1000 * 5 });
    console.log(`[overview-now e2e] ${viewport.width} px: banner shown ${Date.now() - t0} ms after the page burned`);
    expect(await page.locator("section.now").getAttribute("class")).toContain("burning");
    // The worst thing first: the banner, the burning heading and the recent exhaustions, all without scrolling.
    const banner = await onFirstScreen(page, "[data-testid='alert-banner']");
    const heading = await onFirstScreen(page, "[data-testid='now-heading']");
    await onFirstScreen(page, "[data-testid='now-exhausted-recent']");
    await onFirstScreen(page, "[data-testid='now-exhausted-24h']");
    expect(banner.y).toBeLessThan(heading.y);
    expect(await page.locator("[data-testid='now-heading']").textContent()).toContain("Burning now");
    const recent = Number(await page.locator("[data-testid='now-exhausted-recent']").getAttribute("data-figure"));
    expect(recent).toBeGreaterThanOrEqual(10);
    // Nothing is open (each turn opened and gave up within seconds), and still the page does not say quiet.
    expect(await page.content()).not.toContain("Quiet shift");
    // No page wider than the screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `overview-now-first-screen-${viewport.width}.png`) });
    await shot(page, `overview-now-${viewport.width}`);
    await page.close();
  });
}

it("on a phone the incidents list shows rows on its first screen, its filters and save-view form folded; wide, they are open", async () => {
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await phone.goto(`${server.base}/incidents?status=exhausted`);
  expect(await phone.locator("[data-testid='filters-fold']").evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(false);
  expect(await phone.locator("form.filters").isVisible()).toBe(false);
  expect(await phone.locator("[data-testid='view-save']").isVisible()).toBe(false);
  await onFirstScreen(phone, "[data-testid='incidents'] tbody tr");
  await phone.screenshot({ path: path.join(ARTIFACTS, "overview-now-incidents-390.png") });
  // One tap unfolds them.
  await phone.locator("[data-testid='filters-fold'] > summary").click();
  expect(await phone.locator("form.filters").isVisible()).toBe(true);
  await phone.close();
  const wide = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await wide.goto(`${server.base}/incidents?status=exhausted`);
  expect(await wide.locator("form.filters").isVisible()).toBe(true);
  expect(await wide.locator("[data-testid='view-save']").isVisible()).toBe(true);
  await wide.close();
});
