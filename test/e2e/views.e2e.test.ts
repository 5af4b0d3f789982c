import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until, wakeSession } from "./wrangler-dev";

// Saved views in a real browser against the real dev stack: two sessions' turns are evicted once each (two recovery
// incidents); from the overview the operator filters the incidents to one agent and saves that as a view, the nav
// shows it, and opening it from the nav reproduces the filter. Opening the bare list later restores it, marked.
// Every click is counted.

const PORT = 8911;
const AGENTS = ["views-a", "views-b"] as const;
let server: DevServer;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "views-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  for (const name of AGENTS) {
    // Evicted once at its start: the SDK recovers the turn on wake, which opens (and closes) an incident.
    const r = await appPost(server, `/dev/sessions/${name}/messages`, {
      text: "summarise the ledger",
      script: JSON.stringify({ chunks: ["Summarising"] }),
      evictAt: "turn_start",
      evictTimes: "1",
    });
    expect([200, 500, 502, 503]).toContain(r.status); // the planned eviction may cut this very call short
  }
  for (const name of AGENTS)
    await until(
      `${name}'s recovery incident to reach the console`,
      async () => {
        await wakeSession(server, name);
        return d1(dir, `SELECT incident_id FROM incidents WHERE agent_name = '${name}' LIMIT 1`)[0]?.incident_id as string | undefined;
      },
      90_000,
    );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

/** The agents of the incidents the page's table lists, once each, sorted (each evicted turn opens a fiber and a turn incident). */
const listed = async (page: Page) => [...new Set(await page.locator("[data-testid='incidents'] tbody tr td:nth-child(3) a").allTextContents())].sort();
const agentsOf = (...names: string[]) => names.map((n) => `DemoSessionAgent · ${n}`);

it("saves a filtered incidents view, shows it in the nav, and opening it reproduces the filter", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;

  // Save: overview → Incidents (1) → filter by agent name, Apply (2) → name it, Save view (3).
  await page.goto(`${server.base}/`);
  await click(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Incidents" }));
  await page.waitForURL(`${server.base}/incidents`);
  expect(await listed(page)).toEqual(agentsOf(...AGENTS));
  await page.locator("form.filters input[name='agentName']").fill("views-a");
  await click(page.locator("form.filters").getByRole("button", { name: "Apply" }));
  await page.waitForURL(/agentName=views-a/);
  await page.locator("[data-testid='view-save'] input[name='name']").fill("Views A incidents");
  await click(page.getByRole("button", { name: "Save view" }));
  await page.waitForURL(/[?&]view=/);
  expect(clicks.count).toBeLessThanOrEqual(3);
  const savedClicks = clicks.count;
  const marker = page.locator("[data-testid='view-marker']");
  expect(await marker.textContent()).toContain("Views A incidents");
  expect(await listed(page)).toEqual(agentsOf("views-a"));
  const viewId = await marker.getAttribute("data-view-id");
  expect(d1(dir, `SELECT name, list, query, shelf, owner FROM saved_views WHERE view_id = '${viewId}'`)).toEqual([
    { name: "Views A incidents", list: "incidents", query: expect.stringContaining("agentName=views-a"), shelf: "e2e@example.com", owner: "e2e@example.com" },
  ]);
  await shot(page, "views-01-saved");

  // Open: overview → the nav's Views menu (1) → the view (2). Its filter is back: only views-a's incident.
  clicks.reset();
  await page.goto(`${server.base}/`);
  await click(page.locator("[data-testid='views-menu'] summary"));
  const link = page.locator(`[data-testid='view-link'][data-view-id='${viewId}']`);
  expect(await link.textContent()).toBe("Views A incidents");
  await shot(page, "views-02-nav");
  await click(link);
  await page.waitForURL(/\/incidents\?.*agentName=views-a.*view=/);
  expect(clicks.count).toBeLessThanOrEqual(3);
  const openClicks = clicks.count;
  expect(await page.locator("input[name='agentName']").inputValue()).toBe("views-a");
  expect(await listed(page)).toEqual(agentsOf("views-a"));
  expect(await page.locator("[data-testid='view-marker']").getAttribute("data-view-id")).toBe(viewId);

  // The console remembers it: the bare list from the nav opens the last view, marked; clear forgets it.
  await page.goto(`${server.base}/`);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Incidents" }).click();
  await page.waitForURL(/\/incidents\?.*view=/);
  expect(await page.locator("[data-testid='view-marker']").getAttribute("data-view-id")).toBe(viewId);
  await page.locator("[data-testid='view-clear']").click();
  await page.waitForURL(`${server.base}/incidents?view=none`);
  expect(await page.locator("[data-testid='view-marker']").count()).toBe(0);
  expect(await listed(page)).toEqual(agentsOf(...AGENTS));
  await shot(page, "views-03-cleared");
  console.log(`saved views: save ${savedClicks} clicks from the overview, open ${openClicks} clicks from the overview`);
}, 120_000);
