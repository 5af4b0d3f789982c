import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

// Recovery budget in a real browser on the dev stack: the demo chat agent is evicted mid-stream, and its recovery
// turn evicted again. Each recovery makes a little progress, so the SDK's attempt counter stays at 1, but two of its
// isolates died: the interruption budget (which progress never resets) is what will exhaust it, and the panel
// forecasts that from the agent's own record (admin RPC). Overview → open incidents → the incident: 2 clicks.

const PORT = 8941;
const AGENT = "budget-chat-1";
let server: DevServer;
let browser: Browser;
let dir: string;

const chat = (step: string, extra: Record<string, string> = {}) => appPost(server, `/dev/chats/${AGENT}`, { step, ...extra });
/** The agent's recovery attempts as the console lists them (its events list, JSON: D1 keeps no event bodies). */
const attemptEvents = async () => {
  const r = await fetch(`${server.base}/events?type=chat.recovery.attempt`, { headers: { Accept: "application/json" } });
  if (!r.ok) return 0;
  return ((await r.json()) as { items: { agentName: string }[] }).items.filter((e) => e.agentName === AGENT).length;
};
const incident = () => d1(dir, `SELECT incident_id, attempts, max_attempts, status FROM incidents WHERE agent_name = '${AGENT}' AND kind = 'chat'`)[0];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "budget-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  expect((await chat("start", { policy: JSON.stringify({ maxAttempts: 3, noProgressTimeoutMs: 600_000, stableTimeoutMs: 1000 }) })).status).toBe(200);
  await chat("wake");
  await until("the SDK to open the chat incident", () => incident()?.status === "open", 30_000);
  // A few seconds of the recovery turn, then its isolate dies too.
  await new Promise((r) => setTimeout(r, 3_000));
  await chat("evict");
  await chat("wake");
  await until("the second recovery attempt to reach the console", async () => (await attemptEvents()) >= 2, 30_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("goes from the overview to the incident's recovery budget panel in 2 clicks; its figures are the agent's own", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;
  const id = String(incident()!.incident_id);
  await page.goto(`${server.base}/`);
  await shot(page, "budget-01-overview");
  await click(page.locator("[data-testid='count-Open incidents']"));
  await page.waitForURL(/\/incidents\?/);
  await click(page.locator(`a[href^='/incidents/${encodeURIComponent(id)}?']`).first());
  const panel = page.locator("[data-testid='recovery-budget']");
  await panel.waitFor();
  await shot(page, "budget-02-panel");
  expect(clicks.count).toBeLessThanOrEqual(3);
  expect(clicks.count).toBe(2);

  // Attempts against the SDK's maximum, the work budget against maxRecoveryWork, interrupted attempts against theirs,
  // both timers, and the forecast: all from the agent's record (the demo policy: 3 attempts, 1000 work, 5 interrupted).
  expect(await panel.getAttribute("data-source")).toBe("agent");
  const fig = (t: string, a: string) => page.locator(`[data-testid='${t}']`).getAttribute(a);
  expect(await fig("budget-attempts", "data-limit")).toBe("3");
  expect(await fig("budget-work", "data-limit")).toBe("1000");
  expect(await fig("budget-interrupted", "data-limit")).toBe("5");
  expect(Number(await fig("budget-interrupted", "data-used"))).toBeGreaterThanOrEqual(2);
  expect(Number(await fig("budget-no-progress-timer", "data-left-ms"))).toBeGreaterThan(0);
  expect(await fig("budget-forecast", "data-basis")).toBe("attempt_rate");
  expect(Number(await fig("budget-forecast", "data-at"))).toBeGreaterThan(Date.now() - 60_000);
  await page.close();
});
