import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { historyTier } from "../../../src/store/history/tier";
import { runSegmentRetention } from "../../../src/store/retention";
import { consoleConfig } from "../../../worker/config";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { fiberLife } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
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
  const body = (await res.json()) as { run: { fiberId: string }; events: { items: { id: string; type: string }[] } };
  expect(body.run.fiberId).toBe(fiberId);
  // Every event of the run, in order, though the hot store no longer has one of them.
  const runEvents = events.filter((e) => e.corr.fiberId === fiberId);
  expect(body.events.items.map((e) => e.id)).toEqual(runEvents.map((e) => e.id));
  expect(body.events.items.map((e) => e.type)).toEqual(runEvents.map((e) => e.type));

  // Without a bound bucket there is no older tier: the same timeline is empty, not wrong.
  expect(historyTier(undefined, { ...consoleConfig(env).history, hotWindowHours: 48 })).toBeUndefined();
});
