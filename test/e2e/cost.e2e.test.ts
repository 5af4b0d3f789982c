import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until, wakeSession } from "./wrangler-dev";

// Recovery cost in a real browser: a demo session evicted mid-stream resumes its model request in the recovery
// attempt; the tokens that request re-spent show on the overview, in the usage events it adds up and on the incident.

let server: DevServer;
let browser: Browser;
let dir: string;
const INCIDENT = "turn:DemoSessionAgent/cost-7/1";

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "cost-e2e-"));
  server = await startDev({ port: 8861, persistDir: dir });
  browser = await launch();
  const script = { chunks: ["Reconciling ", "the ledger ", "for March: ", "all entries match."], chunkDelayMs: 50 };
  const r = await appPost(server, "/dev/sessions/cost-7/messages", {
    text: "reconcile March",
    script: JSON.stringify(script),
    evictAt: "mid_stream",
    evictTimes: "1",
  });
  expect([200, 500, 502, 503]).toContain(r.status); // the planned eviction may cut this very call short
  await until(
    "the evicted turn to be recovered with its re-spent tokens",
    async () => {
      await wakeSession(server, "cost-7");
      const row = d1(dir, `SELECT status, respent_input_tokens + respent_output_tokens AS t FROM incidents WHERE incident_id = '${INCIDENT}'`)[0];
      return row?.status === "recovered" && Number(row.t) > 0;
    },
    90_000,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("from the overview's re-spent tokens to the incident that spent them, in two clicks", async () => {
  const [{ t: stored }] = d1(dir, `SELECT respent_input_tokens + respent_output_tokens AS t FROM incidents WHERE incident_id = '${INCIDENT}'`) as [
    { t: number },
  ];
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`${server.base}/`);
  const card = page.locator("[data-testid='count-Tokens re-spent by recovery (24 h)']");
  await expect.poll(async () => Number(await card.locator(".n").textContent())).toBe(Number(stored));
  await shot(page, "cost-01-overview");

  let clicks = 0;
  await card.click();
  clicks++;
  // The card sums the model.usage events that carried an incident id: its link lists exactly those events.
  await page.waitForURL(/\/events\?type=model\.usage&withIncident=true&since=\d+$/);
  const usage = page.locator("[data-testid='events'] li[data-type='model.usage']", { hasText: INCIDENT });
  await expect.poll(() => usage.count()).toBeGreaterThanOrEqual(1);
  expect(await usage.first().locator("[data-testid='event-tokens']").textContent()).toMatch(/input \+ .* output tokens/);
  await usage.first().locator("a[href^='/incidents/']").click();
  clicks++;
  await page.waitForURL(/\/incidents\/turn/);
  const respent = await page.locator("[data-testid='incident-respent']").textContent();
  expect(respent).toContain(`${Number(stored).toLocaleString("en-US")} tokens`);
  const attempts = await page.locator("[data-testid='respent-by-attempt'] tbody tr").allTextContents();
  expect(attempts).toHaveLength(1);
  expect(attempts[0]).toMatch(/^1/); // the first recovery attempt
  await shot(page, "cost-02-incident");
  expect(clicks).toBe(2);
  console.log(`[cost e2e] re-spent tokens on ${INCIDENT}: ${stored} (${respent?.trim()}); overview → incident in ${clicks} clicks`);
  await page.close();
});
