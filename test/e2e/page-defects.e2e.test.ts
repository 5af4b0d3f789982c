import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { axe, readable } from "./axe";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until, wakeSession } from "./wrangler-dev";

/**
 * Defects found by using the console in Chromium (issue 36), each checked where it showed: the incident page keeps
 * its facts after an action, j/k walk the main list of /incidents and /stuck, no page is wider than the screen at
 * 1,280 or 390 px once /alerts has rows, and Chromium finds nothing to complain about in the Permissions-Policy.
 */

// These run inside the page (page.evaluate); the test project has no DOM types of its own.
declare const document: {
  getElementById(id: string): { dataset: Record<string, string> } | null;
  scrollingElement: { scrollWidth: number; clientWidth: number };
};

const PORT = 8997;
// Session names are the customer's ids, often long and with no break in them (a ULID here): every cell showing one
// (agent, incident id, an alert's subject and summary) must wrap rather than widen the page.
const POISON = "sess_01JEXQ4W5E6R7T8Y9U0I1O2P3A4S5D6F7G8H9";
const STALLED = "ui36-stalled";
const INCIDENT = `turn:DemoSessionAgent/${POISON}/1`;
const incidentPath = `/incidents/${encodeURIComponent(INCIDENT)}?agentClass=DemoSessionAgent&agentName=${POISON}`;

let server: DevServer;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "page-defects-e2e-"));
  server = await startDev({
    port: PORT,
    persistDir: dir,
    vars: {
      // Nothing listens there: every delivery fails, so /alerts gets rows with attempts, an HTTP column and a last error.
      ALERT_WEBHOOK_URL: "http://127.0.0.1:9/hook",
      ALERT_RETRY_DELAY_SECONDS: "1",
      STUCK_NO_PROGRESS_MINUTES: "0.1",
    },
  });
  browser = await launch();

  // A poison turn: evicted at every start, so recovery gives up and the incident is exhausted (and alerted).
  const poison = await appPost(server, `/dev/sessions/${POISON}/messages`, {
    text: "reconcile the ledger",
    script: JSON.stringify({ chunks: ["Reconciling"] }),
    evictAt: "turn_start",
    evictTimes: "10",
  });
  expect([200, 500, 502, 503]).toContain(poison.status);
  await until(
    "the poison turn to exhaust its recovery budget",
    async () => {
      await wakeSession(server, POISON);
      return d1(dir, `SELECT status FROM incidents WHERE incident_id = '${INCIDENT}'`)[0]?.status === "exhausted";
    },
    90_000,
  );
  // A turn that stalls after one chunk: stuck ("running, no progress") after 6 s.
  const stalled = await appPost(server, `/dev/sessions/${STALLED}/messages`, {
    text: "migrate my data",
    script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
  });
  expect(stalled.status).toBe(200);
  await until("the alert's delivery to have failed", () => d1(dir, "SELECT 1 FROM alert_deliveries WHERE last_error IS NOT NULL").length > 0, 60_000);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("keeps the incident's facts after an action on its agent, read again from the console", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${server.base}${incidentPath}`);
  const facts = page.locator("#incident-facts");
  expect(await facts.locator("[data-testid='incident-status']").textContent()).toContain("exhausted");
  // Marks the facts block as rendered with the page: the refresh after the action replaces it with a fresh one.
  await page.evaluate(() => {
    document.getElementById("incident-facts")!.dataset.stale = "true";
  });

  await page.getByRole("button", { name: "Trigger alarm…" }).click();
  await page.keyboard.type("recover it now");
  await page.getByRole("button", { name: "Confirm trigger alarm" }).click();
  await page.locator("[data-testid='action-result']").waitFor();
  // The refresh comes 2 s after the action (AFTER_ACTION_TRIGGER): the facts are there, fresh, with status, reason and attempts.
  await page.locator("#incident-facts:not([data-stale])").waitFor({ timeout: 15_000 });
  expect(await page.locator("#incident-facts").count()).toBe(1);
  expect(await page.locator("[data-testid='incident-status']").textContent()).toContain("exhausted");
  expect(await page.locator("[data-testid='incident-reason']").textContent()).toBe("max_turn_recoveries");
  expect(await page.locator("[data-testid='incident-attempts']").textContent()).toContain("counted from its events");
  await shot(page, "defects-01-incident-after-action");
  await page.close();
});

it("walks the incidents list with j and k, and on /stuck the stuck list rather than the thresholds", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${server.base}/incidents`);
  const rows = page.locator("[data-testid='incidents'] tbody tr");
  await rows.first().waitFor();
  await page.keyboard.press("j");
  expect(await page.locator("[data-testid='incidents'] tbody tr.kb-selected").count()).toBe(1);
  expect(await rows.first().getAttribute("class")).toContain("kb-selected");

  await page.goto(`${server.base}/stuck`);
  const stuck = page.locator("[data-testid='stuck'] tbody tr", { hasText: STALLED });
  await stuck.first().waitFor({ timeout: 60_000 });
  await page.keyboard.press("j");
  expect(await page.locator("[data-testid='stuck'] tbody tr.kb-selected").count()).toBe(1);
  expect(await page.locator("[data-testid='stuck-thresholds'] tr.kb-selected").count()).toBe(0);
  // The list refreshes by itself (POLL_SECONDS=2): k still walks the fresh list after a refresh.
  await page.waitForTimeout(2500);
  await page.keyboard.press("k");
  expect(await page.locator("[data-testid='stuck'] tbody tr.kb-selected").count()).toBe(1);
  await shot(page, "defects-02-stuck-j");
  await page.close();
});

