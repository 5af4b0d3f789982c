import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentHref, batchHref, LISTS, listHref, runHref, sessionHref } from "../../console/links";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import { axe, readable } from "./axe";
import { clickCounter, launch, shot } from "./browser";
import { appPost, type DevServer, d1, devSession, startDev, stop, until } from "./wrangler-dev";

/**
 * Phone and reach in a real browser against the real dev stack: at 390 px every list is cards (status, reason and
 * age first), the header is compact and no page scrolls sideways; /bulk, a list's download and the audit log's
 * batch are each a few clicks from the overview, on the phone.
 */

// These run inside the page (page.evaluate); the test project has no DOM types of its own.
declare const document: {
  scrollingElement: { scrollWidth: number; clientWidth: number };
  querySelector(s: string): { getBoundingClientRect(): { height: number; top: number } } | null;
  querySelectorAll(s: string): ArrayLike<{ getAttribute(n: string): string | null; getBoundingClientRect(): { top: number } }>;
};
declare function getComputedStyle(el: unknown): { display: string };

const PORT = 8901;
const PHONE = { width: 390, height: 844 };
const SESSION = "reach-1";

/** Every list page, with data present where the setup made some. */
const LIST_PAGES = [
  LISTS.overview,
  LISTS.agents,
  LISTS.runs,
  LISTS.incidents,
  LISTS.sessions,
  LISTS.ops,
  LISTS.stuck,
  LISTS.alerts,
  LISTS.audit,
  listHref("events", { type: "fiber.started" }),
  LISTS.backups,
  listHref("search", { q: "reach" }),
  listHref("bulk", { agentClass: "DemoSessionAgent" }),
];

let server: DevServer;
let browser: Browser;
let dir: string;
let batchId: string;
let runId: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "reach-e2e-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  // A turn that streams and stalls: an agent, a running run, a running session and their events.
  const running = await appPost(server, `/dev/sessions/${SESSION}/messages`, {
    text: "migrate my data",
    script: JSON.stringify({ chunks: ["Migrating 1 of 500 tables"], stall: true }),
  });
  expect(running.status).toBe(200);
  runId = await until(
    "the running turn to reach the console",
    () => d1(dir, `SELECT fiber_id FROM runs WHERE agent_name = '${SESSION}'`)[0]?.fiber_id as string,
  );
  // A bulk action refused for want of a reason: the audit log's batch row.
  const refused = await (await devSession(server.base)).post("/bulk", { agentClass: "DemoSessionAgent", action: "trigger-alarm", reason: "" });
  expect(refused.status).toBe(400);
  batchId = d1(dir, "SELECT id FROM audit_log WHERE target_class = 'batch'")[0]?.id as string;
  expect(batchId).toMatch(/^[0-9a-f-]{36}$/);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
});

/** Runs `npm run cli -- …` (scripts/cli.mjs under this Node) against the stack: exit code, stdout and stderr. */
function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["scripts/cli.mjs", ...args, "--url", server.base], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += String(d)));
    p.stderr.on("data", (d) => (err += String(d)));
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

/** Whether the page scrolls sideways, the header's height, and the first list's first row as the phone shows it. */
async function phoneFacts(page: Page) {
  return page.evaluate(() => {
    const s = document.scrollingElement;
    // The overview's recent-figures grid is not a list: it stays a grid on a phone, five numbers a row
    // (overview-now.e2e.test.ts checks it fits the first screen). Every other table is a list.
    const LIST = "main table:not(.now-figures)";
    const row = document.querySelector(`${LIST} tbody tr`);
    const cells = [
      ...(document.querySelectorAll(`${LIST} tbody tr:first-child > td`) as unknown as {
        getAttribute(n: string): string | null;
        getBoundingClientRect(): { top: number };
      }[]),
    ];
    const kids = [
      ...(document.querySelectorAll("header.top > *") as unknown as {
        getAttribute(n: string): string | null;
        getBoundingClientRect(): { top: number; height: number };
      }[]),
    ];
    return {
      headerKids: kids.map((k) => `${k.getAttribute("class")}:${Math.round(k.getBoundingClientRect().top)}+${Math.round(k.getBoundingClientRect().height)}`),
      scrollWidth: s.scrollWidth,
      clientWidth: s.clientWidth,
      header: document.querySelector("header.top")!.getBoundingClientRect().height,
      rowDisplay: row ? getComputedStyle(row).display : null,
      // The labels of the first card's cells, top to bottom as shown.
      shown: cells.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top).map((c) => c.getAttribute("data-label")),
    };
  });
}

