import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launch, shot } from "./browser";
import { appPost, type DevServer, startDev, stop, until as waitUntil } from "./wrangler-dev";

// Search by any id from the header's box, time presets and the UTC/local toggle, in Debian chromium against
// the real dev stack (console + demo fleet), with the browser in New York so local time is not UTC.

const PORT = 8811;
const ZONE = "America/New_York";
let server: DevServer;
let browser: Browser;
let context: BrowserContext;
let dir: string;

/** This file's waits are longer than the default: its flows go through several recoveries. */
const until = <T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 90_000) =>
  waitUntil(what, fn, timeoutMs);

/** Waking an evicted agent is what lets the SDK recover it: the console asks it for its live state. */
const wake = (agentClass: string, name: string) =>
  fetch(`${server.base}/api/agents/${agentClass}/${name}`, { headers: { Accept: "application/json" } }).catch(() => undefined);

const ids: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "console-e2e-search-"));
  server = await startDev({ port: PORT, persistDir: dir });
  browser = await launch();
  context = await browser.newContext({ timezoneId: ZONE, viewport: { width: 1400, height: 1000 } });

  // A turn evicted once at its start: the session recovers it, and that recovery is an incident.
  const evicted = await appPost(server, "/dev/sessions/srch-turn/messages", {
    text: "summarise the ledger",
    script: JSON.stringify({ chunks: ["Summarising"] }),
    evictAt: "turn_start",
    evictTimes: "1",
  });
  expect([200, 500, 502, 503]).toContain(evicted.status);
  // A refund whose agent is evicted right after the charge started: the charge is an ambiguous op. The demo's op
  // ids hash kind, arguments and turn, not the agent: its own tick's refund (-2599 at turn 1) would get the same
  // id, and an id two agents reported is rightly listed, not redirected. So this refund is one the tick never makes.
  const refund = await appPost(server, "/dev/sessions/srch-refund/messages", {
    text: "refund my order",
    script: JSON.stringify({ chunks: ["Issuing the refund. "], tool: { name: "charge_card", args: { amountCents: -4217 } }, final: ["Done."] }),
    evictAt: "after_op_started",
    evictKind: "tool.charge_card",
    evictTimes: "1",
  });
  expect([200, 409, 500, 502, 503]).toContain(refund.status);
  // The demo fleet's own tick: chat turns (request ids) and fiber jobs.
  await fetch(`${server.appBase}/demo/tick?size=1`, { method: "POST" }).catch(() => undefined);

  // Ids as the console lists them (its JSON lists: quicker than asking D1 through wrangler each time).
  const list = async (p: string) => {
    try {
      return (
        ((await (await fetch(`${server.base}${p}`, { headers: { Accept: "application/json" } })).json()) as { items: Record<string, string>[] }).items ?? []
      );
    } catch {
      return [];
    }
  };
  ids.incident = await until("the recovered turn's incident", async () => {
    await wake("DemoSessionAgent", "srch-turn");
    return (await list("/incidents?agentName=srch-turn&kind=turn"))[0]?.incidentId;
  });
  ids.op = await until("the ambiguous charge", async () => {
    await wake("DemoSessionAgent", "srch-refund");
    return (await list("/ops?open=true")).find((o) => o.agentName === "srch-refund")?.opId;
  });
  // A run that completed healthily left D1 (R2 holds it): an agent's own runs list reads both, a fleet-wide one D1 only.
  const agentRun = async (agentClass: string, kind?: string) => {
    for (const a of await list(`/agents?agentClass=${agentClass}`)) {
      const q = new URLSearchParams({ agentClass, agentName: a.agentName!, ...(kind ? { kind } : {}) });
      const run = (await list(`/runs?${q}`))[0];
      if (run) return run.fiberId;
    }
    return undefined;
  };
  ids.fiber = await until("a fiber job's run", () => agentRun("DemoFiberAgent"));
  ids.request = await until("a chat turn", () => agentRun("ChatAgent", "chat_turn"));
  // The demo fleet runs no Tasks and exports no traces (no OTLP endpoint in dev): task and trace ids are
  // covered by the workerd suite (test/store/search.test.ts); here a trace id nobody reported is searched.
  console.log(`[search e2e] ids: ${JSON.stringify(ids)}`);
}, 300_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  if (server) await stop(server);
});

/**
 * Searches from the header of `from`: one click into the box, the id typed, Enter. Returns what it cost
 * (clicks and keystrokes other than the id's characters) and where the browser landed.
 */
