import { beforeAll, describe, expect, it } from "vitest";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// The overview's "likely to exhaust" card is never silently empty: the open incidents it cannot forecast are named
// by why (a session turn has no recovery budget; a chat incident with one attempt has no rate yet). Events go in
// through the real ingest path; other test files' open incidents may share the database, so counts are at least ours.

type Card = { items: { incidentId: string }[]; notForecast: { noBudget: { turn: number; fiber: number }; noRate: number; outside: number } };
const overviewJson = async () =>
  ((await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as { exhausting: Card }).exhausting;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the forecast card names what it cannot forecast", () => {
  it("an open session turn incident is named as having no recovery budget, and a one-attempt chat incident as having no rate yet", async () => {
    const session = `forecast-turn-${uid()}`;
    const chatAgent = `forecast-chat-${uid()}`;
    const chatIncident = `req-${uid()}:msg-1`;
    const before = await overviewJson();
    await ingest([
      makeEvent(
        "session.status_rescheduled",
        { turnSeq: 2, recoveryCount: 1 },
        { agentName: session, corr: { sessionName: session, incidentId: `turn:ProbeAgent/${session}/2` } },
      ),
      makeEvent(
        "chat.recovery.attempt",
        { attempt: 1, maxAttempts: 5, recoveryKind: "retry" },
        { agentName: chatAgent, corr: { incidentId: chatIncident, requestId: chatIncident.split(":")[0] } },
      ),
    ]);
    const after = await overviewJson();
    expect(after.notForecast.noBudget.turn).toBe(before.notForecast.noBudget.turn + 1);
    expect(after.notForecast.noRate).toBe(before.notForecast.noRate + 1);
    expect(after.items.map((i) => i.incidentId)).not.toContain(chatIncident);

    const { status, text: html } = await getOverview("viewer");
    expect(status).toBe(200);
    const turn = mustTestId(html, "not-forecast-turn");
    expect(turn.attrs["data-count"]).toBe(String(after.notForecast.noBudget.turn));
    expect(turn.text).toContain("session turn incidents have no recovery budget: not forecast");
    expect(mustTestId(html, "not-forecast-no-rate").text).toContain("fewer than 2 attempts");
    // The partial the card polls says the same.
    const partial = await getText("/partials/overview", "viewer");
    expect(mustTestId(partial.text, "not-forecast-turn").text).toContain("not forecast");
  });
});

describe("the forecast, scored against what happened", () => {
  it("a chat incident a minute per attempt is listed before it exhausts; once exhausted, its page scores the forecast", async () => {
    const agentName = `forecast-score-${uid()}`;
    const incidentId = `req-${uid()}:msg-1`;
    const now = Date.now();
    const MIN = 60_000;
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    const corr = { incidentId, requestId: incidentId.split(":")[0] };
    const o = (t: number) => ({ agentName, corr, time: t });
    await ingest([
      makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, o(now - 2 * MIN)),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o(now - 2 * MIN)),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, o(now - MIN)),
    ]);
    // Before the outcome: one attempt a minute, 2 of 3: attempt 4 exceeds the cap 2 minutes after the last.
    const listed = (await overviewJson()).items.find((i) => i.incidentId === incidentId) as { forecast: { at: number } } | undefined;
    expect(listed?.forecast.at).toBe(now + MIN);

    // The outcome: attempt 3 a minute later, then attempt 4 exceeds the cap 30 s after the forecast.
    await ingest([
      makeEvent("chat.recovery.attempt", { ...base, attempt: 3 }, o(now)),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 4 }, o(now + MIN + 30_000)),
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 4, reason: "max_attempts_exceeded" }, o(now + MIN + 30_000)),
    ]);
    expect((await overviewJson()).items.map((i) => i.incidentId)).not.toContain(incidentId);

    const path = `/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${agentName}`;
    const json = (await (await call(path, { as: "viewer", headers: { Accept: "application/json" } })).json()) as { forecastScore: unknown };
    expect(json.forecastScore).toEqual({
      // The first forecast the card could show (at attempt 2) and the latest (attempt 3, the one before the exceeding attempt 4).
      first: { madeAt: now - MIN, at: now + MIN, bound: "max_attempts" },
      latest: { madeAt: now, at: now + MIN, bound: "max_attempts" },
      outcome: "exhausted",
      outcomeAt: now + MIN + 30_000,
      errorMs: 30_000,
    });
    const page = await getText(path, "viewer");
    expect(page.status).toBe(200);
    const score = mustTestId(page.text, "forecast-score");
    expect(score.attrs).toMatchObject({ "data-outcome": "exhausted", "data-first-at": String(now + MIN), "data-error-ms": "30000" });
    expect(mustTestId(page.text, "forecast-outcome").text).toContain("30s later than forecast");
  });

  it("a chat incident that recovers is scored as a forecast that did not happen", async () => {
    const agentName = `forecast-recovered-${uid()}`;
    const incidentId = `req-${uid()}:msg-1`;
    const now = Date.now();
    const base = { maxAttempts: 5, recoveryKind: "retry" as const };
    const corr = { incidentId, requestId: incidentId.split(":")[0] };
    const o = (t: number) => ({ agentName, corr, time: t });
    await ingest([
      makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, o(now - 60_000)),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o(now - 60_000)),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, o(now - 30_000)),
      makeEvent("chat.recovery.completed", { ...base, attempt: 2 }, o(now)),
    ]);
    const path = `/incidents/${encodeURIComponent(incidentId)}?agentClass=ProbeAgent&agentName=${agentName}`;
    const page = await getText(path, "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "forecast-score").attrs["data-outcome"]).toBe("recovered");
    expect(mustTestId(page.text, "forecast-outcome").text).toContain("the forecast exhaustion did not happen");
  });
});
