import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startAlertReceiver } from "../alert-receiver";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, devSession, startDev, stop, until, wakeSession } from "./wrangler-dev";

// Issue 18, items 5 and 8, in a real browser on the real dev stack (port 8971). A demo session evicted mid-stream
// resumes its model request in the recovery attempt, and the agent reports what that request used (model.usage with
// the incident's id). Then:
// - columns: the runs list shows the columns picked in its chooser, a view saved from there reproduces them from the
//   nav, the phone cards are labelled from the same declaration, and Clear shows the list plain (no restored view);
// - the spend alert: the re-spent tokens are over SPEND_ALERT_AGENT_TOKENS_PER_HOUR, so a reconciliation pass raises
//   a "respent" alert; it reaches the real webhook receiver with the figure the agent reported, and /alerts shows it.

/** The page's own document, inside page.evaluate (this file is not compiled with the DOM's types). */
declare const document: { documentElement: { scrollWidth: number } };

const PORT = 8971;
const AGENT = "spend-71";
const INCIDENT = `turn:DemoSessionAgent/${AGENT}/1`;
/** The lowest threshold the setting takes: any re-spent token is over it, whatever the scripted model reports. */
const THRESHOLD = 1;

let server: DevServer;
let browser: Browser;
let receiver: { port: number; server: Server };
let dir: string;

type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string) =>
  (await (await fetch(`http://127.0.0.1:${receiver.port}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];

beforeAll(async () => {
  receiver = await startAlertReceiver();
  dir = mkdtempSync(path.join(tmpdir(), "views-columns-e2e-"));
  server = await startDev({
    port: PORT,
    persistDir: dir,
    vars: {
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook/webhook`,
      ALERT_CONSOLE_URL: `http://127.0.0.1:${PORT}`,
      SPEND_ALERT_AGENT_TOKENS_PER_HOUR: String(THRESHOLD),
    },
  });
  browser = await launch();
  const script = { chunks: ["Reconciling ", "the ledger ", "for March: ", "all entries match."], chunkDelayMs: 50 };
  const r = await appPost(server, `/dev/sessions/${AGENT}/messages`, {
    text: "reconcile March",
    script: JSON.stringify(script),
    evictAt: "mid_stream",
    evictTimes: "1",
  });
  expect([200, 500, 502, 503]).toContain(r.status); // the planned eviction may cut this very call short
  await until(
    "the evicted turn to be recovered with its re-spent tokens",
    async () => {
      await wakeSession(server, AGENT);
      const row = d1(dir, `SELECT status, respent_input_tokens + respent_output_tokens AS t FROM incidents WHERE incident_id = '${INCIDENT}'`)[0];
      return row?.status === "recovered" && Number(row.t) > 0;
    },
    90_000,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
  receiver?.server.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.server.close(() => r()) : r()));
});

const headsOf = (page: Page) => page.locator("[data-testid='fibers'] thead th").evaluateAll((ths) => ths.map((th) => th.getAttribute("data-col")));

it("picks the runs list's columns, saves them as a view that reproduces them from the nav, and Clear shows the list plain", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;

  // overview → Runs (1) → columns (2) → name (3), status (4) → Apply (5) → Save view (6).
  await page.goto(`${server.base}/`);
  await click(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }));
  await page.waitForURL(`${server.base}/runs`);
  expect(await headsOf(page)).toEqual(["run", "kind", "agent", "name", "started", "duration", "status", "step", "attempt", "snapshot"]);
  await click(page.locator("[data-testid='column-chooser'] summary"));
  await click(page.locator("[data-testid='column-chooser'] input[value='name']"));
  await click(page.locator("[data-testid='column-chooser'] input[value='status']"));
  await click(page.locator("form.filters").getByRole("button", { name: "Apply" }));
  await page.waitForURL(/cols=name&cols=status/);
  expect(await headsOf(page)).toEqual(["run", "name", "status"]);
  expect(await page.locator("[data-testid='fibers']").getAttribute("data-cols")).toBe("name,status");
  await page.locator("[data-testid='view-save'] input[name='name']").fill("Runs by status");
  await click(page.getByRole("button", { name: "Save view" }));
  await page.waitForURL(/[?&]view=/);
  const saveClicks = clicks.count;
  const viewId = await page.locator("[data-testid='view-marker']").getAttribute("data-view-id");
  expect(d1(dir, `SELECT query FROM saved_views WHERE view_id = '${viewId}'`)).toEqual([{ query: "cols=name&cols=status" }]);
  expect(await headsOf(page)).toEqual(["run", "name", "status"]);
  await shot(page, "views-columns-01-saved");

  // Its download keeps the same columns: the run's own fields, then name's and status's.
  const csvHref = await page.locator("[data-testid='export-csv']").getAttribute("href");
  const csv = await (await fetch(`${server.base}${csvHref}`)).text();
  expect(csv.split("\r\n")[0]).toBe("fiberId,agentClass,agentName,name,outcome,phase,confirmed,reason,error");

  // From the nav: Views (1) → the view (2) reproduces the columns.
  clicks.reset();
  await page.goto(`${server.base}/`);
  await click(page.locator("[data-testid='views-menu'] summary"));
  await click(page.locator(`[data-testid='view-link'][data-view-id='${viewId}']`));
  await page.waitForURL(/\/runs\?.*view=/);
  const openClicks = clicks.count;
  expect(await headsOf(page)).toEqual(["run", "name", "status"]);

  // The filter form's Clear: the plain list (every column, no marker), not the view again.
  await page.locator("[data-testid='filters-clear']").click();
  await page.waitForURL(`${server.base}/runs?view=none`);
  expect(await page.locator("[data-testid='view-marker']").count()).toBe(0);
  expect((await headsOf(page)).length).toBe(10);
  // The nav's bare link still restores the last view; its marker's clear shows the list plain too.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" }).click();
  await page.waitForURL(/\/runs\?.*view=[0-9a-f-]{36}/);
  expect(await headsOf(page)).toEqual(["run", "name", "status"]);
  await page.locator("[data-testid='view-clear']").click();
  await page.waitForURL(`${server.base}/runs?view=none`);
  expect(await page.locator("[data-testid='view-marker']").count()).toBe(0);
  await page.close();

  // On a phone the same columns are cards, each cell labelled with its column's header, and nothing scrolls sideways.
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await phone.goto(`${server.base}/runs?cols=name,status`);
  const labels = await phone
    .locator("[data-testid='fibers'] tbody tr")
    .first()
    .locator("td")
    .evaluateAll((tds) => tds.map((td) => [td.getAttribute("data-col"), td.getAttribute("data-label")]));
  expect(labels).toEqual([
    ["run", "run"],
    ["name", "name"],
    ["status", "status"],
  ]);
  expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await shot(phone, "views-columns-02-phone");
  await phone.close();
  console.log(`[views-columns e2e] pick 2 columns and save the view: ${saveClicks} clicks from the overview; open it: ${openClicks} clicks`);
}, 120_000);