async function searchFromHeader(page: Page, from: string, q: string) {
  await page.goto(`${server.base}${from}`);
  let clicks = 0;
  let keys = 0;
  await page.click("#global-search");
  clicks++;
  await page.keyboard.type(q);
  await Promise.all([page.waitForLoadState("load"), page.waitForURL((u) => u.pathname !== from || u.search.includes("q=")), page.keyboard.press("Enter")]);
  keys++;
  return { clicks, keys, url: new URL(page.url()) };
}

const enc = encodeURIComponent;

describe("search by any id from the header", () => {
  it("the box has its label, placeholder and name", async () => {
    const page = await context.newPage();
    await page.goto(`${server.base}/incidents`);
    const box = page.getByRole("searchbox", { name: "Search any id" });
    expect(await box.getAttribute("id")).toBe("global-search");
    expect(await box.getAttribute("name")).toBe("q");
    expect(await box.getAttribute("placeholder")).toBe("Search any id (/)");
    await page.close();
  });

  it("an incident id lands on the incident in 1 click + Enter", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/", ids.incident!);
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe(`/incidents/${enc(ids.incident!)}`);
    expect(r.url.searchParams.get("agentName")).toBe("srch-turn");
    expect(await page.locator("h1").textContent()).toContain(ids.incident!);
    await shot(page, "search-01-incident");
    await page.close();
  });

  it("a fiber id lands on the run", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/sessions", ids.fiber!);
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe(`/runs/${enc(ids.fiber!)}`);
    expect(await page.locator("[data-testid='run-facts']").textContent()).toContain(ids.fiber!);
    await page.close();
  });

  it("a chat turn's request id lands on the turn", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/", ids.request!);
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe(`/runs/${enc(ids.request!)}`);
    expect(await page.locator("[data-testid='run-facts']").getAttribute("data-kind")).toBe("chat_turn");
    await page.close();
  });

  it("an ambiguous op id lands on its session, where the op's events are", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/ops", ids.op!);
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe("/sessions/srch-refund");
    expect(await page.locator(".timeline").textContent()).toContain(`op ${ids.op}`);
    await page.close();
  });

  it("a session name lists the session and its agent (same name); one more click opens the session", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/", "srch-refund");
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe("/search");
    expect(await page.locator("[data-testid='search-session'] .search-results > li").count()).toBe(1);
    expect(await page.locator("[data-testid='search-session']").getAttribute("data-count")).toBe("1");
    expect(await page.locator("[data-testid='search-agent'] .search-results > li").count()).toBe(1);
    await page.locator("[data-testid='search-session'] a", { hasText: "srch-refund" }).first().click();
    await page.waitForURL(/\/sessions\/srch-refund\?/);
    expect(await page.locator("h1").textContent()).toContain("srch-refund");
    expect(await page.locator("[data-testid='session-status']").count()).toBe(1);
    await shot(page, "search-02-session");
    await page.close();
  });

  it("an agent as Class/name lands on the agent's page", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/", "DemoSessionAgent/srch-turn");
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe("/agents/DemoSessionAgent/srch-turn");
    await page.close();
  });

  it("a trace id nobody reported says so, and how far back the history was searched for it", async () => {
    const page = await context.newPage();
    const q = "0123456789abcdef0123456789abcdef";
    const r = await searchFromHeader(page, "/", q);
    expect(r).toMatchObject({ clicks: 1, keys: 1 });
    expect(r.url.pathname).toBe("/search");
    const none = page.locator("[data-testid='search-none']");
    expect(await none.getAttribute("data-query")).toBe(q);
    // D1 keeps no event bodies by default (TIMELINE_SEGMENTS off): ids only events carry are looked for in the R2
    // history, and the page says the span it read (in words, and as these attributes).
    const history = page.locator("[data-testid='search-history']");
    expect(await history.getAttribute("data-count")).toBe("0");
    const from = Number(await history.getAttribute("data-covered-from"));
    const to = Number(await history.getAttribute("data-covered-to"));
    expect(to).toBeGreaterThan(from);
    await page.close();
  });

  it("an unknown id says nothing matched, and an empty search is a 400 with a message", async () => {
    const page = await context.newPage();
    const r = await searchFromHeader(page, "/", "no-such-id-anywhere");
    expect(r.url.pathname).toBe("/search");
    expect(await page.locator("[data-testid='search-none']").getAttribute("data-query")).toBe("no-such-id-anywhere");
    // Not an id that looks like a trace id: no trace window was searched.
    expect(await page.locator("[data-testid='search-none']").getAttribute("data-trace-window")).toBeNull();
    const res = await page.goto(`${server.base}/search?q=`);
    expect(res?.status()).toBe(400);
    expect(await page.locator(".error-message").textContent()).toContain("Type an id to search for");
    await page.close();
  });
});

