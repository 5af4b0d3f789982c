import { beforeAll, describe, expect, it } from "vitest";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call, getText, uid } from "./harness";

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

    const { status, text: html } = await getText("/", "viewer");
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
