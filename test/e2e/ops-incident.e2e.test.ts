import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until as waitUntil, wakeSession } from "./wrangler-dev";

// Acting from where the problem is shown, in a real browser on the real dev stack (console + demo fleet):
// resolve an ambiguous charge from /ops, and force idle a stuck session from its open incident, counting
// the clicks a person makes (trusted click events on the page).

let server: DevServer;
let browser: Browser;
let dir: string;

/** This file's waits are longer than the default: its flows go through several recoveries. */
const until = <T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 90_000) =>
  waitUntil(what, fn, timeoutMs);

/** Wakes an evicted demo session (the SDK recovers its turn on wake). */
const wake = (name: string) => wakeSession(server, name);

/** A page that counts the clicks a person makes on it. */
async function countingPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  // Runs in the page before its own scripts (the test's, not the console's: the CSP does not apply to it).
  await page.addInitScript({
    content: "window.__clicks = 0; document.addEventListener('click', (e) => { if (e.isTrusted) window.__clicks++; }, true);",
  });
  return page;
}
const clicks = (page: Page) => page.evaluate("window.__clicks") as Promise<number>;

let chargeOpId: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "ops-incident-e2e-"));
  server = await startDev({ port: 8821, persistDir: dir });
  browser = await launch();

  // As the demo driver does: a refund whose charge is cut by an eviction after op.started. On recovery the
  // ledger finds the charge started and never completed: ambiguous, never re-run.
  const refund = {
    chunks: ["Issuing the refund. "],
    tool: { name: "charge_card", args: { amountCents: -2599 } },
    final: ["Refund of $25.99 issued."],
    chunkDelayMs: 100,
  };
  await appPost(server, "/dev/sessions/refund-9/messages", {
    text: "refund my order",
    script: JSON.stringify(refund),
    evictAt: "after_op_started",
    evictKind: "tool.charge_card",
    evictTimes: "1",
  }).catch(() => undefined);
  chargeOpId = await until("the charge to be reported ambiguous", async () => {
    await wake("refund-9");
    return d1(dir, "SELECT op_id FROM op_ambiguities WHERE agent_name = 'refund-9' AND op_kind = 'tool.charge_card' AND resolution_at IS NULL")[0]?.op_id as
      | string
      | undefined;
  });

  // A turn evicted mid-stream whose recovery then stalls: the session runs on with its recovery incident open.
  await appPost(server, "/dev/sessions/stuck-3/messages", {
    text: "summarize the quarter",
    script: JSON.stringify({ chunks: ["Summarizing", " the quarter"], stall: true, chunkDelayMs: 50 }),
    evictAt: "mid_stream",
    evictTimes: "1",
  }).catch(() => undefined);
  await until("the stuck session's incident to be open while it runs", async () => {
    await wake("stuck-3");
    const open = d1(dir, "SELECT status FROM incidents WHERE incident_id = 'turn:DemoSessionAgent/stuck-3/1'")[0]?.status === "open";
    const running = d1(dir, "SELECT status FROM sessions WHERE session_name = 'stuck-3'")[0]?.status === "running";
    return open && running;
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

it("resolves an ambiguous charge from /ops: open first, choose 'did not run', give a reason, confirm", async () => {
  const page = await countingPage();
  await page.goto(`${server.base}/ops`);
  const row = page.locator(`[data-testid='ops'] tr[data-op-id='${chargeOpId}']`);
  await row.waitFor();
  expect(await row.textContent()).toContain("tool.charge_card");
  // A charge is not idempotent: re-run is not offered, and the row says why.
  expect(await row.locator("input[value='rerun']").count()).toBe(0);
  expect(await row.locator("[data-testid='rerun-withheld']").getAttribute("data-idempotent")).toBe("false");
  await shot(page, "ops-01-open");

  await row.getByRole("button", { name: `Resolve op ${chargeOpId}` }).click();
  await row.getByLabel("It did not run (I checked upstream)").click();
  await row.locator("textarea[name='reason']").click();
  await page.keyboard.type("payment provider shows no charge with this idempotency key");
  await row.getByRole("button", { name: "Confirm resolution" }).click();
  const result = row.locator("[data-testid='action-result']");
  await result.waitFor();
  // Done (not refused), about this op; what it recorded is checked in the projection and the audit log below.
  expect(await result.getAttribute("class")).toContain("ok");
  expect(await result.textContent()).toContain(chargeOpId);
  const n = await clicks(page);
  console.log(`[clicks] resolve an ambiguous op from /ops: ${n} (open, choose, reason field, confirm)`);
  expect(n).toBe(4);
  await shot(page, "ops-02-resolved");

  // Through the agent's ledger and the normal pipeline: the projection shows it resolved, and it is audited.
  await until(
    "the projection to show the resolution",
    () => d1(dir, `SELECT resolution FROM op_ambiguities WHERE op_id = '${chargeOpId}'`)[0]?.resolution === "verified_not_ran",
    30_000,
  );
  await page.reload();
  expect(await page.locator(`[data-testid='ops'] tr[data-op-id='${chargeOpId}']`).count()).toBe(0);
  expect(await page.locator(`[data-testid='ops-resolved'] tr[data-op-id='${chargeOpId}']`).textContent()).toContain("verified_not_ran");
  const audit = d1(dir, "SELECT actor, action, reason, result FROM audit_log WHERE target_name = 'refund-9'");
  expect(audit).toEqual([
    { actor: "e2e@example.com", action: "resolve_op", reason: "payment provider shows no charge with this idempotency key", result: "ok" },
  ]);
  await page.close();
});

it("force-idles the agent of an open incident from the incident page in at most 3 clicks including the reason", async () => {
  const page = await countingPage();
  await page.goto(`${server.base}/incidents/${encodeURIComponent("turn:DemoSessionAgent/stuck-3/1")}`);
  expect(await page.locator("[data-testid='incident-facts']").textContent()).toContain("open");
  // Where to look next, from the incident.
  const links = page.locator("[data-testid='incident-links']");
  expect(await links.getByRole("link", { name: "Session stuck-3" }).count()).toBe(1);
  expect(await links.getByRole("link", { name: /Ambiguous ops/ }).count()).toBe(1);
  await shot(page, "incident-01-open");

  await page.getByRole("button", { name: "Force idle…" }).click();
  // Opening the action puts the cursor in its reason: the person types straight away.
  await page.keyboard.type("summary turn stuck after recovery; customer asked to stop");
  await page.getByRole("button", { name: "Confirm force idle" }).click();
  const result = page.locator("[data-testid='action-result']");
  await result.waitFor();
  // Done, and verified: the after-state the console read back is ok (the sentence is worded and tested in the console).
  expect(await result.locator("[data-testid='after-state']").getAttribute("data-result")).toBe("ok");
  expect(await result.locator("[data-testid='after-state']").getAttribute("data-verified")).toBe("true");
  const n = await clicks(page);
  console.log(`[clicks] force idle from an open incident: ${n} (open the form, confirm; the reason is typed into the focused field)`);
  expect(n).toBeLessThanOrEqual(3);
  await shot(page, "incident-02-forced-idle");

  await until(
    "the session to be idle in the console",
    () => d1(dir, "SELECT status FROM sessions WHERE session_name = 'stuck-3'")[0]?.status === "idle",
    30_000,
  );
  const audit = d1(dir, "SELECT action, reason, result FROM audit_log WHERE target_name = 'stuck-3'");
  expect(audit).toEqual([{ action: "force_idle", reason: "summary turn stuck after recovery; customer asked to stop", result: "ok" }]);
  await page.close();
});
