import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until, wakeSession } from "./wrangler-dev";

// Deploys in a real browser against the real dev stack (console + demo fleet). The demo fleet binds its version
// metadata (examples/demo-fleet/wrangler.jsonc); under `wrangler dev` its id is a fresh UUID per start (tag "",
// timestamp the start time), so this run is one deploy. A turn evicted once opens an incident under that version;
// the overview marks the deploy on its chart, and three clicks lead to the incidents grouped by version.

const PORT = 8951;
const SESSION = "deploy-31";
let server: DevServer;
let browser: Browser;
let dir: string;
let version: string;

beforeAll(async () => {
  const t0 = Date.now();
  dir = mkdtempSync(path.join(tmpdir(), "deploys-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  console.log(`[deploys e2e] dev stack up after ${Date.now() - t0} ms`);
  browser = await launch();
  // One planned eviction at the turn's start: the SDK recovers the turn on the next wake (an incident).
  const r = await appPost(server, `/dev/sessions/${SESSION}/messages`, {
    text: "summarise the release notes",
    script: JSON.stringify({ chunks: ["Summarising"] }),
    evictAt: "turn_start",
    evictTimes: "1",
  });
  expect([200, 500, 502, 503]).toContain(r.status); // the planned eviction may cut this very call short
  version = await until(
    "the recovered turn's incident to reach the console with its version",
    async () => {
      await wakeSession(server, SESSION);
      return d1(dir, `SELECT version FROM incidents WHERE agent_name = '${SESSION}' AND version IS NOT NULL`)[0]?.version as string | undefined;
    },
    120_000,
  );
  console.log(`[deploys e2e] incident with its version after ${Date.now() - t0} ms`);
}, 200_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("marks the deploy on the overview chart, and reaches the incidents grouped by version in 3 clicks", async () => {
  // What wrangler dev gives the version metadata binding: a UUID, and the demo fleet's events carry it.
  expect(version).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  const deploy = d1(dir, `SELECT version, first_seen FROM deploys WHERE version = '${version}'`)[0]!;
  const incidentIds = d1(dir, `SELECT incident_id FROM incidents WHERE version = '${version}' ORDER BY incident_id`).map((r) => String(r.incident_id));
  expect(incidentIds.length).toBeGreaterThanOrEqual(1);

  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;

  // The chart carries the deploy mark: the version at its first-seen time, as the deploys projection has it.
  await page.goto(`${server.base}/`);
  const marks = JSON.parse((await page.locator("#events-chart").getAttribute("data-deploys")) ?? "[]") as { version: string; at: number }[];
  expect(marks).toContainEqual({ version, at: Number(deploy.first_seen) });
  await shot(page, "deploys-01-overview");

  // Click 1: the deploys page; the version's row counts exactly its incidents.
  await click(page.locator("[data-testid='deploys-link']"));
  await page.waitForURL(`${server.base}/deploys`);
  const row = page.locator(`[data-testid='deploys'] tr[data-version='${version}']`);
  expect(await row.locator("[data-testid='version-incidents']").getAttribute("data-figure")).toBe(String(incidentIds.length));
  await shot(page, "deploys-02-deploys");

  // Click 2: every incident grouped by version; this version's group counts the same incidents.
  await click(page.locator("[data-testid='incidents-by-version']"));
  await page.waitForURL(/\/incidents\?groupBy=version$/);
  const group = page.locator(`[data-testid='incident-groups'] tr[data-group='${version}']`);
  expect(Number(await group.locator("td.num").textContent())).toBe(incidentIds.length);
  await shot(page, "deploys-03-grouped");

  // Click 3: the version's incidents, listed.
  await click(group.getByRole("link", { name: version }));
  await page.waitForURL(new RegExp(`/incidents\\?version=${version}$`));
  const listed = await page.locator("[data-testid='incidents'] tbody tr").count();
  expect(listed).toBe(incidentIds.length);
  for (const id of incidentIds) expect(await page.content()).toContain(id);
  await shot(page, "deploys-04-version-incidents");

  expect(clicks.count).toBeLessThanOrEqual(3);
  await page.close();
});
