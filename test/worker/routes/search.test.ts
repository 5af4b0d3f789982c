import { env, exports } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { asset } from "../../../console/assets";
import { searchMatchLabel } from "../../../console/words";
import type { SearchMatch } from "../../../src/store/read-models";
import { writeHistory } from "../../../worker/ingest/history";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { findAll, hrefs, mustTestId } from "../html";
import { accessToken, call, exhaustedChatIncident, getText, ORIGIN, USERS, uid } from "./harness";

// GET /search through the real Worker: one match redirects, several are listed, none says so, bad input is a 400;
// the header's search box on every page; relative `since` and its presets on the lists.

const u = uid();
const A = { agentClass: "ProbeAgent", agentName: `route-srch-${u}` };
const B = { agentClass: "SupportAgent", agentName: `route-srch-b-${u}` };
const enc = encodeURIComponent;
let incident: { agentName: string; incidentId: string };

const from = (e: TelemetryEvent): TelemetryEvent => ({ ...e, source: A });

beforeAll(async () => {
  await publishEnvTeamKeys();
  // A real agent's exhausted chat incident, through its telemetry, the Queue and ingest.
  incident = await exhaustedChatIncident();
  const t = Date.now() - 10 * 60_000;
  await ingest([
    from(makeEvent("fiber.started", { fiberName: "etl" }, { time: t, corr: { fiberId: `fib-${u}` } })),
    from(makeEvent("chat.turn.started", {}, { time: t + 1, corr: { requestId: `req-${u}` } })),
    from(
      makeEvent(
        "chat.recovery.exhausted",
        { attempt: 2, maxAttempts: 2, recoveryKind: "retry", reason: "stable_timeout" },
        { time: t + 2, corr: { requestId: `req-${u}`, incidentId: `req-${u}:m1` } },
      ),
    ),
    from(makeEvent("session.status_running", {}, { time: t + 3, corr: { sessionName: `sess-${u}` } })),
    from(makeEvent("op.ambiguous", { opKind: "charge", detail: "twice?" }, { time: t + 4, corr: { sessionName: `sess-${u}`, opId: `op-${u}` } })),
    from(makeEvent("op.started", { opKind: "email" }, { time: t + 4, corr: { sessionName: `sess-${u}`, opId: `op2-${u}` } })),
    // The same run id reported by another agent: a search for it lists both.
    { ...makeEvent("fiber.started", { fiberName: "etl" }, { time: t + 5, corr: { fiberId: `fib-${u}` } }), source: B },
  ]);
});

