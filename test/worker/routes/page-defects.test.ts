import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, hrefs, mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// Defects found by using the console in a browser (issue 36), checked on the rendered pages: the events list's way in
// and its Clear, links that lead nowhere on an incident's timeline, the nav's current page, and counts as people
// read them. Seeded through the real ingest.

const enc = encodeURIComponent;
const NOW = Date.now();
const AGENT = `links-${uid()}`;
const OWNER = `agentClass=ProbeAgent&agentName=${enc(AGENT)}`;
/** The user's turn: a run the console knows by this request id. */
const TURN = `turn-${uid()}`;
/** A recovery turn's own request id: no run of that id exists anywhere. */
const RECOVERY_REQUEST = `rec-${uid()}`;
const INCIDENT = `${TURN}:msg-1`;

/** Events of the seeded agent, a second apart from a minute ago. */
function seed(): TelemetryEvent[] {
  let t = NOW - 60_000;
  const e = <T extends TelemetryEvent["type"]>(type: T, payload: Extract<TelemetryEvent, { type: T }>["payload"], corr: TelemetryEvent["corr"]) =>
    makeEvent(type, payload as never, { agentName: AGENT, corr, time: (t += 1000) });
  const base = { maxAttempts: 3, recoveryKind: "retry" as const };
  return [
    e("chat.turn.started", {}, { requestId: TURN }),
    e("chat.recovery.detected", { ...base, attempt: 1 }, { incidentId: INCIDENT, requestId: TURN }),
    e("chat.recovery.attempt", { ...base, attempt: 1 }, { incidentId: INCIDENT, requestId: TURN }),
    // What the recovery turn spent: its own request id, the incident's id.
    e("model.usage", { inputTokens: 2_000_000, outputTokens: 1_070_630, attempt: 1 }, { incidentId: INCIDENT, requestId: RECOVERY_REQUEST }),
    e("chat.recovery.exhausted", { ...base, attempt: 3, reason: "max_attempts_exceeded" }, { incidentId: INCIDENT, requestId: TURN }),
  ];
}

beforeAll(async () => {
  await publishEnvTeamKeys();
  await ingest(seed());
});

/** Every link of a page to a run page. */
const runLinks = (html: string) => hrefs(html).filter((h) => h.startsWith("/runs/"));

describe("links on an incident's timeline", () => {
  it("link to a run page only where that run exists: a recovery turn's request id links to search, which finds its incident", async () => {
    const page = await getText(`/incidents/${enc(INCIDENT)}?${OWNER}`, "viewer");
    expect(page.status).toBe(200);
    const runs = runLinks(page.text);
    // The user's turn is linked (from its own events), and every run link answers.
    expect(runs.some((h) => h.startsWith(`/runs/${enc(TURN)}`))).toBe(true);
    for (const h of new Set(runs)) expect((await call(h, { as: "viewer" })).status, h).toBe(200);
    expect(runs.some((h) => h.includes(RECOVERY_REQUEST))).toBe(false);

    // The model.usage event's request id leads to search, and search finds the incident it belongs to.
    const usage = findAll(page.text, "data-type", "model.usage")[0]!;
    const request = mustTestId(usage.html, "event-request");
    expect(request.text).toBe(RECOVERY_REQUEST);
    const found = await getText(request.attrs.href!, "viewer");
    expect(found.status).toBe(200);
    expect(found.text).toContain(INCIDENT);

    // The events list draws the same timeline: no dead run link there either.
    const events = await getText(`/events?type=model.usage,chat.turn.started&${OWNER}`, "viewer");
    expect(events.status).toBe(200);
    for (const h of new Set(runLinks(events.text))) expect((await call(h, { as: "viewer" })).status, h).toBe(200);
  });

  it("the facts link the incident's request id as its chat turn only when that run exists, else to search", async () => {
    // An incident whose request id names no run the console has (its turn's start never arrived).
    const orphan = `orphan-${uid()}`;
    const id = `${orphan}:msg-1`;
    const base = { maxAttempts: 3, recoveryKind: "retry" as const };
    await ingest([
      makeEvent(
        "chat.recovery.exhausted",
        { ...base, attempt: 3, reason: "max_attempts_exceeded" },
        { agentName: AGENT, corr: { incidentId: id, requestId: orphan }, time: NOW - 5000 },
      ),
    ]);
    const page = await getText(`/incidents/${enc(id)}?${OWNER}`, "viewer");
    expect(page.status).toBe(200);
    for (const h of new Set(runLinks(page.text))) expect((await call(h, { as: "viewer" })).status, h).toBe(200);
    expect(mustTestId(page.text, "incident-request").attrs.href).toBe(`/search?q=${enc(orphan)}`);

    const known = await getText(`/incidents/${enc(INCIDENT)}?${OWNER}`, "viewer");
    const facts = mustTestId(known.text, "incident-facts");
    expect(findAll(facts.html, "data-testid", "incident-turn")).toHaveLength(1);
  });
});

