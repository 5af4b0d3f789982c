import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1 as d1Once, startDev, stop, until } from "./wrangler-dev";

/**
 * Bulk force idle in a real browser against the real dev stack (console + demo fleet in wrangler dev, the
 * bulk Queue and its consumer included), and the same from the CLI: filter → preview → reason → confirm →
 * progress until every target is done.
 */

const PORT = 8851;
const SESSIONS = ["bulk-a", "bulk-b", "bulk-c"];

let server: DevServer;
let browser: Browser;
let dir: string;

/** Local D1 read from the persist dir, retried while the running stack holds the write lock (SQLITE_BUSY). */
async function d1(persistDir: string, sql: string): Promise<Record<string, unknown>[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return d1Once(persistDir, sql);
    } catch (e) {
      if (attempt >= 10 || !/SQLITE_BUSY|database is locked/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Runs `npm run cli -- …` (scripts/cli.mjs under this Node) against the stack; resolves with its exit code and output. */
function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["scripts/cli.mjs", ...args, "--url", server.base], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => (out += String(d)));
    p.stderr.on("data", (d) => (out += String(d)));
    p.on("close", (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "bulk-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  // Three sessions, each with a turn that streams a little and then stalls until someone acts.
  for (const name of SESSIONS) {
    const res = await appPost(server, `/dev/sessions/${name}/messages`, {
      text: "migrate my data",
      script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
    });
    expect(await res.json()).toEqual({ ok: true, value: { turnSeq: 1 } });
  }
  await until(
    "the three running sessions to reach the console",
    async () => (await d1(dir, "SELECT COUNT(*) AS n FROM sessions WHERE status = 'running'"))[0]?.n === SESSIONS.length,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("the CLI previews with --dry-run without acting, then triggers every matching agent's alarm and follows the batch to the end", async () => {
  const dry = await cli(["bulk", "force-idle", "--status", "running_sessions", "--class", "DemoSessionAgent", "--dry-run"]);
  expect(dry.code).toBe(0);
  expect(dry.out).toContain("3 agent(s) match class DemoSessionAgent, status running_sessions:");
  for (const name of SESSIONS) expect(dry.out).toContain(`DemoSessionAgent\t${name}\tclass DemoSessionAgent; 1 running session(s)`);
  expect(dry.out).toContain("(dry run: nothing was done)");
  expect((await d1(dir, "SELECT COUNT(*) AS n FROM audit_log"))[0]?.n).toBe(0);

  const noReason = await cli(["bulk", "trigger-alarm", "--status", "running_sessions"]);
  expect(noReason.code).toBe(2);
  expect(noReason.out).toContain("a reason is required");

  const run = await cli([
    "bulk",
    "trigger-alarm",
    "--status",
    "running_sessions",
    "--class",
    "DemoSessionAgent",
    "--reason",
    "nudge recovery after the deploy",
  ]);
  expect(run.out).toMatch(/batch [0-9a-f-]{36} started on 3 agent\(s\)/);
  expect(run.out).toContain("✓ finished: 3 of 3 done");
  expect(run.code).toBe(0);
  const batchId = /batch ([0-9a-f-]{36}) started/.exec(run.out)![1]!;
  const rows = await d1(dir, `SELECT action, result FROM audit_log WHERE batch_id = '${batchId}' ORDER BY action`);
  expect(rows).toEqual([{ action: "bulk_trigger_alarm", result: "ok" }, ...SESSIONS.map(() => ({ action: "trigger_alarm", result: "ok" }))]);
}, 120_000);

it("bulk force idle in the browser: filter, preview of 3, reason, confirm, progress to 3 done, in 2 clicks", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  let clicks = 0;
  await page.goto(`${server.base}/bulk`);
  await expect(page.locator("main").textContent()).resolves.toContain("Choose at least one filter");

  // The filter: a status (a select, not a click) and Preview (click 1).
  await page.locator("[data-testid='bulk-filter'] select[name='status']").selectOption("running_sessions");
  await page.getByRole("button", { name: "Preview" }).click();
  clicks++;
  await page.waitForURL(/\/bulk\?.*status=running_sessions/);
  await expect(page.locator("[data-testid='bulk-count']").textContent()).resolves.toBe("3");
  expect(await page.locator("[data-testid='bulk-targets'] tbody tr").count()).toBe(3);
  await shot(page, "bulk-01-preview");
  // The preview acted on nothing.
  expect((await d1(dir, "SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE '%force_idle'"))[0]?.n).toBe(0);

  // Force idle is the default action; the reason is typed; Confirm (click 2).
  await page.locator("[data-testid='bulk-confirm'] textarea[name='reason']").fill("stalled turns after the model outage; stop them all");
  await page.getByRole("button", { name: "Confirm on 3 agents" }).click();
  clicks++;
  await page.waitForURL(/\/bulk\/batches\/[0-9a-f-]{36}$/);
  await shot(page, "bulk-02-progress");
  // Live progress (polled every 2 s) reaches 3 done.
  await expect.poll(() => page.locator("[data-testid='batch-progress']").getAttribute("data-complete"), { timeout: 60_000 }).toBe("true");
  await expect(page.locator("[data-testid='batch-done']").textContent()).resolves.toBe("3");
  await expect(page.locator("[data-testid='batch-failed']").textContent()).resolves.toBe("0");
  expect(await page.locator("[data-testid='batch-targets'] tbody tr[data-result='ok']").count()).toBe(3);
  await shot(page, "bulk-03-done");
  expect(clicks).toBe(2);

  // Audited: the batch row and one per target share the batch id; the sessions go idle.
  const batchId = page.url().split("/").pop()!;
  const rows = await d1(
    dir,
    `SELECT action, target_class, target_name, result, reason FROM audit_log WHERE batch_id = '${batchId}' ORDER BY action, target_name`,
  );
  expect(rows).toEqual([
    {
      action: "bulk_force_idle",
      target_class: "batch",
      target_name: "status=running_sessions",
      result: "ok",
      reason: "stalled turns after the model outage; stop them all",
    },
    ...SESSIONS.map((n) => ({
      action: "force_idle",
      target_class: "DemoSessionAgent",
      target_name: n,
      result: "ok",
      reason: "stalled turns after the model outage; stop them all",
    })),
  ]);
  await until(
    "the sessions to be reported idle",
    async () => (await d1(dir, "SELECT COUNT(*) AS n FROM sessions WHERE status = 'idle'"))[0]?.n === SESSIONS.length,
  );
  await page.close();
}, 150_000);
