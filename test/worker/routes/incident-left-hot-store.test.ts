import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { runRetention } from "../../../src/store/retention";
import { consoleConfig } from "../../../worker/config";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { chatIncidentLife, makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, mustTestId } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

const HOUR = 3_600_000;

/** Events through the real consumer (D1 and R2), `hoursAgo` old, with paced retention off so the test runs retention itself. */
async function store(events: TelemetryEvent[], hoursAgo: number, seqFrom = 1): Promise<TelemetryEvent[]> {
  const start = Date.now() - hoursAgo * HOUR;
  const timed = events.map((e, i) => ({ ...e, time: start + i * 1000, seq: seqFrom + i }));
  const batch = createMessageBatch(
    "agent-telemetry",
    timed.map((body, i) => ({ id: `${body.source.agentName}-${seqFrom + i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
  return timed;
}

const incidentRows = async (incidentId: string) =>
  Number((await env.DB.prepare("SELECT COUNT(*) AS n FROM incidents WHERE incident_id = ?").bind(incidentId).first<{ n: number }>())!.n);

const retention = () => runRetention(env.DB, { maxAgeDays: consoleConfig(env).retention.days, hotWindowHours: consoleConfig(env).retention.hotWindowHours });

type HistoryBody = {
  incident: null;
  history: { events: { id: string; agentName: string }[]; status: string; scan: { complete: boolean; coveredFrom: number } };
};

describe("an incident that left the hot store", () => {
  it("is read from the R2 history after retention deleted its row, with the status its events say and how far the history looked", async () => {
    const agentName = `inc-left-${crypto.randomUUID()}`;
    const incidentId = `i-${agentName}`;
    const hot = consoleConfig(env).retention.hotWindowHours;
    const events = await store(chatIncidentLife(incidentId, agentName), hot + 3);
    expect(await incidentRows(incidentId)).toBe(1);

    // Exhausted before the hot window: retention (the cron's) deletes its row.
    await retention();
    expect(await incidentRows(incidentId)).toBe(0);

    const owner = `agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`;
    const json = await call(`/incidents/${encodeURIComponent(incidentId)}?${owner}`, { as: "viewer", headers: { accept: "application/json" } });
    expect(json.status).toBe(200);
    const body = (await json.json()) as HistoryBody;
    expect(body.incident).toBeNull();
    expect(body.history.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(body.history.status).toBe("exhausted");
    expect(body.history.scan.complete).toBe(true);

    const html = await (await call(`/incidents/${encodeURIComponent(incidentId)}?${owner}`, { as: "viewer" })).text();
    const section = mustTestId(html, "incident-from-history");
    expect(section.attrs["data-count"]).toBe(String(events.length));
    expect(section.attrs["data-status"]).toBe("exhausted");
    expect(section.attrs["data-complete"]).toBe("true");
    expect(Number(section.attrs["data-covered-from"])).toBeLessThanOrEqual(events[0]!.time);
    expect(findAll(html, "data-type").map((f) => f.attrs["data-type"])).toEqual(events.map((e) => e.type));
  });

  it("shows the status an operator's force idle gave it, as the hot store would have", async () => {
    const agentName = `inc-idled-${crypto.randomUUID()}`;
    const incidentId = `i-${agentName}`;
    const corr = { incidentId };
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    await store(
      [
        makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr }),
        makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr }),
        makeEvent("incident.force_idled", { reason: "stuck" }, { agentName, corr }),
      ],
      consoleConfig(env).retention.hotWindowHours + 3,
    );
    await retention();
    expect(await incidentRows(incidentId)).toBe(0);
    const res = await call(`/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${encodeURIComponent(agentName)}`, {
      as: "viewer",
      headers: { accept: "application/json" },
    });
    expect(((await res.json()) as HistoryBody).history.status).toBe("force_idled");
  });

  it("is found by its id alone (no agent named) in the hours before the hot window", async () => {
    const agentName = `inc-any-${crypto.randomUUID()}`;
    const incidentId = `i-${agentName}`;
    const events = await store(chatIncidentLife(incidentId, agentName), consoleConfig(env).retention.hotWindowHours + 2);
    await retention();
    expect(await incidentRows(incidentId)).toBe(0);
    const res = await call(`/incidents/${encodeURIComponent(incidentId)}`, { as: "viewer", headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as HistoryBody;
    expect(body.history.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(new Set(body.history.events.map((e) => e.agentName))).toEqual(new Set([agentName]));
  });

  it("keeps an open incident in the hot store past the hot window", async () => {
    const agentName = `inc-open-${crypto.randomUUID()}`;
    const incidentId = `i-${agentName}`;
    await store(chatIncidentLife(incidentId, agentName).slice(0, 2), consoleConfig(env).retention.hotWindowHours + 3);
    await retention();
    expect(await incidentRows(incidentId)).toBe(1);
    const html = await (await call(`/incidents/${encodeURIComponent(incidentId)}`, { as: "viewer" })).text();
    expect(mustTestId(html, "incident-facts")).toBeTruthy();
  });

  it("answers 404 when neither the hot store nor the history has it, saying how far the history looked", async () => {
    const res = await call(`/incidents/never-${crypto.randomUUID()}?agentClass=ProbeAgent&agentName=nobody`, {
      as: "viewer",
      headers: { accept: "application/json" },
    });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("not_found");
    // The sentence is the behaviour here: the span the history read covered.
    expect(body.error.message).toMatch(/R2 history, which was read from \d{4}-\d{2}-\d{2}T[\d:.]+Z to \d{4}-\d{2}-\d{2}T[\d:.]+Z/);
  });

  it("lists that span longer than the hot window say what they span (incidents, deploys, ops, backups)", async () => {
    const hours = String(consoleConfig(env).retention.hotWindowHours);
    for (const [path, list] of [
      ["/incidents", "incidents"],
      ["/deploys", "deploys"],
      ["/ops", "ops"],
      ["/backups", "backups"],
    ] as const) {
      const span = mustTestId(await (await call(path, { as: "viewer" })).text(), "hot-span");
      expect([path, span.attrs["data-list"], span.attrs["data-hot-window-hours"]]).toEqual([path, list, hours]);
    }
  });
});
