import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { meteredDb, newD1Meter } from "../../../bench/sim/metered";
import { app } from "../../../worker/app";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { accessToken, call, getOverview, getText, ORIGIN, USERS, unescapeAttr } from "./harness";

// The overview's first screen answers "is anything burning now, and what": the recent figures (from the rollups)
// beside the window before and the 24 h, the alert banner with storms first, "quiet" only when the recent window is,
// and a bound on what the first screen reads however busy the store is. The storm goes through the real ingest, so
// each figure can be followed to the list it counts.

const NOW = Date.now();
const MIN = 60_000;
const HOUR = 60 * MIN;
const BUCKET = 5 * MIN;

/** A chat incident of `agentName` that exhausts: detected, three attempts, exhausted, all within a second of `t`. */
function exhausting(agentName: string, incidentId: string, t: number): TelemetryEvent[] {
  const base = { maxAttempts: 3, recoveryKind: "retry" as const };
  const corr = { incidentId, requestId: `req-${incidentId}` };
  const o = (k: number) => ({ agentName, corr, time: t + k * 100 });
  return [
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, o(0)),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o(1)),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, o(2)),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 3 }, o(3)),
    makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: i(incidentId) % 2 ? "max_attempts_exceeded" : "no_progress_timeout" }, o(4)),
  ];
}
const i = (id: string) => Number(id.replace(/\D/g, "")) || 0;

/** A storm: `n` incidents exhausting between `from` and `to`, spread over a few agents. */
const storm = (prefix: string, n: number, from: number, to: number) =>
  Array.from({ length: n }, (_, k) => exhausting(`${prefix}-${k % 4}`, `${prefix}-inc-${k}`, from + Math.floor(((to - from) * k) / n))).flat();

/** Inserts alert deliveries as the alerting records them (src/store/alerts.ts): one row per alert and channel. */
async function alerts(rows: { key: string; kind: string; summary: string; at: number; status?: string }[]) {
  const stmts = rows.flatMap((r) =>
    ["webhook", "slack"].map((channel) =>
      env.DB.prepare(
        `INSERT INTO alert_deliveries (alert_key, channel, kind, agent_class, agent_name, subject_id, summary, status, attempts, created_at, updated_at)
         VALUES (?, ?, ?, 'ProbeAgent', 'storm-0', 'x', ?, ?, 1, ?, ?)`,
      ).bind(r.key, channel, r.kind, r.summary, r.status ?? "sent", r.at, r.at),
    ),
  );
  for (let k = 0; k < stmts.length; k += 50) await env.DB.batch(stmts.slice(k, k + 50));
}

type Figure = { href: string; n: number; capped: boolean; testId: string | null };
function figures(html: string): Figure[] {
  const out: Figure[] = [];
  for (const m of html.matchAll(/<a\s([^>]*)>/g)) {
    const a = Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((x) => [x[1]!, unescapeAttr(x[2]!)]));
    if (a["data-figure"] !== undefined)
      out.push({ href: a.href!, n: Number(a["data-figure"]), capped: a["data-figure-capped"] === "true", testId: a["data-testid"] ?? null });
  }
  return out;
}

/** Every row of the list at `href`, through every page of its JSON form. */
async function rowsOf(href: string): Promise<unknown[]> {
  const rows: unknown[] = [];
  let cursor: string | null = null;
  for (let p = 0; p < 100; p++) {
    const u = new URL(href, ORIGIN);
    u.searchParams.set("limit", "200");
    if (cursor) u.searchParams.set("cursor", cursor);
    const r = await call(`${u.pathname}${u.search}`, { as: "viewer", headers: { Accept: "application/json" } });
    expect(r.status, href).toBe(200);
    const page = (await r.json()) as { items: unknown[]; next: string | null };
    rows.push(...page.items);
    if (!page.next) return rows;
    cursor = page.next;
  }
  throw new Error(`${href}: more than 100 pages`);
}

/** GET through the app with settings changed (as wrangler.jsonc vars would) and D1 metered: the page and the rows it read. */
async function getWith(path: string, vars: Record<string, string> = {}) {
  const meter = newD1Meter();
  const res = await app.fetch(
    new Request(`${ORIGIN}${path}`, { headers: { "Cf-Access-Jwt-Assertion": await accessToken(USERS.viewer) } }),
    { ...env, ...vars, DB: meteredDb(env.DB, meter) },
    createExecutionContext(),
  );
  const text = await res.text();
  expect(res.status, text.slice(0, 300)).toBe(200);
  return { text, rowsRead: meter.rowsRead };
}