const worker = (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default;

/** GET /search as a viewer, not following a redirect (the browser would; here its Location is the answer). */
async function search(q: string, headers: Record<string, string> = {}): Promise<Response> {
  const h = new Headers(headers);
  h.set("Cf-Access-Jwt-Assertion", await accessToken(USERS.viewer));
  const r = await worker.fetch(new Request(`${ORIGIN}/search?q=${enc(q)}`, { headers: h, redirect: "manual" }));
  expect(r.status).toBeLessThan(500);
  return r;
}
const location = (r: Response) => r.headers.get("Location");

describe("GET /search", () => {
  it("an incident id redirects to the incident's page, with its agent", async () => {
    const r = await search(incident.incidentId);
    expect(r.status).toBe(302);
    expect(location(r)).toBe(`/incidents/${enc(incident.incidentId)}?agentClass=ProbeAgent&agentName=${enc(incident.agentName)}`);
  });

  it("a request id, a session name and an agent name redirect to their pages", async () => {
    expect(location(await search(`req-${u}`))).toBe(`/runs/req-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`);
    expect(location(await search(`sess-${u}`))).toBe(`/sessions/sess-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`);
    expect(location(await search(A.agentName))).toBe(`/agents/ProbeAgent/${enc(A.agentName)}`);
    expect(location(await search(`ProbeAgent/${A.agentName}`))).toBe(`/agents/ProbeAgent/${enc(A.agentName)}`);
  });

  it("an ambiguous op id redirects to its session's page (the op and its session are one page)", async () => {
    const r = await search(`op-${u}`);
    expect(r.status).toBe(302);
    expect(location(r)).toBe(`/sessions/sess-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`);
  });

  it("a run id two agents reported lists both, grouped by kind", async () => {
    const page = await getText(`/search?q=fib-${u}`, "viewer");
    expect(page.status).toBe(200);
    const runs = findAll(mustTestId(page.text, "search-run").html, "data-kind", "run");
    expect(runs).toHaveLength(2);
    expect(hrefs(mustTestId(page.text, "search-run").html)).toEqual(
      expect.arrayContaining([
        `/runs/fib-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`,
        `/runs/fib-${u}?agentClass=SupportAgent&agentName=${enc(B.agentName)}`,
      ]),
    );
    // How each matched, as the store's facts (the console words them).
    for (const r of runs) expect(r.attrs).toMatchObject({ "data-via-field": "fiber", "data-via-by": "id" });
  });

  it("an id only events carry (an op that was never ambiguous) redirects to what its events belong to", async () => {
    const r = await search(`op2-${u}`);
    expect(r.status).toBe(302);
    expect(location(r)).toBe(`/sessions/sess-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`);
  });

  it("nothing found is a page that says so (200), with the query escaped", async () => {
    const q = `<img src=x onerror=alert(1)>-${u}`;
    const page = await getText(`/search?q=${enc(q)}`, "viewer");
    expect(page.status).toBe(200);
    expect(mustTestId(page.text, "search-none").text).toContain(q);
    // Escaped: the query is text, never markup.
    expect(page.text).not.toContain("<img src=x");
  });

  it("an id older than the hot window is found in the R2 history, with its agent, its run and how far the read looked", async () => {
    // Only in R2 (written there as the consumer writes it), three hours ago: the hot store never had it.
    const traceId = `trace-old-${u}`;
    const old = makeEvent("chat.turn.finished", { status: "completed" }, { time: Date.now() - 3 * 3_600_000, corr: { requestId: `req-old-${u}`, traceId } });
    await writeHistory(env.HISTORY, [{ ...old, source: B }], { shards: 1, receivedAt: Date.now() });

    const page = await getText(`/search?q=${enc(traceId)}`, "viewer");
    expect(page.status).toBe(200);
    const found = mustTestId(page.text, "search-history");
    expect(found.attrs).toMatchObject({ "data-count": "1", "data-complete": "true" });
    expect(Number(found.attrs["data-covered-from"])).toBeLessThanOrEqual(old.time);
    expect(findAll(found.html, "data-event-id").map((e) => [e.attrs["data-event-id"], e.attrs["data-via-field"]])).toEqual([[old.id, "traceId"]]);
    // Its run's page (which reads the older timeline from the history) and its agent's.
    expect(hrefs(found.html)).toEqual(expect.arrayContaining([`/runs/req-old-${u}?agentClass=SupportAgent&agentName=${enc(B.agentName)}`]));

    const json = (await (await search(traceId, { Accept: "application/json" })).json()) as { matches: unknown[]; history: { events: { id: string }[] } };
    expect(json.matches).toEqual([]);
    expect(json.history.events.map((e) => e.id)).toEqual([old.id]);

    // Nowhere at all: the page says the history was looked at too, and how far.
    const none = mustTestId((await getText(`/search?q=${enc(`nowhere-${u}`)}`, "viewer")).text, "search-history");
    expect(none.attrs["data-count"]).toBe("0");
    expect(Number(none.attrs["data-covered-to"])).toBeGreaterThan(Date.now() - 3_600_000);
  });

  it("JSON for Accept: application/json, each match with its facts, its label and its href (no redirect)", async () => {
    const r = await search(`fib-${u}`, { Accept: "application/json" });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { query: string; matches: (SearchMatch & { label: string; href: string })[] };
    // The label is the console's wording of the match's facts, the same words the search page shows.
    for (const m of body.matches) expect(m.label).toBe(searchMatchLabel(m));
    // How it matched is a fact in JSON (field and how), not a sentence.
    expect(body.matches[0]).toMatchObject({ kind: "run", outcome: null, via: { field: "fiber", by: "id" } });
    expect(body.matches[0]!.label).toMatch(/ · running$/);
    expect(body.query).toBe(`fib-${u}`);
    expect(body.matches.map((m) => [m.kind, m.href])).toEqual([
      ["run", `/runs/fib-${u}?agentClass=ProbeAgent&agentName=${enc(A.agentName)}`],
      ["run", `/runs/fib-${u}?agentClass=SupportAgent&agentName=${enc(B.agentName)}`],
    ]);
    const one = await search(`req-${u}`, { Accept: "application/json" });
    expect(one.status).toBe(200);
    expect(((await one.json()) as { matches: unknown[] }).matches).toHaveLength(1);
  });

  it("an empty or oversized query is a 400 with a clear message", async () => {
    for (const path of ["/search", "/search?q=", "/search?q=%20%20"]) {
      const page = await getText(path, "viewer");
      expect(page.status, path).toBe(400);
      const refused = mustTestId(page.text, "error-message");
      expect(refused.attrs["data-code"], path).toBe("invalid_input");
      expect(refused.text, path).not.toBe("");
    }
    const long = await getText(`/search?q=${"x".repeat(201)}`, "viewer");
    expect(long.status).toBe(400);
    expect(mustTestId(long.text, "error-message").attrs["data-code"]).toBe("invalid_input");
    expect(mustTestId(long.text, "error-message").text).toContain("200");
    const json = await call("/search?q=", { as: "viewer", headers: { Accept: "application/json" } });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ ok: false, error: { code: "invalid_input" } });
  });

  it("is behind auth like every page", async () => {
    const r = await call(`/search?q=${enc(incident.incidentId)}`);
    expect([401, 403]).toContain(r.status);
  });
});

