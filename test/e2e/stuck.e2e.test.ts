import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

// Stuck → act, in a real browser against the real dev stack (console + demo fleet): a session turn stalls,
// stuck detection flags its run ("running, no progress"; STUCK_NO_PROGRESS_MINUTES is 0.1 here, 6 s), and the
// operator goes from the overview's Stuck card to the entry, to the agent's actions, force-idles it with a reason,
// and the entry is gone. Every click is counted.
//
// Under `wrangler dev` the stalled agent is evicted while idle and the SDK recovers its turn as a new run every
// ~20-30 s, so the stuck run is whichever run of that session is current: entries are matched by agent, not by
// one run id, and the list refreshes by itself (POLL_SECONDS=2) as runs come and go.

const PORT = 8831;
const SESSION = "stuck-77";
let server: DevServer;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "stuck-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir, vars: { STUCK_NO_PROGRESS_MINUTES: "0.1" } });
  browser = await launch();
  // A turn that streams one chunk, then stalls until someone acts.
  const r = await appPost(server, `/dev/sessions/${SESSION}/messages`, {
    text: "migrate my data",
    script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
  });
  expect(await r.json()).toEqual({ ok: true, value: { turnSeq: 1 } });
  await until(
    "the stalled turn's run to reach the console",
    () => d1(dir, `SELECT fiber_id FROM runs WHERE agent_name = '${SESSION}' AND outcome IS NULL`).length === 1,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("goes from the overview's Stuck card to the stuck run, force-idles its agent with a reason, and the entry is gone", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;
  const entry = (p: Page) => p.locator("[data-testid='stuck'] tr[data-rule='no_progress']", { hasText: `DemoSessionAgent · ${SESSION}` });

  // The overview's card turns red once the run has been silent for 6 s (the overview refreshes every 2 s).
  await page.goto(`${server.base}/`);
  const card = page.locator("[data-testid='count-Stuck']");
  await expect.poll(async () => Number(await card.locator(".n").textContent()), { timeout: 60_000 }).toBeGreaterThanOrEqual(1);
  expect(await card.getAttribute("class")).toContain("alert");
  await shot(page, "stuck-01-overview-card");

  // Click 1: the card opens the list; the entry says which rule fired, since when, for how long and why.
  await click(card);
  await page.waitForURL(`${server.base}/stuck`);
  await entry(page).first().waitFor({ timeout: 60_000 });
  const text = (await entry(page).first().textContent()) ?? "";
  expect(await entry(page).first().getAttribute("data-rule")).toBe("no_progress");
  expect(text).toContain(`DemoSessionAgent · ${SESSION}`);
  expect(text).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZfor \d+[sm]/);
  expect(text).toMatch(/has had no progress event since \S+Z \(\d+[sm]( \d+m)?, threshold 6s\)/);
  expect(await page.locator("[data-testid='threshold-no_progress']").textContent()).toBe("0.1");
  await shot(page, "stuck-02-list");

  // Click 2: the agent's actions, one click away.
  await click(entry(page).first().getByRole("link", { name: "Agent actions" }));
  await page.waitForURL(`${server.base}/agents/DemoSessionAgent/${SESSION}#admin-actions`);

  // Clicks 3 and 4: open force idle, type the reason, confirm.
  await click(page.getByRole("button", { name: "Force idle…" }));
  await page.locator("form[hx-post='/actions/force-idle'] textarea[name='reason']").fill("stuck: no progress on table 1 of 500");
  await click(page.getByRole("button", { name: "Confirm force idle" }));
  const result = page.locator("[data-testid='action-result']");
  await result.waitFor();
  // Done: the after-state the console read back is ok (the sentence is worded and tested in the console).
  expect(await result.getAttribute("class")).toContain("ok");
  expect(await result.locator("[data-testid='after-state']").getAttribute("data-result")).toBe("ok");
  await shot(page, "stuck-03-force-idled");

  // Overview → stuck entry → agent actions → force idle → confirm: 4 clicks (plus typing the reason).
  expect(clicks.count).toBe(4);

  // The turn's run is closed (force_idled), nothing of the session runs any more, and nothing of it is stuck.
  await until(
    "the run to be force-idled in the projections",
    () => d1(dir, `SELECT 1 FROM runs WHERE agent_name = '${SESSION}' AND outcome = 'force_idled'`).length === 1,
  );
  expect(d1(dir, `SELECT fiber_id FROM runs WHERE agent_name = '${SESSION}' AND outcome IS NULL`)).toEqual([]);
  await page.goto(`${server.base}/stuck`);
  expect(await entry(page).count()).toBe(0);
  const json = (await (await fetch(`${server.base}/stuck`, { headers: { Accept: "application/json" } })).json()) as {
    entries: { rule: string; agentName: string }[];
  };
  expect(json.entries.filter((e) => e.agentName === SESSION && e.rule === "no_progress")).toEqual([]);
  // Nor does it come back: a while later (several recovery cycles' worth) the session is still idle and not stuck.
  await new Promise((r) => setTimeout(r, 30_000));
  expect(d1(dir, `SELECT fiber_id FROM runs WHERE agent_name = '${SESSION}' AND outcome IS NULL`)).toEqual([]);
  await page.reload();
  expect(await entry(page).count()).toBe(0);
  await shot(page, "stuck-04-gone");
  await page.close();
});
