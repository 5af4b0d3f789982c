import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

// The exhaust forecast in a real browser on the dev stack: the demo fleet's slow recovery (a model that keeps
// stalling, cut every 6 s, 4 attempts) is listed on the overview's "likely to exhaust" card, which polls every 2 s
// here, before the SDK exhausts it; then its incident page scores that forecast against the exhaustion.

const PORT = 8991;
const AGENT = "forecast-chat-1";
let server: DevServer;
let browser: Browser;
let dir: string;

const incident = () =>
  d1(dir, `SELECT incident_id, status, status_at FROM incidents WHERE agent_name = '${AGENT}' AND kind = 'chat'`)[0] as
    | { incident_id: string; status: string; status_at: number }
    | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "forecast-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("shows the forecast on the overview before the incident exhausts, then scores it on the incident page", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`${server.base}/`);
  const started = await appPost(server, `/dev/chats/${AGENT}/slow-recovery`, { stallTimeoutMs: "6000", maxAttempts: "4" });
  expect(started.status).toBe(200);

  // The card's own poll brings the row in: no reload.
  const row = page.locator("[data-testid='exhausting-incident']");
  await row.first().waitFor({ timeout: 90_000 });
  const shownAt = Date.now();
  const id = await row.first().getAttribute("data-incident-id");
  const forecastAt = Number(await row.first().getAttribute("data-forecast-at"));
  expect(incident()?.incident_id).toBe(id);
  expect(incident()?.status).toBe("open");
  await shot(page, "forecast-01-card");

  const closed = await until("the SDK to exhaust the incident", () => (incident()?.status === "exhausted" ? incident() : undefined), 120_000);
  expect(Number(closed.status_at)).toBeGreaterThan(shownAt - 2_000);
  // Exhausted: the card drops it on its next poll.
  await until("the card to drop the exhausted incident", async () => (await page.locator(`[data-incident-id='${id}']`).count()) === 0, 30_000);

  await page.goto(`${server.base}/incidents/${encodeURIComponent(id!)}?agentClass=ChatAgent&agentName=${AGENT}`);
  const score = page.locator("[data-testid='forecast-score']");
  await score.waitFor();
  await shot(page, "forecast-02-score");
  expect(await score.getAttribute("data-outcome")).toBe("exhausted");
  expect(Number(await score.getAttribute("data-outcome-at"))).toBe(Number(closed.status_at));
  expect(Number(await score.getAttribute("data-first-made-at"))).toBeLessThan(Number(closed.status_at));
  // What the card said came true within two watchdog intervals.
  expect(Math.abs(forecastAt - Number(closed.status_at))).toBeLessThan(12_000);
  // Attempts 6 s apart: the latest forecast is within one watchdog of the exhaustion.
  expect(Math.abs(Number(await score.getAttribute("data-error-ms")))).toBeLessThan(6_000);
  expect(await page.locator("[data-testid='forecast-outcome']").textContent()).toMatch(/exhausted at .*(than forecast|exactly as forecast)/);
  await page.close();
}, 300_000);