/** The overview with its lazy 24 h part (as the page loads it), under the same settings: the two answers' text, and rows read. */
async function overviewWith(vars: Record<string, string>) {
  const [page, lazy] = [await getWith("/", vars), await getWith("/partials/overview", vars)];
  return { text: page.text + lazy.text, rowsRead: page.rowsRead };
}

const section = (html: string) => /<section class="now ([a-z]+)"[^>]*data-burning="(true|false)"/.exec(html);

beforeAll(async () => {
  await publishEnvTeamKeys();
  // The storm: 30 incidents exhausted 6 to 9 minutes ago (in the recent window of 15 minutes, whatever the bucket
  // edges; out of a 5-minute one), 5 exhausted 20 minutes ago (the window before), 4 two hours ago (24 h only).
  // Each opened and exhausted within a second: none is open now.
  await ingest(
    [
      ...storm("storm", 30, NOW - 9 * MIN, NOW - 6 * MIN),
      ...storm("before", 5, NOW - 20 * MIN, NOW - 19 * MIN),
      ...storm("old", 4, NOW - 2 * HOUR, NOW - 2 * HOUR + MIN),
    ],
    NOW,
  );
  // Alerts: a deploy storm 50 minutes ago, an exhaustion wave 45 minutes ago, then 150 exhaustion alerts (two
  // channels each), 3 of them rate limited; a stuck alert two hours ago is not active.
  await alerts([
    { key: JSON.stringify(["deploy_storm", "v-bad"]), kind: "deploy_storm", summary: "Version v-bad: 30 incidents in its first 15 min", at: NOW - 50 * MIN },
    {
      key: JSON.stringify(["exhaustion_wave", "ProbeAgent", "h1"]),
      kind: "exhaustion_wave",
      summary: "at least 10 incidents of ProbeAgent exhausted in the last 15 min",
      at: NOW - 45 * MIN,
    },
    ...Array.from({ length: 150 }, (_, k) => ({
      key: JSON.stringify(["exhausted", "ProbeAgent", `storm-${k % 4}`, `a-${k}`]),
      kind: "exhausted",
      summary: `storm-${k % 4}: recovery exhausted (a-${k})`,
      at: NOW - 40 * MIN + k * 1000,
      status: k < 3 ? "rate_limited" : "sent",
    })),
    { key: JSON.stringify(["stuck", "no_progress", "x"]), kind: "stuck", summary: "old stuck", at: NOW - 2 * HOUR },
  ]);
}, 60_000);