describe("/events without a type", () => {
  it("asks for a type, as the nav's way in and as the filter form's Clear, and each offered type opens its list", async () => {
    const bare = await call("/events", { as: "viewer" });
    // A bare list restores the reader's last view when there is one (a redirect); there is none for this list here.
    expect(bare.status).toBe(200);
    const html = await bare.text();
    const choice = mustTestId(html, "events-choose-type");
    expect(choice.text).toContain("Name one or more event types");

    // Clear leads to a page that answers, and asks the same.
    const clear = mustTestId(html, "filters-clear").attrs.href!;
    expect(clear).toBe("/events?view=none");
    const cleared = await getText(clear, "viewer");
    expect(cleared.status).toBe(200);
    expect(mustTestId(cleared.text, "events-choose-type").text).toContain("Name one or more event types");

    // A window given without a type is kept in every offered link.
    const windowed = await getText("/events?since=1h", "viewer");
    expect(windowed.status).toBe(200);
    const offered = hrefs(mustTestId(windowed.text, "events-choose-type").html);
    expect(offered.length).toBeGreaterThan(10);
    expect(offered.every((h) => h.startsWith("/events?type=") && h.includes("since=1h"))).toBe(true);
    const usage = offered.find((h) => h.startsWith("/events?type=model.usage&"))!;
    const list = await getText(usage, "viewer");
    expect(list.status).toBe(200);
    expect(mustTestId(list.text, "events").text).toContain("model.usage");

    // A script must still name a type: JSON without one is a 400 with the sentence.
    const json = await call("/events", { as: "viewer", headers: { Accept: "application/json" } });
    expect(json.status).toBe(400);
    expect(JSON.stringify(await json.json())).toContain("type is required");
  });
});

describe("the nav", () => {
  it("marks Agents on an agent's page and on the agents list, and Deploys on /deploys", async () => {
    const current = (html: string) => findAll(html, "aria-current", "page").map((a) => [a.attrs.href, a.text]);
    expect(current((await getText(`/agents/ProbeAgent/${enc(AGENT)}`, "viewer")).text)).toEqual([["/agents", "Agents"]]);
    expect(current((await getText("/agents", "viewer")).text)).toEqual([["/agents", "Agents"]]);
    expect(current((await getText("/deploys", "viewer")).text)).toEqual([["/deploys", "Deploys"]]);
  });
});

describe("counts", () => {
  it("are shown with thousands separators: the overview's figures, the incident's re-spent tokens, its timeline", async () => {
    const overview = await getOverview("viewer");
    const figures = findAll(overview.text, "data-figure");
    expect(figures.length).toBeGreaterThan(5);
    // This file's recovery re-spent 3,070,630 tokens in the last 24 h: at least one figure is that large.
    expect(figures.some((f) => Number(f.attrs["data-figure"]) >= 3_070_630)).toBe(true);
    for (const f of figures.filter((f) => !f.attrs["data-figure-capped"] && /^\d[\d,]*$/.test(f.text))) {
      expect(f.text, `figure ${f.attrs.href}`).toBe(Number(f.attrs["data-figure"]).toLocaleString("en-US"));
    }
    const tokens = figures.find((f) => f.attrs["data-figure-of"] === "tokens")!;
    expect(tokens.text).toMatch(/^\d{1,3}(,\d{3})+ Tokens re-spent/);

    const page = await getText(`/incidents/${enc(INCIDENT)}?${OWNER}`, "viewer");
    expect(mustTestId(page.text, "respent-total").text).toBe("3,070,630");
    expect(mustTestId(page.text, "event-tokens").text).toContain("2,000,000 input + 1,070,630 output tokens");
    const list = await getText(`/incidents?agentClass=ProbeAgent&agentName=${enc(AGENT)}`, "viewer");
    expect(findAll(list.text, "data-testid", "incident-tokens").map((c) => c.text)).toContain("3,070,630");
  });
});
