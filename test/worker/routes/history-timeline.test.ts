import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, expect, it } from "vitest";
import { historyTier } from "../../../src/store/history/tier";
import { runSegmentRetention } from "../../../src/store/retention";
import { consoleConfig } from "../../../worker/config";
import { handleTelemetryBatch, ingestBatch } from "../../../worker/ingest/consumer";
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
    events: { items: { id: string; type: string }[]; history?: { scan: { complete: boolean }; fromHistory: number; fromHot: number } };
  };
  expect(body.run.fiberId).toBe(fiberId);
  // Every event of the run, in order, though the hot store no longer has one of them.
  const runEvents = events.filter((e) => e.corr.fiberId === fiberId);
  expect(body.events.items.map((e) => e.id)).toEqual(runEvents.map((e) => e.id));
  expect(body.events.items.map((e) => e.type)).toEqual(runEvents.map((e) => e.type));
  // With what the history read looked at: here all of the run's span, so the timeline is whole, every event from R2.
  expect(body.events.history).toMatchObject({ scan: { complete: true }, fromHistory: runEvents.length, fromHot: 0 });

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
    timeline: { items: { id: string }[]; history?: { from: number; to: number; scan: { complete: boolean }; fromHistory: number } };
  };
  expect(body.session.sessionName).toBe(sessionName);
  expect(body.timeline.items.map((e) => e.id)).toEqual([...events].reverse().map((e) => e.id));
  expect(body.timeline.history).toMatchObject({ from: start, scan: { complete: true }, fromHistory: events.length });

  // The page says where those events came from, and how far the read looked.
  const html = await (await call(`/sessions/${encodeURIComponent(sessionName)}?${owner}`, { as: "viewer" })).text();
  const read = mustTestId(html, "timeline-history");
  expect(read.attrs["data-count"]).toBe(String(events.length));
  expect(read.attrs["data-complete"]).toBe("true");
  expect(read.attrs["data-from-hot"]).toBe("0");
});

/** Sends events through the Queue consumer: D1, then the R2 history, as production ingests them. */
async function consume(events: TelemetryEvent[], prefix: string) {
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${prefix}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
}

type TimelineJson = { items: { id: string }[]; next: string | null; history?: { fromHistory: number; fromHot: number } };

/** Every page of a timeline, following its cursor: the events in page order and each page's sources. */
async function walkTimeline(path: string, key: "events" | "timeline", limit: number) {
  const ids: string[] = [];
  const pages: TimelineJson["history"][] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const res = await call(`${path}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
      as: "viewer",
      headers: { accept: "application/json" },
    });
    expect(res.status).toBe(200);
    const page = ((await res.json()) as Record<string, TimelineJson>)[key]!;
    ids.push(...page.items.map((e) => e.id));
    pages.push(page.history);
    cursor = page.next;
    if (!cursor) return { ids, pages };
  }
  throw new Error("the timeline did not end within 50 pages");
}

it("a live run's timeline is read from R2, and its newest events that only D1 has yet are listed after them and counted", async () => {
  const agentName = `tier-live-${crypto.randomUUID()}`;
  const fiberId = `f-${agentName}`;
  const start = Date.now() - 60_000;
  const events = fiberLife(fiberId, agentName).map((e, i) => ({ ...e, time: start + i * 1000 }));
  // The first five went the whole way (D1, then R2); the last two are in D1 but their R2 write has not happened yet.
  await consume(events.slice(0, 5), agentName);
  await ingestBatch(
    env.DB,
    events.slice(5).map((body, i) => ({ id: `${agentName}-late-${i}`, body })),
  );
  const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
  const res = await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
  const body = (await res.json()) as { events: TimelineJson };
  const runIds = events.filter((e) => e.corr.fiberId === fiberId).map((e) => e.id);
  // The whole run, in order, each event once: R2's part, then what only D1 holds.
  expect(body.events.items.map((e) => e.id)).toEqual(runIds);
  expect(body.events.history).toMatchObject({ fromHistory: 5, fromHot: 2 });

  // The page says which part R2 did not hold yet, instead of showing a timeline that silently ends early.
  const html = await (await call(`/runs/${encodeURIComponent(fiberId)}?${owner}`, { as: "viewer" })).text();
  const read = mustTestId(html, "timeline-history");
  expect(read.attrs["data-from-hot"]).toBe("2");
  expect(read.text).toContain("2 events are not in the R2 history yet");

  // Oldest first, two at a time: R2's part, then D1's, each event once.
  const walked = await walkTimeline(`/runs/${encodeURIComponent(fiberId)}?${owner}`, "events", 2);
  expect(walked.ids).toEqual(runIds);
  expect(walked.pages.reduce((n, p) => n + (p?.fromHot ?? 0), 0)).toBe(2);
  expect(walked.pages.reduce((n, p) => n + (p?.fromHistory ?? 0), 0)).toBe(5);
});

it("a session split between R2 and D1 pages through both parts newest first, each event once and in order", async () => {
  const agentName = `tier-pages-${crypto.randomUUID()}`;
  const sessionName = agentName;
  const start = Date.now() - 120_000;
  const corr = { sessionName };
  const events = Array.from({ length: 9 }, (_, i) =>
    makeEvent(i % 2 ? "session.status_idle" : "session.status_running", { turnSeq: Math.floor(i / 2) + 1 }, { agentName, corr, time: start + i * 1000 }),
  );
  await consume(events.slice(0, 6), agentName);
  await ingestBatch(
    env.DB,
    events.slice(6).map((body, i) => ({ id: `${agentName}-late-${i}`, body })),
  );
  const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
  // D1's newest three first, then R2's six, two at a time.
  const session = await walkTimeline(`/sessions/${encodeURIComponent(sessionName)}?${owner}`, "timeline", 2);
  expect(session.ids).toEqual([...events].reverse().map((e) => e.id));
  expect(session.pages.reduce((n, p) => n + (p?.fromHot ?? 0), 0)).toBe(3);
  expect(session.pages.reduce((n, p) => n + (p?.fromHistory ?? 0), 0)).toBe(6);
});

it("an agent's events list is read from R2 too, newest first, with the events R2 does not hold yet from the hot store", async () => {
  const agentName = `tier-agent-${crypto.randomUUID()}`;
  const start = Date.now() - 90_000;
  const corr = { sessionName: agentName };
  const events = Array.from({ length: 6 }, (_, i) =>
    makeEvent(i % 2 ? "session.status_idle" : "session.status_running", { turnSeq: Math.floor(i / 2) + 1 }, { agentName, corr, time: start + i * 1000 }),
  );
  await consume(events.slice(0, 4), agentName);
  await ingestBatch(
    env.DB,
    events.slice(4).map((body, i) => ({ id: `${agentName}-late-${i}`, body })),
  );
  const path = `/events?type=session.status_idle&agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
  const res = await call(path, { as: "viewer", headers: { accept: "application/json" } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as TimelineJson;
  const idle = events.filter((e) => e.type === "session.status_idle");
  expect(body.items.map((e) => e.id)).toEqual([...idle].reverse().map((e) => e.id));
  expect(body.history).toMatchObject({ fromHistory: 2, fromHot: 1 });
  const html = await (await call(path, { as: "viewer" })).text();
  expect(mustTestId(html, "timeline-history").attrs["data-from-hot"]).toBe("1");
});