describe("the header's search box and time zone toggle", () => {
  it.each(["/", "/incidents", "/runs", "/sessions", "/ops", "/audit", "/backups", `/search?q=nothing-${u}`])("%s", async (path) => {
    const page = await getText(path, "viewer");
    expect(page.status).toBe(200);
    const form = findAll(page.text, "role", "search");
    expect(form.map((f) => [f.tag, f.attrs.method, f.attrs.action])).toEqual([["form", "get", "/search"]]);
    // A labelled box (its label is for screen readers), a time zone toggle time.js reveals, and time.js itself.
    expect(findAll(form[0]!.html, "for", "global-search")[0]?.text).toBeTruthy();
    expect(findAll(form[0]!.html, "id", "global-search")[0]?.attrs).toMatchObject({ type: "search", name: "q" });
    expect(findAll(page.text, "id", "tz-toggle")[0]?.attrs).toMatchObject({ "aria-pressed": "false", hidden: "" });
    expect(findAll(page.text, "src", asset("time.js"))[0]?.attrs).toMatchObject({ defer: "" });
  });
});

describe("relative since on the lists", () => {
  it("since=1h keeps the relative form in the presets and marks the active one", async () => {
    const page = await getText(`/incidents?reason=stable_timeout&since=1h`, "viewer");
    expect(page.status).toBe(200);
    expect(page.text).toContain(`req-${u}:m1`);
    const presets = findAll(mustTestId(page.text, "time-presets").html, "href");
    expect(presets.filter((a) => a.attrs["aria-current"] === "true").map((a) => [a.text, a.attrs.href])).toEqual([
      ["1h", "/incidents?reason=stable_timeout&since=1h"],
    ]);
    expect(presets.find((a) => a.text === "15m")?.attrs.href).toBe("/incidents?reason=stable_timeout&since=15m");
    // Times are <time> elements in UTC, which time.js may rewrite.
    const times = findAll(page.text, "data-relative");
    expect(times.length).toBeGreaterThan(0);
    for (const t of times) {
      expect(t.tag).toBe("time");
      expect(t.attrs.datetime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it.each(["/incidents", "/runs", "/sessions", "/ops", "/audit"])("%s offers the presets and accepts since=7d", async (path) => {
    const page = await getText(`${path}?since=7d`, "viewer");
    expect(page.status).toBe(200);
    const current = findAll(mustTestId(page.text, "time-presets").html, "aria-current", "true");
    expect(current.map((a) => [a.text, a.attrs.href])).toEqual([["7d", `${path}?since=7d`]]);
  });

  it.each(["/incidents?since=1y", "/runs?since=tomorrow", "/sessions?since=-1h", "/ops?since=0m", "/audit?since=1h&until=2h"])(
    "%s is a 400 with a clear message",
    async (path) => {
      const page = await getText(path, "viewer");
      expect(page.status).toBe(400);
      const refused = mustTestId(page.text, "error-message");
      expect(refused.attrs["data-code"]).toBe("invalid_input");
      expect(refused.text).toContain("since");
    },
  );
});
