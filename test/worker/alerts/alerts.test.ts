import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { recordAlerts } from "../../../src/store/alerts";
import { singleStore } from "../../../src/store/partitions";
import { runRetention } from "../../../src/store/retention";
import { alertConfig } from "../../../worker/alerts/config";
import { raiseAlerts } from "../../../worker/alerts/raise";
import { app } from "../../../worker/app";
import { ConfigError } from "../../../worker/config";
import { alertsFromEvents } from "../../../worker/ingest/alert-candidates";
import { alertOnIngested } from "../../../worker/ingest/alerts";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { chatIncidentLife, makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, hrefs, mustTestId } from "../html";
import { accessToken, getText, ORIGIN, USERS } from "../routes/harness";

/**
 * Alerts end to end in workerd: events go through the real telemetry Queue and ingest, alerts through
 * the real alerts Queue and its consumer, to a real HTTP receiver in Node (test/alert-receiver.ts) that
 * records what arrived and fails on cue. Each test uses its own agent name, which the receiver matches on.
 */

type Received = { channel: string; contentType: string; body: Record<string, unknown>; at: number };
type Delivery = {
  alert_key: string;
  channel: string;
  kind: string;
  subject_id: string;
  summary: string;
  status: string;
  attempts: number;
  http_status: number | null;
  last_error: string | null;
};

const uid = () => crypto.randomUUID().slice(0, 8);
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];
const failNext = async (match: string, channel: string, times: number, status: number) => {
  const res = await fetch(`${env.ALERT_CONTROL}/__fail`, { method: "POST", body: JSON.stringify({ match, channel, times, status }) });
  expect(res.status).toBe(200);
};
const DELIVERIES =
  "SELECT alert_key, channel, kind, subject_id, summary, status, attempts, http_status, last_error FROM alert_deliveries WHERE agent_name = ? ORDER BY kind, subject_id, channel";
