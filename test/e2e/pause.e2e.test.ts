import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

// Pause recovery, no deploy, in a real browser against the real dev stack (console + demo fleet): an operator goes
// from the overview to a session agent's page, pauses its recovery with a reason and an expiry, sees the pause on
// the page (the agent's own record, live, and the console's, from its events), and resumes it in one action. Clicks
// are counted; the audit log and the console's projection are read back from D1.

const PORT = 8921;
const SESSION = "pause-31";
const AGENT = "DemoSessionAgent";
let server: DevServer;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "pause-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  // A turn that completes: the agent reaches the console (its healthy run leaves D1 for the R2 history).
  const r = await appPost(server, `/dev/sessions/${SESSION}/messages`, { text: "summarise the outage", script: JSON.stringify({ chunks: ["Summary: ok"] }) });
  expect(r.ok).toBe(true);
  await until("the session's agent to reach the console", () => d1(dir, `SELECT 1 FROM agents WHERE agent_name = '${SESSION}'`).length >= 1);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("pauses an agent's recovery from its page with a reason and an expiry, shows it, and resumes it in one action", async () => {
  const page: Page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const clicks = clickCounter();
  const click = clicks.click;

  // Click 1: Agents in the nav. Click 2: the agent. Click 3: open "Pause recovery…".
  await page.goto(`${server.base}/`);
  await click(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }));
  await click(page.getByRole("link", { name: SESSION, exact: true }).first());
  await page.waitForURL(`${server.base}/agents/${AGENT}/${SESSION}`);
  await click(page.getByRole("button", { name: "Pause recovery…" }));
  expect(clicks.count).toBe(3);
  const form = page.locator("form[hx-post='/actions/pause-recovery']");
  await form.locator("textarea[name='reason']").fill("recovery retries run up the LLM bill");
  await form.locator("input[name='hours']").fill("6");
  // Click 4: confirm.
  await click(page.getByRole("button", { name: "Confirm pause recovery" }));
  const result = page.locator("[data-testid='action-result']");
  await result.waitFor();
  // Done (class ok; a refusal is "bad"): what it did is read from the pause's own record and the live panel below.
  expect(await result.getAttribute("class")).toContain("ok");

  // Visible: the console's record (from recovery.paused, refreshed after the action) and the agent's own (live panel).
  const state = page.locator("[data-testid='recovery-pause']");
  await expect.poll(() => state.getAttribute("data-state"), { timeout: 20_000 }).toBe("paused");
  expect(await state.textContent()).toContain("recovery retries run up the LLM bill");
  await expect.poll(() => page.locator("[data-testid='live-recovery-pause']").getAttribute("data-active"), { timeout: 20_000 }).toBe("true");
  await shot(page, "pause-01-paused");
  const [row] = d1(dir, `SELECT pause_state, paused_until - pause_at AS span FROM recovery_pauses WHERE agent_name = '${SESSION}'`) as {
    pause_state: string;
    span: number;
  }[];
  expect(row!.pause_state).toBe("paused");
  // 6 hours, give or take the time between the action and its event.
  expect(Math.abs(row!.span - 6 * 3_600_000)).toBeLessThan(60_000);

  // Resume: one action (open + confirm).
  await click(page.getByRole("button", { name: "Resume recovery…" }));
  await page.locator("form[hx-post='/actions/resume-recovery'] textarea[name='reason']").fill("upstream fixed");
  await click(page.getByRole("button", { name: "Confirm resume recovery" }));
  await expect.poll(async () => (await result.textContent()) ?? "", { timeout: 20_000 }).toContain("Resume recovery done");
  await expect.poll(() => state.getAttribute("data-state"), { timeout: 20_000 }).toBe("resumed");
  await shot(page, "pause-02-resumed");
  expect(clicks.count).toBe(6);

  // Audited like every action.
  expect(d1(dir, `SELECT action, result FROM audit_log WHERE target_name = '${SESSION}' ORDER BY time`)).toEqual([
    { action: "pause_recovery", result: "ok" },
    { action: "resume_recovery", result: "ok" },
  ]);
  await page.close();
});
