import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { listHref } from "../../../console/links";
import { deployStorms } from "../../../src/store/read-models";
import { alertDeployStorms } from "../../../worker/alerts/deploy-storm";
import { consoleConfig } from "../../../worker/config";
import { ingestBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";

// "Recovery storm after deploy" end to end in workerd: versioned events through real ingest into D1, the storm rule
// over the deploys and incidents they made, and the alert through the real alerts Queue to the real webhook receiver
// (test/alert-receiver.ts). Each scenario sits in its own hour of the past and uses its own version names, so no
// other test's deploys come between a version and its predecessor.

const MIN = 60_000;
const uid = () => crypto.randomUUID().slice(0, 8);
const asMessages = (events: unknown[]) => events.map((body) => ({ id: `m-${crypto.randomUUID()}`, body }));
type Received = { channel: string; body: Record<string, unknown> };
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];

/** One incident opened at `time` under `ver` (a chat recovery detected). */
const opened = (agentName: string, ver: string, time: number, i: number): TelemetryEvent => {
  const incidentId = `inc-${ver}-${i}`;
  return {
    ...makeEvent(
      "chat.recovery.detected",
      { attempt: 1, maxAttempts: 3, recoveryKind: "retry" },
      { agentName, time, corr: { incidentId, requestId: `req-${incidentId}` } },
    ),
    ver,
  } as TelemetryEvent;
};

/**
 * A previous version first seen at T0 with `before` incidents in its first minutes, and a new one first seen an hour
 * later with `after` incidents in its first minutes, somewhere 5 to 15 days back. Returns the versions and T1.
 */
async function twoDeploys(before: number, after: number) {
  const agentName = `storm-${uid()}`;
  const [previous, next] = [`v-prev-${uid()}`, `v-next-${uid()}`];
  const t1 = Date.now() - 5 * 24 * 60 * MIN - Math.floor(Math.random() * 10 * 24 * 60) * MIN;
  const t0 = t1 - 60 * MIN;
  const events = [
    ...Array.from({ length: before }, (_, i) => opened(agentName, previous, t0 + i * MIN, i)),
    ...Array.from({ length: after }, (_, i) => opened(agentName, next, t1 + i * MIN, i)),
  ];
  const r = await ingestBatch(env.DB, asMessages(events), { now: Date.now() });
  expect(r.stored).toBe(events.length);
  return { agentName, previous, next, t0, t1 };
}

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("recovery storm after deploy", () => {
  it("fires when the new version's incident rate in its first window exceeds the previous version's by the factor", async () => {
    const config = consoleConfig(env).deployStorm;
    // The configured rule (test env: the defaults): 15 minutes, factor 3, at least 3 incidents, compared inside the
    // hot window (closed incidents leave D1 after HOT_WINDOW_HOURS, 48).
    expect(config).toEqual({ windowMs: 15 * MIN, factor: 3, minIncidents: 3, closedKeptMs: 48 * 60 * MIN });
    const { agentName, previous, next, t1 } = await twoDeploys(2, 8);
    const now = t1 + config.windowMs;

    const storms = await deployStorms(env.DB, now, config);
    const s = storms.find((x) => x.deploy.version === next);
    expect(s).toMatchObject({
      deploy: { version: next, firstSeen: t1 },
      previous: { version: previous },
      incidents: 8,
      previousIncidents: 2,
      top: { agentName },
    });
    expect(s!.rate / s!.previousRate).toBe(4);

    const raised = await alertDeployStorms(env, now);
    expect(raised.queued).toBeGreaterThanOrEqual(2);
    const rows = await pollRows<{ channel: string; kind: string; subject_id: string; status: string }>(
      "SELECT channel, kind, subject_id, status FROM alert_deliveries WHERE subject_id = ? ORDER BY channel",
      [next],
      (r) => r.length === 2 && r.every((d) => d.status === "sent"),
    );
    expect(rows.map((d) => [d.channel, d.kind])).toEqual([
      ["slack", "deploy_storm"],
      ["webhook", "deploy_storm"],
    ]);
    const json = (await received(next)).find((r) => r.channel === "webhook")!.body;
    expect(json).toMatchObject({
      kind: "deploy_storm",
      subject: next,
      url: `https://oncall.example.com${listHref("incidents", { version: next })}`,
      details: { version: next, previousVersion: previous, incidents: 8, previousIncidents: 2, windowMinutes: 15, previousWindowMinutes: 15 },
    });

    // Checked again (the next cron): the same version does not alert twice.
    const again = await alertDeployStorms(env, now + 5 * MIN);
    expect((await received(next)).length).toBe(2);
    expect(again.queued).toBe(0);
  });

  it("does not fire when the rate stays within the configured factor, nor below the minimum", async () => {
    // 4× the previous rate: a storm at factor 3, none when the factor is set to 5.
    const { next, t1 } = await twoDeploys(2, 8);
    const stricter = { ...env, DEPLOY_STORM_FACTOR: "5" };
    expect(consoleConfig(stricter).deployStorm.factor).toBe(5);
    const now = t1 + 15 * MIN;
    expect((await deployStorms(env.DB, now, consoleConfig(stricter).deployStorm)).map((s) => s.deploy.version)).not.toContain(next);
    await alertDeployStorms(stricter, now);

    // From nothing to 2 incidents: an infinite ratio, but under DEPLOY_STORM_MIN_INCIDENTS (3).
    const quiet = await twoDeploys(0, 2);
    expect((await deployStorms(env.DB, quiet.t1 + 15 * MIN, consoleConfig(env).deployStorm)).map((s) => s.deploy.version)).not.toContain(quiet.next);

    // Nothing recorded or sent for either version.
    const recorded = await env.DB.prepare("SELECT COUNT(*) AS n FROM alert_deliveries WHERE subject_id IN (?, ?)")
      .bind(next, quiet.next)
      .first<{ n: number }>();
    expect(recorded!.n).toBe(0);
    expect(await received(next)).toEqual([]);
  });
});