it("raises the spend alert on the tokens the agent reported re-spending: it reaches the webhook and shows on /alerts", async () => {
  // What the agent reported: its model.usage events on recovery (those with the incident's id), as stored.
  const usage = (await (
    await fetch(`${server.base}/events?type=model.usage&agentClass=DemoSessionAgent&agentName=${AGENT}&withIncident=true&limit=200`, {
      headers: { Accept: "application/json" },
    })
  ).json()) as { items: { incidentId: string | null; payload: { inputTokens: number; outputTokens: number } }[] };
  const reported = usage.items.filter((e) => e.incidentId).reduce((n, e) => n + e.payload.inputTokens + e.payload.outputTokens, 0);
  expect(reported).toBeGreaterThan(THRESHOLD);

  // A reconciliation pass checks the budget alerts, as the cron does.
  const pass = await (await devSession(server.base)).post("/api/reconcile", {});
  expect(pass.status).toBe(200);
  const got = await until(
    "the webhook to receive the spend alert",
    async () => (await received(AGENT)).find((r) => r.channel === "webhook" && r.body.kind === "respent"),
    60_000,
  );
  expect(got.body).toMatchObject({
    kind: "respent",
    agent: { class: "DemoSessionAgent", name: AGENT },
    details: { scope: "agent", tokens: reported, threshold: THRESHOLD },
  });
  expect(got.body.url).toBe(`http://127.0.0.1:${PORT}/agents/DemoSessionAgent/${AGENT}`);

  // In the browser: overview → Alerts (1) shows it, with the figure; its subject (2) is the agent that spent it.
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  await page.goto(`${server.base}/`);
  await clicks.click(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Alerts", exact: true }));
  await page.waitForURL(/\/alerts$/);
  const row = page.locator("[data-testid='alerts'] tbody tr", { has: page.locator("td[data-col='kind'][data-kind='respent']") });
  await expect.poll(() => row.count(), { timeout: 30_000 }).toBe(1);
  const seenClicks = clicks.count;
  expect(await row.locator("td[data-col='summary']").textContent()).toContain(
    `re-spent ${reported} tokens on recovery in the last hour (threshold ${THRESHOLD})`,
  );
  await expect.poll(() => row.locator("td[data-col='status']").textContent(), { timeout: 30_000 }).toContain("sent");
  await shot(page, "views-columns-03-spend-alert");
  await clicks.click(row.locator("td[data-col='subject'] a"));
  await page.waitForURL(new RegExp(`/agents/DemoSessionAgent/${AGENT}$`));
  expect(clicks.count).toBeLessThanOrEqual(3);
  await page.close();
  // One alert per agent and clock hour, however often the check runs.
  await (await devSession(server.base)).post("/api/reconcile", {});
  await new Promise((r) => setTimeout(r, 2000));
  expect((await received(AGENT)).filter((r) => r.body.kind === "respent")).toHaveLength(1);
  console.log(
    `[views-columns e2e] spend alert: ${reported} tokens re-spent (threshold ${THRESHOLD}); overview → alert ${seenClicks} click, → agent ${clicks.count}`,
  );
}, 120_000);
