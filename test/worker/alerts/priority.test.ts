import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { singleStore } from "../../../src/store/partitions";
import { suppressedAlerts, suppressedAlertsIn } from "../../../src/store/read-models/alerts";
import { deployStormAlert } from "../../../worker/alerts/deploy-storm";
import { exhaustionWaveAlerts } from "../../../worker/alerts/exhaustion-wave";
import type { Alert } from "../../../worker/alerts/payloads";
import { raiseAlerts } from "../../../worker/alerts/raise";
import { alertOnIngested } from "../../../worker/ingest/alerts";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, mustTestId } from "../html";
import { getText } from "../routes/harness";

/**
 * Alert budgets by priority (issue 36): in a storm, per-incident alerts spend their budget and more are suppressed,
 * but the storm alert has a budget of its own and reaches the receiver, a real HTTP server (test/alert-receiver.ts).
 */

type Received = { channel: string; body: Record<string, unknown> };
type Row = { alert_key: string; channel: string; kind: string; status: string };

const uid = () => crypto.randomUUID().slice(0, 8);
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];
const ROWS = "SELECT alert_key, channel, kind, status FROM alert_deliveries WHERE agent_name = ? ORDER BY created_at, alert_key, channel";

/** An exhausted incident's alert, as ingest/alert-candidates.ts raises one per incident. */
const exhaustedAlert = (agentName: string, i: number, at: number): Alert => ({
  key: JSON.stringify(["exhausted", "ProbeAgent", agentName, `inc-${i}`]),
  kind: "exhausted",
  agentClass: "ProbeAgent",
  agentName,
  subjectId: `inc-${i}-${agentName}`,
  title: "Recovery exhausted",
  summary: `chat incident inc-${i}-${agentName} exhausted after 3 attempts (no_progress_timeout)`,
  path: `/incidents/inc-${i}`,
  at,
  details: { reason: "no_progress_timeout" },
});

/** The storm alert of a version, built as the deploy-storm check builds it. */
const stormAlert = (version: string, agentName: string, at: number): Alert =>
  deployStormAlert({
    deploy: { version, firstSeen: at - 600_000 },
    previous: { version: `${version}-before`, firstSeen: at - 86_400_000 },
    incidents: 50,
    windowMs: 900_000,
    previousIncidents: 1,
    previousFrom: at - 86_400_000,
    previousWindowMs: 900_000,
    rate: 200,
    previousRate: 4,
    top: { agentClass: "ProbeAgent", agentName, incidents: 50 },
  } as Parameters<typeof deployStormAlert>[0]);

/** Ingests `n` exhausted incidents of one agent, a second apart up to `at`; returns the events. */
async function ingestExhaustions(agentClass: string, agentName: string, n: number, at: number) {
  const events = Array.from({ length: n }, (_, i) => {
    const e = makeEvent(
      "chat.recovery.exhausted",
      { maxAttempts: 3, recoveryKind: "retry", attempt: 3, reason: "no_progress_timeout" },
      { agentName, corr: { incidentId: `${agentName}-${i}`, requestId: "req-1" }, time: at - (n - i) * 1000 },
    );
    return { ...e, source: { agentClass, agentName } };
  });
  await ingestBatch(
    env.DB,
    events.map((body, i) => ({ id: `x-${i}-${uid()}`, body })),
  );
  return events;
}

/** An hour of its own for each test, well past every other file's alerts: the budgets' window holds only this test's. */
const hourOfItsOwn = (n: number) => Date.now() + (50 + 3 * n) * 3_600_000;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

let TEST = 0;