describe("on a phone (390 px)", () => {
  it("shows every list as cards, with a compact header, and no page scrolls sideways", async () => {
    const page = await browser.newPage({ viewport: PHONE });
    const wide: string[] = [];
    const cardless: string[] = [];
    for (const p of LIST_PAGES) {
      const res = await page.goto(`${server.base}${p}`, { waitUntil: "load" });
      expect(res?.status(), p).toBe(200);
      // The overview's 24 h part loads after the page: judge its tables too, not whichever came first.
      await page.locator("[data-testid='lazy-placeholder']").waitFor({ state: "detached", timeout: 30_000 });
      const f = await phoneFacts(page);
      if (p === LISTS.overview) await shot(page, "reach-phone-overview");
      if (f.scrollWidth > f.clientWidth) wide.push(`${p}: ${f.scrollWidth} > ${f.clientWidth}`);
      expect(f.header, `header height on ${p}: ${f.headerKids.join(" ")}`).toBeLessThanOrEqual(64);
      if (f.rowDisplay !== null && (f.rowDisplay !== "flex" || f.shown.some((l) => l === null)))
        cardless.push(`${p}: ${f.rowDisplay} ${JSON.stringify(f.shown)}`);
    }
    // Detail pages hold tables too (an agent's runs, a batch's targets): cards there as well, and as narrow.
    const owner = { agentClass: "DemoSessionAgent", agentName: SESSION };
    for (const p of [agentHref(owner), runHref(runId, owner), sessionHref(SESSION, owner), batchHref(batchId)]) {
      const res = await page.goto(`${server.base}${p}`, { waitUntil: "load" });
      expect(res?.status(), p).toBe(200);
      const f = await phoneFacts(page);
      if (f.scrollWidth > f.clientWidth) wide.push(`${p}: ${f.scrollWidth} > ${f.clientWidth}`);
    }
    expect(wide, "pages wider than the phone").toEqual([]);
    expect(cardless, "lists not shown as labelled cards").toEqual([]);

    // The runs list has data: its card leads with the run's status, then when it started.
    await page.goto(`${server.base}${LISTS.runs}`, { waitUntil: "load" });
    const runs = await phoneFacts(page);
    expect(runs.shown.slice(0, 2)).toEqual(["status", "started"]);
    await shot(page, "reach-phone-runs");
    // And the axe rules hold on the cards.
    const violations = await axe(page);
    expect(readable(violations), "axe violations on the runs cards").toBe("");
    await page.goto(`${server.base}${LISTS.audit}`, { waitUntil: "load" });
    expect(readable(await axe(page)), "axe violations on the audit cards").toBe("");
    await page.close();
  });

  it("reaches /bulk, a download and the audit log's batch within 3 clicks of the overview", async () => {
    const page = await browser.newPage({ viewport: PHONE, acceptDownloads: true });
    const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
    const clicks = clickCounter();
    const click = clicks.click;

    // Overview → Bulk: one click.
    await page.goto(`${server.base}/`, { waitUntil: "load" });
    clicks.reset();
    await click(nav("Bulk"));
    await page.waitForURL(`${server.base}${LISTS.bulk}`);
    expect(clicks.count).toBeLessThanOrEqual(3);

    // Overview → Runs → CSV: two clicks, and the file holds the running turn.
    await page.goto(`${server.base}/`, { waitUntil: "load" });
    clicks.reset();
    await click(nav("Runs"));
    await page.waitForURL(`${server.base}${LISTS.runs}`);
    const downloading = page.waitForEvent("download");
    await click(page.getByTestId("export-csv"));
    const download = await downloading;
    expect(clicks.count).toBeLessThanOrEqual(3);
    expect(download.suggestedFilename()).toMatch(/^runs-.*\.csv$/);
    const csv = readFileSync((await download.path())!, "utf8");
    const [header, ...rows] = csv.trim().split("\r\n");
    expect(header!.split(",")).toEqual(expect.arrayContaining(["agentName", "outcome"]));
    expect(rows.some((r) => r.includes(SESSION))).toBe(true);

    // Overview → Audit log → the batch row: two clicks, and the batch's page answers.
    await page.goto(`${server.base}/`, { waitUntil: "load" });
    clicks.reset();
    await click(nav("Audit log"));
    await page.waitForURL(`${server.base}${LISTS.audit}`);
    const answered = page.waitForResponse((r) => r.url() === `${server.base}${batchHref(batchId)}`);
    await click(page.getByTestId("audit-batch-link").first());
    expect((await answered).status()).toBe(200);
    expect(clicks.count).toBeLessThanOrEqual(3);
    await page.close();
  });

  it("exports from the CLI with the page's filters, and refuses an unknown list with the console's sentence", async () => {
    const ok = await cli(["export", "runs", "--format", "json", `agentName=${SESSION}`, "agentClass=DemoSessionAgent"]);
    expect(ok.code, ok.err).toBe(0);
    const doc = JSON.parse(ok.out) as { items: { agentName: string; status: string }[]; truncated: boolean; cap: number };
    expect(doc.items.map((r) => [r.agentName, r.status])).toEqual([[SESSION, "running"]]);
    expect(doc).toMatchObject({ truncated: false, cap: 10_000 });
    const bad = await cli(["export", "nope"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("not_found: There is no list");
  });
});
