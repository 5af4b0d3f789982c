import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { type DevServer, startDev, stop, until } from "./wrangler-dev";

// "Why is this agent awake", in a real browser against the real dev stack: a foreign agent (AlarmLoopAgent, in
// test/fixtures/awake-fleet) re-schedules itself every second with nothing to do. From the overview, the on-call
// person opens Awake, sees it flagged as an alarm loop at its rate, and opens the agent's awake panel, which says
// what the agent itself reports keeps it resident. Every click is counted.

const PORT = 8931;
const APP = "test/fixtures/awake-fleet/wrangler.jsonc";
const NAME = "loop-e2e";
let server: DevServer;
let browser: Browser;

beforeAll(async () => {
  server = await startDev({ port: PORT, app: APP });
  browser = await launch();
  const r = await fetch(`${server.appBase}/loop?name=${NAME}&seconds=1`, { method: "POST", signal: AbortSignal.timeout(30_000) });
  expect(r.status).toBe(200);
  await until("the loop to be flagged by the console", async () => {
    const a = await fetch(`${server.base}/awake?resident=idle`, { headers: { Accept: "application/json" } });
    const body = (await a.json()) as { items: { agentName: string; loop: boolean }[] };
    return body.items.some((x) => x.agentName === NAME && x.loop);
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("goes from the overview to the looping agent's awake panel in 2 clicks, flagged with its rate", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;
  await page.goto(`${server.base}/`);

  // Click 1: Awake in the navigation; the loop is listed, flagged, at about 3600 alarms/hour (every second).
  await click(page.getByRole("navigation").getByRole("link", { name: "Awake", exact: true }));
  await page.waitForURL(`${server.base}/awake`);
  const row = page.locator(`[data-testid='awake-list'] tr[data-agent='AlarmLoopAgent/${NAME}']`);
  await row.waitFor();
  expect(await row.getAttribute("data-loop")).toBe("true");
  const perHour = Number(await row.getAttribute("data-per-hour"));
  expect(perHour).toBeGreaterThan(3600 * 0.75);
  expect(perHour).toBeLessThan(3600 * 1.25);
  await shot(page, "awake-01-list");

  // Click 2: the agent, at its awake panel: the schedule the agent lists, since when, and the loop flag.
  await click(row.getByRole("link"));
  await page.waitForURL(`${server.base}/agents/AlarmLoopAgent/${NAME}#awake`);
  const panel = page.locator("[data-testid='awake-panel']");
  await panel.waitFor({ timeout: 30_000 });
  await expect.poll(() => panel.locator("tr[data-holder='schedule']").count()).toBe(1);
  expect(await panel.locator("tr[data-holder='schedule'] time").count()).toBeGreaterThanOrEqual(2);
  expect(await panel.locator("[data-testid='awake-alarm-rate']").getAttribute("data-loop")).toBe("true");
  expect(Number(await panel.locator("[data-testid='awake-resident']").getAttribute("data-high-ms"))).toBeGreaterThan(0);
  await shot(page, "awake-02-panel");
  expect(clicks.count).toBeLessThanOrEqual(3);
  expect(clicks.count).toBe(2);
});