describe("alert budgets by priority", () => {
  it("delivers a storm alert after 50 lower-priority alerts have spent the channel's hourly budget", async () => {
    const agentName = `storm-${uid()}`;
    const version = `v-storm-${uid()}`;
    const later = hourOfItsOwn(TEST++);
    const wave = Array.from({ length: 50 }, (_, i) => exhaustedAlert(agentName, i, later));
    // Two channels (JSON webhook and Slack): 30 of each channel's normal budget, the other 20 suppressed on both.
    expect(await raiseAlerts(env, wave, later)).toEqual({ queued: 60, rateLimited: 40, duplicates: 0 });

    expect(await raiseAlerts(env, [stormAlert(version, agentName, later)], later + 60_000)).toEqual({ queued: 2, rateLimited: 0, duplicates: 0 });
    const rows = await pollRows<Row>(ROWS, [agentName], (r) => r.filter((d) => d.kind === "deploy_storm" && d.status === "sent").length === 2);
    expect(rows.filter((r) => r.kind === "deploy_storm").map((r) => [r.channel, r.status])).toEqual([
      ["slack", "sent"],
      ["webhook", "sent"],
    ]);
    // The receiver got it on both channels, the JSON one naming the storm's kind and version.
    const got = await received(version);
    expect(got.map((r) => r.channel).sort()).toEqual(["slack", "webhook"]);
    expect(got.find((r) => r.channel === "webhook")!.body).toMatchObject({ kind: "deploy_storm", subject: version });

    // Every suppressed alert is counted: the 20 exhaustions over the budget, once per alert, once per delivery.
    expect(await suppressedAlerts(env.DB, { since: later - 1, until: later + 3_600_000 })).toEqual({
      since: later - 1,
      until: later + 3_600_000,
      alerts: 20,
      deliveries: 40,
      byKind: [{ kind: "exhausted", priority: "normal", alerts: 20, deliveries: 40 }],
      capped: false,
    });
    expect(rows.filter((r) => r.status === "rate_limited")).toHaveLength(40);
    expect(await received(`inc-49-${agentName}`)).toEqual([]);

    // ...and shown on /alerts (its last 24 h hold these and whatever the suite's other files suppressed).
    const page = await getText("/alerts", "viewer");
    expect(page.status).toBe(200);
    const note = mustTestId(page.text, "alerts-suppressed");
    const day = await suppressedAlertsIn(singleStore(env.DB), { since: Date.now() - 24 * 3_600_000 });
    expect(day.alerts).toBeGreaterThanOrEqual(20);
    expect(note.attrs["data-count"]).toBe(String(day.alerts));
    expect(findAll(note.html, "data-kind", "exhausted").map((k) => k.attrs["data-count"])).toEqual([
      String(day.byKind.find((k) => k.kind === "exhausted")!.alerts),
    ]);
    expect(note.html).toContain('href="/alerts?status=rate_limited"');
    // The budgets are stated: the storm's own, and everyone else's.
    const settings = mustTestId(page.text, "alert-settings");
    expect(findAll(settings.html, "data-budget", "high").map((b) => b.text)).toEqual(["20"]);
    expect(findAll(settings.html, "data-budget", "normal").map((b) => b.text)).toEqual(["30"]);
    const json = JSON.parse((await getText("/alerts", "viewer", { Accept: "application/json" })).text) as { suppressed: { alerts: number } };
    expect(json.suppressed.alerts).toBeGreaterThanOrEqual(20);
  });

  it("spends each priority's budget on its own kinds only: high alerts over theirs are suppressed, normal ones still go", async () => {
    const agentName = `budget-${uid()}`;
    const later = hourOfItsOwn(TEST++);
    const tight = { ...env, ALERT_HIGH_RATE_LIMIT_PER_HOUR: "1", ALERT_RATE_LIMIT_PER_HOUR: "1" };
    const storms = [1, 2].map((i) => stormAlert(`v-${i}-${agentName}`, agentName, later));
    expect(await raiseAlerts(tight, storms, later)).toEqual({ queued: 2, rateLimited: 2, duplicates: 0 });
    // The high budget is spent: a normal alert still has its own.
    expect(await raiseAlerts(tight, [exhaustedAlert(agentName, 1, later)], later)).toEqual({ queued: 2, rateLimited: 0, duplicates: 0 });
    expect(await raiseAlerts(tight, [exhaustedAlert(agentName, 2, later)], later)).toEqual({ queued: 0, rateLimited: 2, duplicates: 0 });
    const counted = await suppressedAlerts(env.DB, { since: later - 1, until: later + 3_600_000 });
    expect(counted.byKind.map((k) => [k.kind, k.priority, k.alerts])).toEqual([
      ["deploy_storm", "high", 1],
      ["exhausted", "normal", 1],
    ]);
  });

  it("raises one exhaustion wave per class and hour, delivered while the wave's own exhaustions are held back", async () => {
    const agentClass = `WaveClass${uid()}`;
    const agentName = `wave-${uid()}`;
    const now = Date.now();
    // Twelve incidents of one class exhaust within a minute, in one ingested batch.
    const events = await ingestExhaustions(agentClass, agentName, 12, now);
    const storm = { ...env, ALERT_RATE_LIMIT_PER_HOUR: "5", EXHAUSTION_WAVE_MIN_INCIDENTS: "10", EXHAUSTION_WAVE_MINUTES: "15" };
    await alertOnIngested(storm, events, now);
    // Ingesting the same batch again (a redelivery) raises no second wave (the wave is keyed by class and clock hour).
    await alertOnIngested(storm, events, now);

    const waves = await pollRows<Row>(
      "SELECT alert_key, channel, kind, status FROM alert_deliveries WHERE kind = 'exhaustion_wave' AND agent_class = ? ORDER BY channel",
      [agentClass],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    expect(waves.map((w) => [w.channel, w.status])).toEqual([
      ["slack", "sent"],
      ["webhook", "sent"],
    ]);
    const got = (await received(agentClass)).filter((r) => r.channel === "webhook" && r.body.kind === "exhaustion_wave");
    expect(got).toHaveLength(1);
    expect(got[0]!.body).toMatchObject({ agent: { class: agentClass, name: "" }, details: { threshold: 10, windowMinutes: 15 } });
    expect(got[0]!.body.path).toBe(`/incidents?agentClass=${agentClass}&status=exhausted`);
    // The per-incident alerts spent their budget of 5 per channel; the other 7 were suppressed, and counted.
    const own = await pollRows<Row>(ROWS, [agentName], (r) => r.length === 24);
    expect(own.filter((r) => r.status === "rate_limited")).toHaveLength(14);
    const counted = await suppressedAlerts(env.DB, { since: now - 3_600_000, until: now + 3_600_000 });
    expect(counted.byKind.find((k) => k.kind === "exhausted")).toMatchObject({ alerts: 7, deliveries: 14 });
  });

  it("counts a class's exhaustions within the window only, and calls them a wave from the threshold on", async () => {
    const agentClass = `CalmClass${uid()}`;
    const now = Date.now();
    await ingestExhaustions(agentClass, `calm-${uid()}`, 3, now);
    // Three exhaustions an hour earlier: outside a 15-minute window.
    await ingestExhaustions(agentClass, `old-${uid()}`, 3, now - 3_600_000);
    const store = singleStore(env.DB);
    const rule = (minIncidents: number) => ({ minIncidents, windowMs: 15 * 60_000 });
    expect(await exhaustionWaveAlerts(store, [agentClass], rule(4), now)).toEqual([]);
    const [wave] = await exhaustionWaveAlerts(store, [agentClass, agentClass], rule(3), now);
    expect(wave).toMatchObject({ kind: "exhaustion_wave", agentClass, details: { incidents: 3, threshold: 3 } });
    expect(await exhaustionWaveAlerts(store, [`Other${agentClass}`], rule(1), now)).toEqual([]);
  });
});
