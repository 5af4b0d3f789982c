import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startAlertReceiver } from "../alert-receiver";
import { launch, shot } from "./browser";
import { appPost, type DevServer, d1, startDev, stop, until, wakeSession } from "./wrangler-dev";

/**
 * Alerts in the real dev stack: the demo fleet's poison turn exhausts its recovery, the console's ingest raises
 * an alert, the alerts Queue delivers it to a real HTTP receiver here (JSON and Slack channels), and the
 * /alerts page in Chromium shows the delivery and leads to the incident.
 */

let server: DevServer;
let browser: Browser;
let receiver: { port: number; server: Server };
let dir: string;
const INCIDENT = "turn:DemoSessionAgent/alerts-9/1";

type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string) =>
  (await (await fetch(`http://127.0.0.1:${receiver.port}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];

beforeAll(async () => {
  receiver = await startAlertReceiver();
  dir = mkdtempSync(path.join(tmpdir(), "console-e2e-alerts-"));
  server = await startDev({
    port: 8841,
    persistDir: dir,
    vars: {
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook/webhook`,
      ALERT_SLACK_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook/slack`,
      ALERT_CONSOLE_URL: "http://127.0.0.1:8841",
      ALERT_RETRY_DELAY_SECONDS: "1",
    },
  });
  browser = await launch();
  // The Slack channel refuses the first delivery: the log must show the retry that got it through.
  await fetch(`http://127.0.0.1:${receiver.port}/__fail`, {
    method: "POST",
    body: JSON.stringify({ match: "alerts-9", channel: "slack", times: 1, status: 503 }),
  });

  // A poison turn: evicted at every start, so recovery gives up and the incident is exhausted.
  const poison = await appPost(server, "/dev/sessions/alerts-9/messages", {
    text: "reconcile the ledger",
    script: JSON.stringify({ chunks: ["Reconciling"] }),
    evictAt: "turn_start",
    evictTimes: "10",
  });
  expect([200, 500, 502, 503]).toContain(poison.status);
  let last = "";
  await until(
    "the poison turn to exhaust its recovery budget",
    async () => {
      // Each wake lets the SDK recover the turn, which the plan evicts again; the console may not know the agent yet.
      await wakeSession(server, "alerts-9");
      // Through the console's JSON, not d1(): its spawnSync would block this process, where the receiver answers.
      const r = await fetch(`${server.base}/incidents/${encodeURIComponent(INCIDENT)}?agentClass=DemoSessionAgent&agentName=alerts-9`, {
        headers: { Accept: "application/json" },
      }).catch((e) => String(e));
      last = typeof r === "string" ? r : r.ok ? ((await r.json()) as { incident: { status: string } }).incident.status : `HTTP ${r.status}`;
      if (last !== "exhausted") await new Promise((res) => setTimeout(res, 1000));
      return last === "exhausted";
    },
    90_000,
  ).catch((e: Error) => {
    throw new Error(`${e.message}; last seen: ${last}`);
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stop(server);
  receiver?.server.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.server.close(() => r()) : r()));
});

it("an exhausted turn reaches the webhook and Slack once each, and /alerts shows the deliveries and leads to the incident", async () => {
  const got = await until(
    "both channels to receive the alert",
    async () => {
      const r = await received(INCIDENT);
      return r.filter((x) => x.channel === "webhook").length >= 1 && r.filter((x) => x.channel === "slack").length >= 2 ? r : undefined;
    },
    60_000,
  );
  const json = got.find((r) => r.channel === "webhook")!.body;
  expect(json).toMatchObject({
    kind: "exhausted",
    subject: INCIDENT,
    agent: { class: "DemoSessionAgent", name: "alerts-9" },
    details: { reason: "max_turn_recoveries" },
  });
  expect(json.url).toBe(`http://127.0.0.1:8841/incidents/${encodeURIComponent(INCIDENT)}?agentClass=DemoSessionAgent&agentName=alerts-9`);

  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`${server.base}/`);
  // One click from any page: the nav's Alerts link.
  await page.getByRole("link", { name: "Alerts", exact: true }).click();
  await page.waitForURL(/\/alerts$/);
  await expect(page.locator("[data-testid='alert-settings']").textContent()).resolves.toContain("Alerts are on");
  const rows = page.locator("[data-testid='alerts'] tbody tr", { hasText: "alerts-9" });
  await expect.poll(async () => (await rows.allTextContents()).filter((t) => t.includes("sent")).length, { timeout: 30_000 }).toBe(2);
  const slack = rows.filter({ hasText: "slack" });
  const slackText = await slack.textContent();
  expect(slackText).toContain("HTTP 503"); // why it took a second attempt
  expect(await slack.locator("td.num").first().textContent()).toBe("2");
  await shot(page, "alerts-01-delivery-log");

  // A second click opens the incident the alert is about.
  await slack.getByRole("link", { name: `incident ${INCIDENT}` }).click();
  await page.waitForURL(/\/incidents\//);
  expect(await page.locator("[data-testid='incident-facts']").textContent()).toContain("exhausted");
  await page.close();

  // Exactly one alert per channel for the incident, however many events it had (d1() last: it blocks the receiver's process).
  expect((await received(INCIDENT)).map((r) => r.channel).sort()).toEqual(["slack", "slack", "webhook"]);
  const rowsInDb = d1(dir, `SELECT channel, status, attempts, last_error FROM alert_deliveries WHERE subject_id = '${INCIDENT}' ORDER BY channel`);
  expect(rowsInDb).toEqual([
    { channel: "slack", status: "sent", attempts: 2, last_error: expect.stringMatching(/^HTTP 503/) },
    { channel: "webhook", status: "sent", attempts: 1, last_error: null },
  ]);
});
