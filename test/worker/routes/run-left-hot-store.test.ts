import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { runRetention } from "../../../src/store/retention";
import { consoleConfig } from "../../../worker/config";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, mustTestId } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

const HOUR = 3_600_000;

/**
 * A finished fiber run of one agent, `hoursAgo` old: started, stashed, then failed (it stays in D1 until retention) or
 * completed (healthy: it never enters D1), through the real consumer (D1 and R2), with its paced retention off, so a
 * row is there until the test runs retention itself.
 */
async function finishedRun(agentName: string, fiberId: string, hoursAgo: number, end: "failed" | "completed" = "failed"): Promise<TelemetryEvent[]> {
  const start = Date.now() - hoursAgo * HOUR;
  const corr = { fiberId };
  const events = [
    makeEvent("fiber.started", { fiberName: "etl" }, { agentName, corr }),
    makeEvent("fiber.stashed", { fiberName: "etl", snapshot: { preview: '{"step":1}', bytes: 10, truncated: false } }, { agentName, corr }),
    end === "failed"
      ? makeEvent("fiber.failed", { fiberName: "etl", error: "boom" }, { agentName, corr })
      : makeEvent("fiber.completed", { fiberName: "etl" }, { agentName, corr }),
  ].map((e, i) => ({ ...e, time: start + i * 1000, seq: i + 1 }));
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${agentName}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
  return events;
}

const runRows = async (agentName: string) =>
  Number((await env.DB.prepare("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ?").bind(agentName).first<{ n: number }>())!.n);

describe("a run that left the hot store", () => {
  it("is read from the R2 history after retention deleted its row, and the page says how far the history looked", async () => {
    const agentName = `left-${crypto.randomUUID()}`;
    const fiberId = `f-${agentName}`;
    const hot = consoleConfig(env).retention.hotWindowHours;
    const events = await finishedRun(agentName, fiberId, hot + 3);
    expect(await runRows(agentName)).toBe(1);

    // Retention as the cron runs it: the run finished before the hot window, so its row leaves D1.
    await runRetention(env.DB, { maxAgeDays: consoleConfig(env).retention.days, hotWindowHours: hot });
    expect(await runRows(agentName)).toBe(0);

    const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
    const json = await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
    expect(json.status).toBe(200);
    const body = (await json.json()) as {
      run: { status: string; error: string | null; snapshotPreview: string | null };
      events: { items: { id: string }[] };
      readFrom: string;
      history: { scan: { complete: boolean; coveredFrom: number } };
    };
    // Folded from its events by ingest's own mapping: what D1 held before retention.
    expect(body.readFrom).toBe("history");
    expect(body.run).toMatchObject({ status: "failed", error: "boom", snapshotPreview: '{"step":1}' });
    expect(body.events.items.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(body.history.scan.complete).toBe(true);

    const html = await (await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer" })).text();
    const section = mustTestId(html, "run-from-history");
    expect(section.attrs["data-count"]).toBe(String(events.length));
    expect(section.attrs["data-complete"]).toBe("true");
    // It looked back past the run's first event (a week of the agent's objects).
    expect(Number(section.attrs["data-covered-from"])).toBeLessThanOrEqual(events[0]!.time);
    // Its events, in order, on the page's timeline.
    expect(findAll(html, "data-type").map((f) => f.attrs["data-type"])).toEqual(events.map((e) => e.type));
  });

  it("is found by its fiber id alone (no agent named) in the hours before the hot window", async () => {
    const agentName = `left-any-${crypto.randomUUID()}`;
    const fiberId = `f-${agentName}`;
    const hot = consoleConfig(env).retention.hotWindowHours;
    const events = await finishedRun(agentName, fiberId, hot + 2);
    await runRetention(env.DB, { maxAgeDays: consoleConfig(env).retention.days, hotWindowHours: hot });
    expect(await runRows(agentName)).toBe(0);
    const res = await call(`/runs/${encodeURIComponent(fiberId)}`, { as: "viewer", headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { run: { agentName: string; status: string }; events: { items: { id: string }[] } };
    expect(body.run).toMatchObject({ agentName, status: "failed" });
    expect(body.events.items.map((e) => e.id)).toEqual(events.map((e) => e.id));
  });

  it("a run that completed healthily never enters D1; its page folds it from the history at once", async () => {
    const agentName = `healthy-${crypto.randomUUID()}`;
    const fiberId = `f-${agentName}`;
    const events = await finishedRun(agentName, fiberId, 0.2, "completed");
    expect(await runRows(agentName)).toBe(0);
    const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
    const res = await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { run: Record<string, unknown>; events: { items: { id: string }[] } };
    expect(body.run).toMatchObject({
      fiberId,
      kind: "fiber",
      name: "etl",
      status: "completed",
      startedAt: events[0]!.time,
      endedAt: events[2]!.time,
      snapshotPreview: '{"step":1}',
      firstSeen: events[0]!.time,
      lastSeen: events[2]!.time,
    });
    expect(body.events.items.map((e) => e.id)).toEqual(events.map((e) => e.id));
    const html = await (await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer" })).text();
    expect(mustTestId(html, "run-from-history").attrs["data-count"]).toBe(String(events.length));
    expect(mustTestId(html, "run-facts").attrs["data-kind"]).toBe("fiber");
  });

  it("answers 404 when neither the hot store nor the history has the run", async () => {
    const res = await call(`/runs/never-${crypto.randomUUID()}?agentClass=ProbeAgent&agentName=nobody`, { as: "viewer" });
    expect(res.status).toBe(404);
  });
});
