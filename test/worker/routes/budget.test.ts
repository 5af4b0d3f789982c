import { beforeAll, describe, expect, it } from "vitest";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, hrefs, mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// The overview's "likely to exhaust" card lists an open chat incident whose own attempt rate reaches its maximum
// within 15 minutes, and its link (one click) opens the incident's recovery budget panel. Events go in through the
// real ingest path; the incident page asks the agent (ProbeAgent, which keeps no chat-recovery record), so the
// panel says its figures come from the events.

let agentName: string;
let incidentId: string;
let now: number;

beforeAll(async () => {
  await publishEnvTeamKeys();
  agentName = `budget-route-${uid()}`;
  incidentId = `req-${uid()}:msg-1`;
  now = Date.now();
  const base = { maxAttempts: 4, recoveryKind: "continue" as const };
  const corr = { incidentId, requestId: incidentId.split(":")[0] };
  await ingest([
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr, time: now - 120_000 }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr, time: now - 120_000 }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { agentName, corr, time: now - 60_000 }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 3 }, { agentName, corr, time: now }),
  ]);
});

describe("recovery budget in the console", () => {
  it("the overview card lists the incident with its forecast, and links to its budget panel", async () => {
    const json = (await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as {
      exhausting: { items: { incidentId: string; attempts: number; maxAttempts: number; forecast: { at: number; intervalMs: number } }[]; windowMs: number };
    };
    expect(json.exhausting.windowMs).toBe(15 * 60_000);
    const mine = json.exhausting.items.find((i) => i.incidentId === incidentId)!;
    // One attempt a minute, at 3 of 4: attempt 5 exceeds the maximum 2 minutes after the last.
    expect(mine).toMatchObject({ attempts: 3, maxAttempts: 4, forecast: { at: now + 120_000, intervalMs: 60_000 } });

    const { status, text: html } = await getOverview("viewer");
    expect(status).toBe(200);
    const link = `/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${agentName}#recovery-budget`;
    expect(findAll(html, "data-incident-id", incidentId)[0]?.attrs["data-forecast-at"]).toBe(String(now + 120_000));
    expect(hrefs(html)).toContain(link);

    const page = await getText(link.replace(/#.*/, ""), "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "recovery-budget").attrs["data-source"]).toBe("events");
    expect(mustTestId(page.text, "budget-attempts").attrs).toMatchObject({ "data-used": "3", "data-limit": "4" });
    expect(mustTestId(page.text, "budget-forecast").attrs).toMatchObject({ "data-basis": "attempt_rate", "data-at": String(now + 120_000) });
  });

  it("the incident's JSON carries the same budget", async () => {
    const r = await call(`/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${agentName}`, {
      as: "viewer",
      headers: { Accept: "application/json" },
    });
    const body = (await r.json()) as { budget: { source: string; attempts: { used: number; limit: number }; agentError: string | null } };
    expect(body.budget).toMatchObject({ source: "events", attempts: { used: 3, limit: 4 }, agentError: "no_record" });
  });
});
