import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { historyTier } from "../../../src/store/history/tier";
import { runSegmentRetention } from "../../../src/store/retention";
import { consoleConfig } from "../../../worker/config";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { fiberLife, makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

const HOUR = 3_600_000;

it("a run older than the hot window still shows its whole timeline: the page reads it from the R2 history", async () => {
  const agentName = `tier-${crypto.randomUUID()}`;
  const fiberId = `f-${agentName}`;
  // A run that ended three hours before the hot window starts.
  const start = Date.now() - (consoleConfig(env).retention.hotWindowHours + 3) * HOUR;
  const events = fiberLife(fiberId, agentName).map((e, i) => ({ ...e, time: start + i * 1000 }));
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${agentName}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  // Pacing off: the consumer would delete this already-old run at once (finished runs leave D1 after the hot window);
  // this test is about its row's timeline read from R2 once the segments are gone.
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  const result = await getQueueResult(batch, createExecutionContext());
  expect(result.ackAll).toBe(true);
  expect(result.retryMessages).toEqual([]);

  // Retention takes the run's events out of the hot store; its row stays (runs age by their own retention).
  const gone = await runSegmentRetention(env.DB, {
    hotCutoff: Date.now() - consoleConfig(env).retention.hotWindowHours * HOUR,
    futureCutoff: Date.now() + HOUR,
  });
  expect(gone.events).toBeGreaterThanOrEqual(events.length);
  const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;

  const res = await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    run: { fiberId: string };
    events: { items: { id: string; type: string }[]; older?: { scan: { complete: boolean } } };
  };
  expect(body.run.fiberId).toBe(fiberId);
  // Every event of the run, in order, though the hot store no longer has one of them.
  const runEvents = events.filter((e) => e.corr.fiberId === fiberId);
  expect(body.events.items.map((e) => e.id)).toEqual(runEvents.map((e) => e.id));
  expect(body.events.items.map((e) => e.type)).toEqual(runEvents.map((e) => e.type));
  // With what the history read looked at: here all of the run's span, so the timeline is whole.
  expect(body.events.older?.scan.complete).toBe(true);

  // Without a bound bucket there is no older tier: the same timeline is empty, not wrong.
  expect(historyTier(undefined, { ...consoleConfig(env).history, hotWindowHours: 48 })).toBeUndefined();
});

it("a session idle since before the hot window still shows its timeline from the R2 history, newest first, and says what that read looked at", async () => {
  const agentName = `tier-session-${crypto.randomUUID()}`;
  const sessionName = agentName;
  // Two turns that ended three hours before the hot window starts; the session row stays (sessions keep RETENTION_DAYS).
  const start = Date.now() - (consoleConfig(env).retention.hotWindowHours + 3) * HOUR;
  const corr = { sessionName };
  const events = [
    makeEvent("session.status_running", { turnSeq: 1 }, { agentName, corr, time: start }),
    makeEvent("session.status_idle", { turnSeq: 1 }, { agentName, corr, time: start + 1000 }),
    makeEvent("session.status_running", { turnSeq: 2 }, { agentName, corr, time: start + 2000 }),
    makeEvent("session.status_idle", { turnSeq: 2 }, { agentName, corr, time: start + 3000 }),
  ];
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${agentName}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
  await runSegmentRetention(env.DB, {
    hotCutoff: Date.now() - consoleConfig(env).retention.hotWindowHours * HOUR,
    futureCutoff: Date.now() + HOUR,
  });
  const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;

  const res = await call(`/sessions/${encodeURIComponent(sessionName)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    session: { sessionName: string };
    timeline: { items: { id: string }[]; older?: { from: number; to: number; scan: { complete: boolean } } };
  };
  expect(body.session.sessionName).toBe(sessionName);
  expect(body.timeline.items.map((e) => e.id)).toEqual([...events].reverse().map((e) => e.id));
  expect(body.timeline.older).toMatchObject({ from: start, scan: { complete: true } });

  // The page says where those events came from, and how far the read looked.
  const html = await (await call(`/sessions/${encodeURIComponent(sessionName)}?${owner}`, { as: "viewer" })).text();
  const older = mustTestId(html, "timeline-older");
  expect(older.attrs["data-count"]).toBe(String(events.length));
  expect(older.attrs["data-complete"]).toBe("true");
});