describe("time", () => {
  it("the 1h preset keeps since=1h in the URL and marks itself current (1 click)", async () => {
    const page = await context.newPage();
    await page.goto(`${server.base}/incidents?status=recovered`);
    await page.locator("[data-testid='time-presets'] a", { hasText: /^1h$/ }).click();
    await page.waitForURL(/since=1h/);
    const url = new URL(page.url());
    expect(url.searchParams.get("since")).toBe("1h");
    expect(url.searchParams.get("status")).toBe("recovered");
    expect(await page.locator("[data-testid='time-presets'] a[aria-current='true']").textContent()).toBe("1h");
    expect(await page.locator("input[name='since']").inputValue()).toBe("1h");
    const bad = await page.goto(`${server.base}/incidents?since=1y`);
    expect(bad?.status()).toBe(400);
    expect(await page.locator(".error-message").textContent()).toContain("since must be a relative time such as 15m, 1h, 6h, 24h, 7d");
    await page.close();
  });

  it("the UTC/local toggle rewrites times (ms kept), names the zone, and is remembered", async () => {
    const page = await context.newPage();
    await page.goto(`${server.base}/incidents/${enc(ids.incident!)}?agentClass=DemoSessionAgent&agentName=srch-turn`);
    const toggle = page.locator("#tz-toggle");
    const zone = page.locator("#tz-name");
    const firstSeen = page.locator("[data-testid='incident-facts'] time").first();
    const eventTime = page.locator("[data-testid='event-time']").first();
    expect(await toggle.getAttribute("aria-pressed")).toBe("false");
    expect(await zone.textContent()).toBe("UTC");
    const utc = (await firstSeen.textContent())!;
    const utcMs = (await eventTime.textContent())!;
    expect(utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(utcMs).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    await toggle.click(); // 1 click
    expect(await toggle.getAttribute("aria-pressed")).toBe("true");
    expect(await zone.textContent()).toBe(ZONE);
    const local = (await firstSeen.textContent())!;
    const localMs = (await eventTime.textContent())!;
    expect(local).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d-0[45]:00$/);
    expect(localMs).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}-0[45]:00$/);
    // Same instants, other zone.
    expect(Date.parse(local)).toBe(Date.parse(utc));
    expect(Date.parse(localMs)).toBe(Date.parse(utcMs));
    expect(await firstSeen.getAttribute("title")).toBe(ZONE);
    await shot(page, "time-01-local");

    // Kept across pages (localStorage).
    await page.goto(`${server.base}/incidents`);
    expect(await page.locator("#tz-name").textContent()).toBe(ZONE);
    expect(await page.locator("[data-testid='incidents'] time[data-relative]").first().getAttribute("title")).toMatch(/-0[45]:00 \(America\/New_York\)$/);
    await page.locator("#tz-toggle").click();
    expect(await page.locator("#tz-name").textContent()).toBe("UTC");
    expect(await page.locator("[data-testid='incidents'] time[data-relative]").first().getAttribute("title")).toMatch(/Z \(UTC\)$/);
    await page.close();
  });

  it("the overview chart names its axes and zone, and has a text alternative", async () => {
    const page = await context.newPage();
    await page.goto(`${server.base}/`);
    const canvas = page.locator("#events-chart");
    await expect.poll(() => canvas.getAttribute("data-zone")).toBe("UTC");
    type ChartLike = { options: { scales: Record<string, { title: { text: string } }> }; data: { labels: string[] } };
    const titles = () =>
      page.evaluate(() => {
        const g = globalThis as unknown as { Chart: { getChart(el: unknown): ChartLike }; document: { getElementById(id: string): unknown } };
        const chart = g.Chart.getChart(g.document.getElementById("events-chart"));
        return { x: chart.options.scales.x!.title.text, y: chart.options.scales.y!.title.text, last: chart.data.labels[chart.data.labels.length - 1] };
      });
    const before = await titles();
    expect(before).toMatchObject({ x: "Time (UTC)", y: "Events per 5 min" });
    await page.locator("#tz-toggle").click();
    await expect.poll(() => canvas.getAttribute("data-zone")).toBe(ZONE);
    const after = await titles();
    expect(after.x).toBe(`Time (${ZONE})`);
    expect(after.last).not.toBe(before.last);
    // The text alternative: totals per series, and the buckets as a table.
    expect(await page.locator("#events-chart-summary").textContent()).toContain("Events per 5 minutes over the last 24 hours");
    await page.locator("[data-testid='chart-data'] summary").click();
    expect(await page.locator("[data-testid='chart-table'] tbody tr").count()).toBeGreaterThan(0);
    await shot(page, "time-02-chart-local");
    await page.locator("#tz-toggle").click();
    await page.close();
  });
});