it("is no wider than the screen at 1,280 and 390 px, /alerts with rows included", async () => {
  const pages = [
    "/alerts",
    "/incidents",
    "/stuck",
    incidentPath,
    "/deploys",
    "/events",
    "/events?type=chat.turn.started,session.status_running",
    "/runs",
    "/sessions",
    "/audit",
    "/agents",
    `/agents/DemoSessionAgent/${POISON}`,
    `/search?q=${POISON}`,
  ];
  const over: Record<string, number> = {};
  for (const width of [1280, 390]) {
    const page: Page = await browser.newPage({ viewport: { width, height: 900 } });
    for (const p of pages) {
      await page.goto(`${server.base}${p}`, { waitUntil: "load" });
      if (p === "/alerts") {
        expect(await page.locator("[data-testid='alerts'] tbody tr").count()).toBeGreaterThanOrEqual(1);
        await shot(page, `defects-03-alerts-${width}`);
      }
      over[`${p} at ${width}`] = await page.evaluate(() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth);
    }
    await page.close();
  }
  console.log(`sideways overflow (px): ${JSON.stringify(over)}`);
  expect(Object.entries(over).filter(([, px]) => px > 0)).toEqual([]);
});

it("answers bare /events and its Clear with a page that asks for a type, with no axe violation at either width", async () => {
  for (const width of [1280, 390]) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const res = await page.goto(`${server.base}/events`, { waitUntil: "load" });
    expect(res?.status()).toBe(200);
    await page.locator("[data-testid='events-choose-type']").waitFor();
    expect(readable(await axe(page))).toBe("");
    await shot(page, `defects-04-events-${width}`);
    // Clear stays on a page that answers; picking a type lists its events. On a phone the filters are folded: a
    // person opens them first.
    if (!(await page.getByTestId("filters-clear").isVisible())) await page.getByTestId("filters-fold").locator("summary").click();
    await page.getByTestId("filters-clear").click();
    await page.waitForURL(/\/events\?view=none$/);
    await page.locator("[data-testid='events-choose-type']").getByRole("link", { name: "session.status_running", exact: true }).click();
    await page.waitForURL(/type=session\.status_running/);
    expect(await page.locator("[data-testid='events'] li[data-type='session.status_running']").count()).toBeGreaterThan(0);
    await page.close();
  }
});

it("draws no Permissions-Policy complaint from Chromium", async () => {
  const page = await browser.newPage();
  const warnings: string[] = [];
  page.on("console", (m) => {
    if (/permissions-policy/i.test(m.text())) warnings.push(m.text());
  });
  await page.goto(`${server.base}/`, { waitUntil: "load" });
  await page.waitForTimeout(500);
  expect(warnings).toEqual([]);
  await page.close();
});
