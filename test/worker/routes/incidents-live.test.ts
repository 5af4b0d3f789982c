import { beforeAll, describe, expect, it } from "vitest";
import type { IncidentRow, Page } from "../../../src/store/read-models";
import { incidentScenarios } from "../../fixtures/incident-scenarios";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";
import { call, getText } from "./harness";

// /incidents refreshes itself like the overview: a data-live region that polls its partial every pollSeconds
// (console.js pauses polls while the tab is hidden and refreshes on return), with the page's own filters. The
// partial answers the same rows as the list, so a refresh shows a force idle's effect without a reload.

const agentName = "incidents-live";
const T0 = Date.now() - 3_600_000;
/** The operator's reason a scenario's force idle carried (the fixture owns it). */
const closedByReason = (id: string) => incidentScenarios(agentName, T0).find((s) => s.incidentId === id)!.expected.closedByReason;

const unescapeAttr = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The live region's attributes on a rendered page. */
function liveRegion(html: string): Record<string, string> {
  const m = /<div id="incidents-live"([^>]*)>/.exec(html);
  expect(m, "the page has its live region").not.toBeNull();
  return Object.fromEntries([...m![1]!.matchAll(/([\w-]+)(?:="([^"]*)")?/g)].map((a) => [a[1]!, unescapeAttr(a[2] ?? "")]));
}

/** The incident ids of the rows of the `incidents` table in `html`. */
const rowIds = (html: string) => {
  const table = /<table data-testid="incidents"[^>]*>([\s\S]*?)<\/table>/.exec(html)![1]!;
  return [...table.matchAll(/<a class="mono" href="\/incidents\/([^"?]*)\?/g)].map((m) => decodeURIComponent(m[1]!)).sort();
};

beforeAll(async () => {
  await publishEnvTeamKeys();
  await ingest(incidentScenarios(agentName, T0).flatMap((s) => s.events));
});

describe("/incidents refreshes itself, keeping its filters", () => {
  it("polls its partial at the console's low frequency, with the same query", async () => {
    const query = `status=force_idled&agentClass=ProbeAgent&agentName=${agentName}&since=24h`;
    const page = await getText(`/incidents?${query}`, "viewer");
    expect(page.status).toBe(200);
    const live = liveRegion(page.text);
    expect(live).toHaveProperty("data-live");
    const poll = /<body[^>]*data-poll-seconds="(\d+)"/.exec(page.text)![1];
    expect(live["hx-trigger"]).toBe(`every ${poll}s, refresh`);
    const target = new URL(live["hx-get"]!, "https://x");
    expect(target.pathname).toBe("/partials/incidents");
    expect(Object.fromEntries(target.searchParams)).toEqual(Object.fromEntries(new URLSearchParams(query)));

    // The partial is the same list: the rows the JSON form lists, and nothing of the page around it.
    const partial = await getText(`${target.pathname}${target.search}`, "viewer");
    expect(partial.status).toBe(200);
    expect(partial.text).not.toContain("<html");
    const list = (await (await call(`/incidents?${query}`, { as: "viewer", headers: { Accept: "application/json" } })).json()) as Page<IncidentRow>;
    const expected = list.items.map((i) => i.incidentId).sort();
    expect(expected).toEqual(["fiber:ProbeAgent/incidents-live/fx-1", "open-then-idled"]);
    expect(rowIds(partial.text)).toEqual(expected);
    expect(rowIds(page.text)).toEqual(expected);
  });

  it("keeps noReason and groupBy in the refresh", async () => {
    const page = await getText(`/incidents?noReason=true&groupBy=status&agentClass=ProbeAgent&agentName=${agentName}`, "viewer");
    const target = new URL(liveRegion(page.text)["hx-get"]!, "https://x");
    expect(Object.fromEntries(target.searchParams)).toMatchObject({ noReason: "true", groupBy: "status" });
    const partial = await getText(`${target.pathname}${target.search}`, "viewer");
    // The groups refresh too.
    expect(mustTestId(partial.text, "incident-groups").attrs["data-group-by"]).toBe("status");
  });

  it("answers a bad filter in the partial with a 400, not a 5xx", async () => {
    const r = await call("/partials/incidents?status=bogus", { as: "viewer" });
    expect(r.status).toBe(400);
  });
});

describe("an incident's page says what the SDK said and what closed it", () => {
  const page = async (id: string) => (await getText(`/incidents/${encodeURIComponent(id)}?agentClass=ProbeAgent&agentName=${agentName}`, "viewer")).text;
  /** The content of the <dd> with this data-testid, or null. */
  const dd = (html: string, id: string) => new RegExp(`<dd data-testid="${id}">([\\s\\S]*?)</dd>`).exec(html)?.[1] ?? null;
  /** The badge's word in a <dd>. */
  const badge = (html: string | null) => /<span class="badge [a-z]+">([^<]*)<\/span>/.exec(html ?? "")?.[1] ?? null;

  it("force idled while open: shown force_idled, the SDK's word open, and the operator's reason", async () => {
    const html = await page("open-then-idled");
    const status = dd(html, "incident-status");
    expect(badge(status)).toBe("force_idled");
    expect(/data-testid="incident-sdk-status">([^<]*)</.exec(status ?? "")?.[1]).toBe("open");
    expect(mustTestId(html, "incident-closed-by").attrs).toMatchObject({ "data-closed-by": "force_idled", "data-reason": closedByReason("open-then-idled") });
  });

  it("force idled after it exhausted: shown exhausted with its root cause; the force idle is recorded beside it", async () => {
    const html = await page("exhausted-then-idled");
    const status = dd(html, "incident-status");
    expect(badge(status)).toBe("exhausted");
    expect(status).not.toContain("incident-sdk-status");
    expect(mustTestId(html, "incident-reason").text).toBe("max_attempts_exceeded");
    expect(mustTestId(html, "incident-closed-by").attrs).toMatchObject({
      "data-closed-by": "force_idled",
      "data-reason": closedByReason("exhausted-then-idled"),
    });
    expect(byTestId(html, "incident-sdk-status")).toBeUndefined();
  });
});