describe("the overview's first screen during a storm", () => {
  it("shows the recent figures beside the window before, the trend, the last hour and the 24 h, each counting what it links to", async () => {
    const { text } = await getOverview("viewer");
    const got = Object.fromEntries(
      figures(text)
        .filter((f) => f.testId?.startsWith("now-"))
        .map((f) => [f.testId, f]),
    );
    expect(got["now-exhausted-recent"]!.n).toBe(30);
    expect(got["now-exhausted-previous"]!.n).toBe(5);
    expect(got["now-attempts-recent"]!.n).toBe(90);
    expect(got["now-detected-recent"]!.n).toBe(30);
    expect(got["now-ambiguous-recent"]!.n).toBe(0);
    // The 24 h exhausted incidents: all 39 (the card below counts the same).
    expect(got["now-exhausted-24h"]).toMatchObject({ n: 39, capped: false });
    expect(/data-testid="now-exhausted-trend" data-trend="rising"/.test(text)).toBe(true);
    // Every figure of the first screen (recent, before, last hour, 24 h, the chart's totals) is what its list holds.
    const now = figures(/<section class="now[\s\S]*?<\/section>\s*<\/div>/.exec(text)![0]);
    expect(now.length).toBeGreaterThanOrEqual(4 * 3 + 1 + 4);
    const mismatches: string[] = [];
    for (const f of now) {
      const n = (await rowsOf(f.href)).length;
      if (n !== f.n) mismatches.push(`${f.href}: figure ${f.n}, list ${n}`);
    }
    expect(mismatches).toEqual([]);
  });

  it("burns, and never says quiet, while nothing is open because incidents open and exhaust within seconds", async () => {
    const { text } = await getOverview("viewer");
    expect(section(text)?.slice(1)).toEqual(["burning", "true"]);
    expect(text).toContain("Burning now");
    expect(text).not.toContain("Quiet shift");
    expect(text).not.toContain("Quiet now");
    expect(text).toContain('data-testid="nothing-open-not-quiet"');
    // The burning row is the exhaustions' and it says what: 30 since the window's start, up from 5.
    expect(text).toMatch(/<strong>30 exhaustions<\/strong>/);
    expect(text).toContain("up from 5 the 15 min before");
    // The same answer in JSON, for scripts.
    const json = (await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as { now: { quiet: boolean } };
    expect(json.now.quiet).toBe(false);
  });

  it("says quiet again once the recent window, shortened by configuration, has no exhaustion; the 24 h stays red below", async () => {
    const { text } = await overviewWith({ OVERVIEW_RECENT_MINUTES: "5" });
    expect(section(text)?.slice(1)).toEqual(["calm", "false"]);
    expect(text).toContain("Quiet now");
    expect(text).toContain("Nothing open. Quiet shift.");
    const got = Object.fromEntries(figures(text).map((f) => [f.testId, f]));
    expect(got["now-exhausted-recent"]!.n).toBe(0);
    expect(got["count-Exhaustions (24 h)"]!.n).toBe(39);
    expect(text).toMatch(/class="card alert"[^>]*data-testid="count-Exhaustions \(24 h\)"/);
  });

  it("names the burning class on the first screen, with how many of its incidents exhausted, linking to exactly those", async () => {
    const { text } = await getText("/partials/overview-now", "viewer");
    const links = [...text.matchAll(/<a href="([^"]*)" data-testid="now-burning-class" data-agent-class="([^"]*)" data-n="(\d+)"/g)];
    expect(links.map((m) => [m[2], Number(m[3])])).toEqual([["ProbeAgent", 30]]);
    // Before the figures table: what burns is said first.
    expect(text.indexOf('data-testid="now-burning"')).toBeLessThan(text.indexOf('data-testid="now-figures"'));
    const rows = (await rowsOf(unescapeAttr(links[0]![1]!))) as { agentClass: string; status: string }[];
    expect(rows.length).toBe(30);
    expect(new Set(rows.map((r) => `${r.agentClass} ${r.status}`))).toEqual(new Set(["ProbeAgent exhausted"]));
    // The list's status-time filter refuses a backwards window with a sentence.
    const bad = await call("/incidents?statusSince=2000&statusUntil=1000", { as: "viewer", headers: { Accept: "application/json" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("statusSince must not be later than statusUntil");
  });

  it("with a recent window shorter than a rollup bucket (1 min), is calm again at once: exact counts, 0 recent, the 24 h still 39", async () => {
    const { text, rowsRead } = await overviewWith({ OVERVIEW_RECENT_MINUTES: "1" });
    expect(section(text)?.slice(1)).toEqual(["calm", "false"]);
    expect(text).toContain("Quiet now");
    expect(text).toContain("last 1 min");
    expect(text).not.toContain('data-testid="now-burning"');
    const got = Object.fromEntries(figures(text).map((f) => [f.testId, f]));
    // The burning figures count incidents and ops of the exact window, linking to those lists; the 24 h keeps the storm.
    expect(got["now-exhausted-recent"]).toMatchObject({ n: 0 });
    expect(got["now-exhausted-recent"]!.href).toMatch(/^\/incidents\?status=exhausted&since=\d+&statusSince=\d+$/);
    expect(got["now-ambiguous-recent"]!.href).toMatch(/^\/ops\?since=\d+$/);
    expect(got["now-ambiguous-previous"]!.href).toMatch(/^\/ops\?since=\d+&until=\d+$/);
    expect(got["now-exhausted-24h"]).toMatchObject({ n: 39, capped: false });
    expect(got["count-Exhaustions (24 h)"]!.n).toBe(39);
    // The context figures have no exact source under a bucket: not counted (a dash), where the last hour still is.
    expect(got["now-attempts-recent"]).toBeUndefined();
    expect(text).toMatch(/data-testid="now-attempts-trend" data-trend="none"><span class="muted" title="counted per 5-minute bucket only/);
    expect(rowsRead).toBeGreaterThan(0);
  });

  it("puts the alert banner first, the deploy storm before a hundred newer exhaustion alerts, each linking to its list", async () => {
    const { text } = await getOverview("viewer");
    const banner = /<section class="alert-banner"[\s\S]*?<\/section>/.exec(text)![0];
    // The banner comes before the recent figures and the 24 h cards.
    expect(text.indexOf(banner)).toBeLessThan(text.indexOf('data-testid="now-figures"'));
    const kinds = [...banner.matchAll(/data-testid="banner-alert" data-kind="([a-z_]+)" data-n="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
    // The storm and the exhaustion wave, though 300 deliveries of newer alerts came after them; then the exhaustions
    // (at least the 50 alerts read, per alert not per channel); not the stuck alert of two hours ago.
    expect(kinds).toEqual([
      ["deploy_storm", 1],
      ["exhaustion_wave", 1],
      ["exhausted", 50],
    ]);
    // Each headline is its kind's one label: the wave says wave, a single exhaustion does not.
    expect([...banner.matchAll(/<strong>([^<]+)<\/strong>/g)].map((m) => m[1])).toEqual([
      "Recovery storm after deploy",
      "Exhaustion wave",
      "Recovery exhausted",
    ]);
    expect(banner).toContain("at least 50 alerts in the last hour");
    expect(banner).toContain('href="/alerts?kind=deploy_storm"');
    expect(banner).toContain('href="/alerts?kind=exhausted"');
    expect(banner).toContain('href="/deploys"');
    expect(banner).toContain("Version v-bad: 30 incidents in its first 15 min");
    // The alerts list it links to has the storm.
    const listed = (await rowsOf("/alerts?kind=deploy_storm")) as { summary: string }[];
    expect(listed.map((a) => a.summary)).toEqual(["Version v-bad: 30 incidents in its first 15 min", "Version v-bad: 30 incidents in its first 15 min"]);
  });

  it("says how many alerts the hourly budgets suppressed in the last hour, beside the banner, linking to them on /alerts", async () => {
    const { text } = await getText("/partials/overview-now", "viewer");
    const note = /<p data-testid="alerts-suppressed" data-count="(\d+)" data-capped="(true|false)"[^>]*>([\s\S]*?)<\/p>/.exec(text);
    expect(note, "the suppressed note is on the first screen").not.toBeNull();
    // The 3 exhaustion alerts seeded rate limited (on both channels: 6 deliveries), 40 minutes ago.
    expect([Number(note![1]), note![2]]).toEqual([3, "false"]);
    expect(note![3]).toContain("3 alerts suppressed");
    expect(note![3]).toContain("in the last hour (6 deliveries, never sent)");
    expect(note![3]).toContain('<span data-kind="exhausted" data-count="3">');
    // Right below the banner, above what burns.
    expect(text.indexOf('data-testid="alerts-suppressed"')).toBeGreaterThan(text.indexOf('data-testid="alert-banner"'));
    expect(text.indexOf('data-testid="alerts-suppressed"')).toBeLessThan(text.indexOf('data-testid="now-heading"'));
    // Its link lists those deliveries: the 3 alerts on both channels, never sent.
    const href = unescapeAttr(/<a href="([^"]*)">3 alerts suppressed/.exec(note![3]!)![1]!);
    expect(href).toBe("/alerts?status=rate_limited");
    const rows = (await rowsOf(href)) as { alertKey: string; status: string }[];
    expect(rows).toHaveLength(6);
    expect(new Set(rows.map((r) => r.alertKey)).size).toBe(3);
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(["rate_limited"]));
  });

  it("charts the last hour in 5-minute buckets, the storm's buckets holding its 30 exhaustions", async () => {
    const { text } = await getText("/partials/overview-now", "viewer");
    const data = JSON.parse(unescapeAttr(/<canvas id="recent-chart"[^>]*data-chart="([^"]*)"/.exec(text)![1]!)) as {
      buckets: number[];
      series: Record<string, number[]>;
      bucketMs: number;
    };
    expect(data.bucketMs).toBe(BUCKET);
    expect(data.buckets.length).toBeGreaterThanOrEqual(12);
    expect(data.buckets.length).toBeLessThanOrEqual(13);
    const ex = data.series.Exhaustions!;
    expect(ex.reduce((a, b) => a + b, 0)).toBe(35);
    // The burst stands out: at most two buckets hold the 30.
    expect(Math.max(...ex)).toBeGreaterThanOrEqual(15);
  });
});

describe("the first screen's cost on a busy store", () => {
  beforeAll(async () => {
    // Busy: 24 h of rollups of every chart series (5 reasons for the exhaustions), 4,000 exhausted incidents in the
    // last 24 h, 1,500 open, 400 more alert deliveries in the last hour.
    const T = NOW - 24 * HOUR;
    await env.DB.prepare(
      `INSERT OR IGNORE INTO event_rollups (bucket, type, dim, n)
       SELECT ${Math.floor(T / BUCKET) * BUCKET} + b.value * ${BUCKET}, t.value, d.value, 3
       FROM json_each(?1) b, json_each(?2) t, json_each(?3) d
       WHERE t.value = 'chat.recovery.exhausted' OR d.value = ''`,
    )
      .bind(
        JSON.stringify(Array.from({ length: 289 }, (_, k) => k)),
        JSON.stringify([
          "chat.recovery.exhausted",
          "chat.recovery.attempt",
          "fiber.recovery.attempt",
          "chat.context.compacted",
          "op.ambiguous",
          "chat.recovery.detected",
          "fiber.recovery.detected",
        ]),
        JSON.stringify(["", "r1", "r2", "r3", "r4"]),
      )
      .run();
    await env.DB.prepare(
      `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, reason, first_seen, last_seen)
       SELECT printf('busy-%05d', value), 'chat', 'Busy', 'b' || (value % 50), CASE WHEN value < 4000 THEN 'exhausted' ELSE 'open' END,
         ${NOW} - value * 10000, 'e', 3, 'r' || (value % 5), ${NOW} - value * 10000, ${NOW} - value * 10000
       FROM json_each(?1)`,
    )
      .bind(JSON.stringify(Array.from({ length: 5500 }, (_, k) => k)))
      .run();
    await alerts(
      Array.from({ length: 200 }, (_, k) => ({
        key: JSON.stringify(["exhausted", "Busy", `b${k % 50}`, `busy-${k}`]),
        kind: "exhausted",
        summary: `busy ${k}`,
        at: NOW - 30 * MIN + k * 1000,
      })),
    );
  }, 60_000);

  it("reads at most 500 D1 rows for the first screen, its own refresh and the whole page's first response; the 24 h part loads on its own", async () => {
    const first = await getWith("/partials/overview-now");
    const page = await getWith("/");
    // The 24 h part, loaded by the page as a fragment (hx-trigger "load"): not bounded by the first screen's budget.
    const lazy = await getWith("/partials/overview");
    // Where the 24 h part's rows go (for the record).
    const json = (await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as Record<string, { rowsRead?: number }>;
    const parts = Object.entries(json)
      .filter(([, v]) => typeof v?.rowsRead === "number")
      .map(([k, v]) => `${k} ${v.rowsRead}`);
    console.log(
      `overview first screen: ${first.rowsRead} D1 rows read; the page's first response: ${page.rowsRead}; its lazy 24 h part: ${lazy.rowsRead} (${parts.join(", ")})`,
    );
    expect(first.rowsRead).toBeLessThanOrEqual(500);
    expect(page.rowsRead).toBeLessThanOrEqual(500);
    // The page holds the first screen and where the 24 h part goes, loaded with it and refreshed.
    expect(page.text).toContain('data-testid="now-exhausted-recent"');
    expect(page.text).toMatch(/<div id="overview-live"[^>]*data-lazy[^>]*hx-get="\/partials\/overview" hx-trigger="load, every 15s, refresh"/);
    expect(page.text).not.toContain('data-testid="top-reasons"');
    expect(lazy.text).toContain('data-testid="top-reasons"');
    expect(first.text).toMatch(/data-testid="banner-alert" data-kind="deploy_storm"/);
    const got = Object.fromEntries(figures(first.text).map((f) => [f.testId, f]));
    // Stopped at 100 on the first screen (≥100), where the card below reads its 1,000.
    expect(got["now-exhausted-24h"]).toMatchObject({ n: 100, capped: true });
    expect(section(first.text)?.[2]).toBe("true");
  });
});

describe("a recent window shorter than a rollup bucket, on the busy store", () => {
  it("counts exactly the exhausted incidents of the window and the one before, names their class, and each figure is its list", async () => {
    // 4.9 min: the busy store's incidents of the last 4.9 min burn; the storm (6 to 9 min ago) is the window before.
    const { text, rowsRead } = await getWith("/partials/overview-now", { OVERVIEW_RECENT_MINUTES: "4.9" });
    console.log(`overview first screen with a 4.9 min window: ${rowsRead} D1 rows read`);
    expect(rowsRead).toBeLessThanOrEqual(500);
    expect(section(text)?.slice(1)).toEqual(["burning", "true"]);
    expect(text).toContain("last 294 s");
    const got = Object.fromEntries(figures(text).map((f) => [f.testId, f]));
    const recent = got["now-exhausted-recent"]!;
    const previous = got["now-exhausted-previous"]!;
    expect(recent.n).toBeGreaterThan(0);
    expect(previous.n).toBeGreaterThanOrEqual(30);
    expect((await rowsOf(recent.href)).length).toBe(recent.n);
    expect((await rowsOf(previous.href)).length).toBe(previous.n);
    // Only the busy class exhausted in the window (the storm's ProbeAgent is before it).
    const classes = [...text.matchAll(/data-testid="now-burning-class" data-agent-class="([^"]*)" data-n="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
    expect(classes).toEqual([["Busy", recent.n]]);
  });
});