const deliveries = async (agentName: string) => (await env.DB.prepare(DELIVERIES).bind(agentName).all<Delivery>()).results;
const send = (events: TelemetryEvent[]) => env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" as const })));
const exhaustion = (agentName: string, incidentId: string, reason = "no_progress_timeout") =>
  makeEvent("chat.recovery.exhausted", { maxAttempts: 3, recoveryKind: "retry", attempt: 3, reason }, { agentName, corr: { incidentId, requestId: "req-1" } });

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("alerts", () => {
  it("an exhausted incident sends one JSON and one Slack alert, with a link to the incident, escaped for Slack", async () => {
    const agentName = `alert-exh-${uid()}`;
    const incidentId = `inc-${agentName}`;
    const life = chatIncidentLife(incidentId, agentName);
    // A reason with Slack's control characters: a receiver must get them escaped, never as markup.
    life[life.length - 1] = exhaustion(agentName, incidentId, "budget <b>spent</b> & gone");
    await send(life);

    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status === "sent"));
    expect(rows.map((d) => [d.channel, d.kind, d.subject_id, d.attempts, d.http_status])).toEqual([
      ["slack", "exhausted", incidentId, 1, 200],
      ["webhook", "exhausted", incidentId, 1, 200],
    ]);
    const got = await received(agentName);
    expect(got.map((r) => r.channel).sort()).toEqual(["slack", "webhook"]);
    for (const r of got) expect(r.contentType).toBe("application/json");

    const link = `https://oncall.example.com/incidents/${incidentId}?agentClass=ProbeAgent&agentName=${agentName}`;
    const json = got.find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      source: "agent-oncall",
      version: 1,
      kind: "exhausted",
      title: "Recovery exhausted",
      agent: { class: "ProbeAgent", name: agentName },
      subject: incidentId,
      url: link,
      details: { incidentId, incidentKind: "chat", reason: "budget <b>spent</b> & gone", attempts: 3, maxAttempts: 3 },
    });
    expect(json.summary).toBe(`chat incident ${incidentId} gave up after 3 of 3 attempts: budget <b>spent</b> & gone`);

    const slack = got.find((r) => r.channel === "slack")!.body as {
      text: string;
      blocks: { type: string; text?: { type: string; text: string }; elements?: { type: string; text: string }[] }[];
    };
    expect(slack.text).toContain("Recovery exhausted: ProbeAgent / ");
    expect(slack.text).toContain("budget &lt;b&gt;spent&lt;/b&gt; &amp; gone");
    expect(JSON.stringify(slack)).not.toContain("<b>");
    expect(slack.blocks[0]).toEqual({ type: "section", text: { type: "mrkdwn", text: expect.stringContaining("*Recovery exhausted*") } });
    const linkBlock = slack.blocks.flatMap((b) => b.elements ?? []).find((e) => e.text.includes("Open in the console"))!;
    expect(linkBlock.type).toBe("mrkdwn");
    expect(linkBlock.text).toContain(`<${link.replace(/&/g, "&amp;")}|Open in the console>`);
  });

  it("the same incident exhausted again raises no second alert", async () => {
    const agentName = `alert-dedup-${uid()}`;
    const incidentId = `inc-${agentName}`;
    await send([exhaustion(agentName, incidentId)]);
    await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status === "sent"));

    // Exhausted again (another event of the same incident), in a batch with a fresh incident whose alerts
    // mark the moment the batch's alerting has run.
    const other = `inc2-${agentName}`;
    await send([exhaustion(agentName, incidentId, "max_attempts_exceeded"), exhaustion(agentName, other)]);
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 4 && r.every((d) => d.status === "sent"));
    expect(rows.map((d) => d.subject_id)).toEqual([incidentId, incidentId, other, other]);
    const got = await received(agentName);
    expect(got.filter((r) => JSON.stringify(r.body).includes(incidentId))).toHaveLength(2);
    expect(got).toHaveLength(4);
  });

  it("a new ambiguous op alerts once; the same op reported again does not", async () => {
    const agentName = `alert-op-${uid()}`;
    const opId = `op-${agentName}`;
    const corr = { opId, sessionName: `s-${agentName}` };
    await send([makeEvent("op.ambiguous", { opKind: "payment.charge", detail: "charged twice?" }, { agentName, corr })]);
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status === "sent"));
    expect(rows.map((d) => [d.kind, d.subject_id, d.summary])).toEqual([
      ["ambiguous_op", opId, `op ${opId} (payment.charge) is ambiguous: charged twice?`],
      ["ambiguous_op", opId, `op ${opId} (payment.charge) is ambiguous: charged twice?`],
    ]);
    const json = (await received(agentName)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "ambiguous_op",
      subject: opId,
      url: `https://oncall.example.com/sessions/s-${agentName}?agentClass=ProbeAgent&agentName=${agentName}`,
      details: { opKind: "payment.charge" },
    });

    // The same op reported again, then a fresh incident as the marker that this batch was handled.
    await send([
      makeEvent("op.ambiguous", { opKind: "payment.charge", detail: "still unsure" }, { agentName, corr }),
      exhaustion(agentName, `inc-${agentName}`),
    ]);
    await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 4 && r.every((d) => d.status === "sent"));
    expect((await received(agentName)).filter((r) => (r.body as { kind?: string }).kind === "ambiguous_op")).toHaveLength(1);
  });

  it("a receiver that fails twice gets the alert on the third attempt, with the attempts recorded", async () => {
    const agentName = `alert-retry-${uid()}`;
    await failNext(agentName, "webhook", 2, 503);
    await send([exhaustion(agentName, `inc-${agentName}`)]);
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status === "sent"), 20_000);
    const webhook = rows.find((d) => d.channel === "webhook")!;
    expect(webhook).toMatchObject({ status: "sent", attempts: 3, http_status: 200 });
    // The log keeps why it took three attempts.
    expect(webhook.last_error).toMatch(/^HTTP 503/);
    expect(rows.find((d) => d.channel === "slack")).toMatchObject({ status: "sent", attempts: 1, http_status: 200, last_error: null });
    const got = await received(agentName);
    expect(got.filter((r) => r.channel === "webhook")).toHaveLength(3);
    expect(got.filter((r) => r.channel === "slack")).toHaveLength(1);
  });

  it("a delivery that keeps failing is marked failed when its retries are used up; a 404 fails at once", async () => {
    const agentName = `alert-giveup-${uid()}`;
    await failNext(agentName, "webhook", 100, 500);
    await failNext(agentName, "slack", 100, 404);
    await send([exhaustion(agentName, `inc-${agentName}`)]);
    // Six attempts: the first and max_retries (5) retries, the n-th after n × ALERT_RETRY_DELAY_SECONDS (1 in tests).
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status === "failed"), 40_000);
    expect(rows.find((d) => d.channel === "webhook")).toMatchObject({
      status: "failed",
      attempts: 6,
      http_status: 500,
      last_error: expect.stringMatching(/^HTTP 500.*gave up after 6 attempts/),
    });
    expect(rows.find((d) => d.channel === "slack")).toMatchObject({
      status: "failed",
      attempts: 1,
      http_status: 404,
      last_error: expect.stringMatching(/^HTTP 404/),
    });
    const got = await received(agentName);
    expect(got.filter((r) => r.channel === "webhook")).toHaveLength(6);
    expect(got.filter((r) => r.channel === "slack")).toHaveLength(1);
  });

  it("over the hourly limit per channel, alerts are logged as rate_limited and not sent", async () => {
    const agentName = `alert-rate-${uid()}`;
    const events = [1, 2, 3].map((i) => exhaustion(agentName, `inc-${i}-${agentName}`));
    await ingestBatch(
      env.DB,
      events.map((body, i) => ({ id: `m-${i}-${uid()}`, body })),
    );
    const alerts = await alertsFromEvents(singleStore(env.DB), events);
    expect(alerts).toHaveLength(3);
    // Two hours ahead: the window then holds only this test's alerts, whatever else the suite sent.
    const later = Date.now() + 2 * 3_600_000;
    const r = await raiseAlerts({ ...env, ALERT_RATE_LIMIT_PER_HOUR: "2" }, alerts, later);
    expect(r).toEqual({ queued: 4, rateLimited: 2, duplicates: 0 });
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (x) => x.filter((d) => d.status === "sent").length === 4);
    expect(rows.map((d) => [d.subject_id, d.channel, d.status])).toEqual([
      [`inc-1-${agentName}`, "slack", "sent"],
      [`inc-1-${agentName}`, "webhook", "sent"],
      [`inc-2-${agentName}`, "slack", "sent"],
      [`inc-2-${agentName}`, "webhook", "sent"],
      [`inc-3-${agentName}`, "slack", "rate_limited"],
      [`inc-3-${agentName}`, "webhook", "rate_limited"],
    ]);
    expect(await received(`inc-3-${agentName}`)).toEqual([]);
    expect(await received(agentName)).toHaveLength(4);
  });

  it("without a webhook URL nothing is recorded or sent; an invalid setting is refused (worker/config.ts), not sent to", async () => {
    const agentName = `alert-off-${uid()}`;
    const events = [
      exhaustion(agentName, `inc-${agentName}`),
      makeEvent("op.ambiguous", { opKind: "charge", detail: "?" }, { agentName, corr: { opId: `op-${agentName}` } }),
    ];
    await ingestBatch(
      env.DB,
      events.map((body, i) => ({ id: `m-${i}-${uid()}`, body })),
    );
    const off = { ...env, ALERT_WEBHOOK_URL: undefined, ALERT_SLACK_WEBHOOK_URL: undefined };
    expect(alertConfig(off)).toEqual({ enabled: false, reason: "alerts are off: neither ALERT_WEBHOOK_URL nor ALERT_SLACK_WEBHOOK_URL is set" });
    await alertOnIngested(off, events);
    expect(await raiseAlerts(off, await alertsFromEvents(singleStore(env.DB), events))).toMatchObject({ queued: 0, off: expect.stringContaining("neither") });

    const bad = { ...env, ALERT_SLACK_WEBHOOK_URL: "hooks.example.com/no-scheme", ALERT_RATE_LIMIT_PER_HOUR: "lots" };
    expect(() => alertConfig(bad)).toThrow(ConfigError);
    await expect(alertOnIngested(bad, events)).rejects.toThrow(
      /ALERT_SLACK_WEBHOOK_URL \(a secret, not shown\) must be an http\(s\) URL; ALERT_RATE_LIMIT_PER_HOUR="lots" must be a whole number from 1 to 10000/,
    );

    expect(await deliveries(agentName)).toEqual([]);
    // Give a wrongly queued message time to arrive, had there been one.
    await scheduler.wait(500);
    expect(await received(agentName)).toEqual([]);
  });

  it("/alerts lists each delivery with its outcome and links, escaped; the JSON says alerts are on", async () => {
    const agentName = `alert-page-${uid()}`;
    const incidentId = `inc-<i>-${agentName}`;
    await failNext(agentName, "slack", 1, 404);
    await send([exhaustion(agentName, incidentId, "reason <script>x</script>")]);
    await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 2 && r.every((d) => d.status !== "queued"));

    const page = await getText("/alerts?kind=exhausted", "viewer");
    expect(page.status).toBe(200);
    const settings = mustTestId(page.text, "alert-settings");
    expect(settings.attrs).toMatchObject({ "data-enabled": "true", "data-channels": "webhook slack" });
    // Each channel is named by its host only: a webhook's path can carry its secret.
    expect(settings.text).toContain("127.0.0.1:");
    expect(page.text).not.toContain("/hook/slack");
    const rowsOf = findAll(mustTestId(page.text, "alerts").html, "data-agent", `ProbeAgent/${agentName}`);
    expect(rowsOf.map((r) => [r.attrs["data-channel"], r.attrs["data-status"], r.attrs["data-http-status"]]).sort()).toEqual([
      ["slack", "failed", "404"],
      ["webhook", "sent", expect.any(String)],
    ]);
    const slackRow = rowsOf.find((r) => r.attrs["data-channel"] === "slack")!;
    expect(hrefs(slackRow.html)).toContain(`/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${agentName}`);
    // The reason is text, escaped: never markup.
    expect(slackRow.html).toContain("&lt;script&gt;x&lt;/script&gt;");
    expect(page.text).not.toContain("<script>x</script>");

    const json = await getText("/alerts?status=failed", "viewer", { Accept: "application/json" });
    const body = JSON.parse(json.text) as {
      items: { agentName: string; channel: string; status: string; httpStatus: number }[];
      settings: { enabled: boolean };
    };
    expect(body.settings.enabled).toBe(true);
    expect(body.items.filter((i) => i.agentName === agentName)).toEqual([expect.objectContaining({ channel: "slack", status: "failed", httpStatus: 404 })]);

    const bad = await getText("/alerts?status=lost", "viewer");
    expect(bad.status).toBe(400);
    const refused = mustTestId(bad.text, "error-message");
    expect(refused.attrs["data-code"]).toBe("invalid_input");
    expect(refused.text).toContain("status");
  });

  it("/alerts says when alerts are off, and why; a malformed setting is refused", async () => {
    const get = async (overrides: Record<string, string | undefined>) => {
      const ctx = createExecutionContext();
      const req = new Request(`${ORIGIN}/alerts`, { headers: { "Cf-Access-Jwt-Assertion": await accessToken(USERS.viewer) } });
      const res = await app.fetch(req, { ...env, ...overrides }, ctx);
      await waitOnExecutionContext(ctx);
      return `${res.status} ${await res.text()}`;
    };
    const none = await get({ ALERT_WEBHOOK_URL: undefined, ALERT_SLACK_WEBHOOK_URL: undefined });
    expect(none).toMatch(/^200 /);
    const off = mustTestId(none, "alert-settings");
    expect(off.attrs).toMatchObject({ "data-enabled": "false", "data-channels": "" });
    // Why they are off: the settings to set are named.
    expect(off.text).toContain("ALERT_WEBHOOK_URL");
    expect(off.text).toContain("ALERT_SLACK_WEBHOOK_URL");
    // A malformed URL is refused like any setting (worker/config.ts): the whole console answers 503 naming it.
    const bad = await get({ ALERT_WEBHOOK_URL: "not a url" });
    expect(bad).toMatch(/^503 /);
    expect(bad).toContain("ALERT_WEBHOOK_URL");
  });

  it("deliveries older than the retention period are deleted by retention; newer ones stay", async () => {
    const agentName = `alert-retention-${uid()}`;
    const row = (subjectId: string) => ({
      alertKey: `k-${subjectId}`,
      channel: "webhook",
      kind: "exhausted" as const,
      agentClass: "ProbeAgent",
      agentName,
      subjectId,
      summary: "s",
    });
    const now = Date.now();
    await recordAlerts(env.DB, [row("old")], { now: now - 40 * 86_400_000, budgets: { high: 20, normal: 30 } });
    await recordAlerts(env.DB, [row("new")], { now: now - 86_400_000, budgets: { high: 20, normal: 30 } });
    const r = await runRetention(env.DB, { maxAgeDays: 30, now });
    expect(r.deleted.alert_deliveries).toBeGreaterThanOrEqual(1);
    expect((await deliveries(agentName)).map((d) => d.subject_id)).toEqual(["new"]);
  });
});
