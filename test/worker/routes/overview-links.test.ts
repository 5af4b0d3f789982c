import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import type { IncidentRow } from "../../../src/store/read-models";
import { recordReconciliation } from "../../../src/store/reconciliations";
import { makeEvent } from "../../fixtures/events";
import { incidentScenarios } from "../../fixtures/incident-scenarios";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { call, getOverview } from "./harness";

// Every figure on the overview is a link to exactly what it counts: the test renders GET /, takes every link that
// carries a figure (data-figure), follows it in its JSON form through every page, and counts the rows (or, for the
// re-spent tokens, sums them). The store is seeded with real events through the real ingest: exhausted-then-failed
// chat incidents, force-idled open incidents and force-idled closed incidents among them.

const NOW = Date.now();
const HOUR = 3_600_000;
const T0 = NOW - 3 * HOUR;

/** Events of ProbeAgent `agentName` at `time`. */
const at = (agentName: string, time: number) => ({ agentName, time });

function runsAndOthers(agentName: string): TelemetryEvent[] {
  const e = <T extends TelemetryEvent["type"]>(type: T, payload: Extract<TelemetryEvent, { type: T }>["payload"], time: number, corr: TelemetryEvent["corr"]) =>
    makeEvent(type, payload as never, { ...at(agentName, time), corr });
  return [
    // Running runs of each kind; one fiber confirmed alive by reconciliation after its last event.
    e("fiber.started", { fiberName: "etl" }, T0 + 1000, { fiberId: "run-f1" }),
    e("fiber.started", { fiberName: "etl" }, T0 + 2000, { fiberId: "run-f2" }),
    e("run.reconciled", { kind: "fiber", runId: "run-f2", finding: "confirmed_running", detail: "still in cf_agents_runs" }, T0 + 60_000, {
      fiberId: "run-f2",
    }),
    e("fiber.started", { fiberName: "sync", managed: true }, T0 + 3000, { fiberId: "run-m1" }),
    e("task.accepted", { definition: "invoice" }, T0 + 4000, { taskId: "run-t1" }),
    e("chat.turn.started", {}, T0 + 5000, { requestId: "run-c1" }),
    // A finished run: never counted as running.
    e("fiber.started", { fiberName: "etl" }, T0 + 6000, { fiberId: "run-f3" }),
    e("fiber.completed", { fiberName: "etl" }, T0 + 7000, { fiberId: "run-f3" }),
    // An open ambiguous op and a resolved one.
    e("op.ambiguous", { opKind: "tool.charge_card", detail: "started, no completion" }, T0 + 8000, { opId: "op-1" }),
    e("op.ambiguous", { opKind: "tool.charge_card", detail: "started, no completion" }, T0 + 9000, { opId: "op-2" }),
    e("op.resolved", { opKind: "tool.charge_card", resolution: "verified_ran" }, T0 + 10_000, { opId: "op-2" }),
    // Chart series: compactions, and model usage (with an incident: re-spent by recovery; without: not).
    e("chat.context.compacted", { mode: "proactive", shortened: true }, T0 + 11_000, {}),
    e("chat.context.compacted", { mode: "reactive", shortened: false }, T0 + HOUR + 11_000, {}),
    e("model.usage", { inputTokens: 1200, outputTokens: 300, attempt: 2 }, T0 + 12_000, { incidentId: "open-then-idled", requestId: "req-open-then-idled" }),
    e("model.usage", { inputTokens: 700, outputTokens: 80, attempt: 1 }, T0 + 13_000, {
      incidentId: "exhausted-then-failed",
      requestId: "req-exhausted-then-failed",
    }),
    e("model.usage", { inputTokens: 5000, outputTokens: 900 }, T0 + 14_000, { requestId: "run-c1" }),
  ];
}

type Figure = { href: string; n: number; of: string | null; capped: boolean; text: string };

/** Decodes the entities hono escapes in attribute values. */
const unescapeAttr = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** Every <a> carrying data-figure in `html`, with its attributes. */
function figures(html: string): Figure[] {
  const out: Figure[] = [];
  for (const m of html.matchAll(/<a\s([^>]*)>([\s\S]*?)<\/a>/g)) {
    const attrs = Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, unescapeAttr(a[2]!)]));
    if (attrs["data-figure"] === undefined) continue;
    out.push({
      href: attrs.href!,
      n: Number(attrs["data-figure"]),
      of: attrs["data-figure-of"] ?? null,
      capped: attrs["data-figure-capped"] === "true",
      text: m[2]!.replace(/<[^>]+>/g, ""),
    });
  }
  return out;
}

const getJson = async <T>(path: string): Promise<T> => {
  const r = await call(path, { as: "viewer", headers: { Accept: "application/json" } });
  expect(r.status, path).toBe(200);
  return (await r.json()) as T;
};

/** Every row the list at `href` has, through every page of its JSON form. */
async function rowsOf(href: string): Promise<unknown[]> {
  const url = new URL(href, "https://x");
  if (url.pathname === "/stuck") return (await getJson<{ entries: unknown[] }>(href)).entries;
  const rows: unknown[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const u = new URL(url);
    u.searchParams.set("limit", "200");
    if (cursor) u.searchParams.set("cursor", cursor);
    const page: { items: unknown[]; next: string | null } = await getJson(`${u.pathname}${u.search}`);
    rows.push(...page.items);
    if (!page.next) return rows;
    cursor = page.next;
  }
  throw new Error(`${href}: more than 100 pages`);
}

const tokensOf = (rows: unknown[]) =>
  rows.reduce<number>((t, r) => {
    const p = (r as { payload: { inputTokens?: number; outputTokens?: number } }).payload;
    return t + (p.inputTokens ?? 0) + (p.outputTokens ?? 0);
  }, 0);

beforeAll(async () => {
  await publishEnvTeamKeys();
  const events: TelemetryEvent[] = [];
  for (const agentName of ["links-a", "links-b"]) {
    events.push(...incidentScenarios(agentName, T0 + 20_000).flatMap((s) => s.events), ...runsAndOthers(agentName));
  }
  // Agents that number their events: links-gap never got numbers 3 and 5 (two events missing); links-whole got all.
  for (const [agentName, seqs] of [
    ["links-gap", [1, 2, 4, 6]],
    ["links-whole", [1, 2]],
  ] as const) {
    for (const seq of seqs)
      events.push({
        ...makeEvent("session.status_running", { turnSeq: seq }, { ...at(agentName, T0 + 30_000 + seq * 1000), corr: { sessionName: agentName } }),
        seq,
      });
  }
  // Exhausted a day and a half ago: outside the 24 h figures and their lists.
  events.push(
    ...incidentScenarios("links-old", NOW - 36 * HOUR)
      .filter((s) => s.incidentId === "exhausted-then-failed")
      .flatMap((s) => s.events),
  );
  await ingest(events, NOW);
  // Reconciliation asked the two numbering agents: links-gap's Worker has no telemetry Queue binding, links-whole ships.
  for (const [agentName, pipeline] of [
    ["links-gap", "no_queue"],
    ["links-whole", null],
  ] as const)
    await recordReconciliation(env.DB, { agentClass: "ProbeAgent", agentName, askedAt: NOW - 1000, findings: 0, error: null, pipeline });
});

describe("the overview's figures lead to what they count", () => {
  it("every figure equals the rows of the list it links to", async () => {
    const page = await getOverview("viewer");
    expect(page.status).toBe(200);
    const found = figures(page.text);
    // Six cards, three figures per run kind, the top reasons, and the chart's totals, peaks and hourly cells.
    expect(found.length).toBeGreaterThan(6 + 3 * 4 + 3);
    const mismatches: string[] = [];
    for (const f of found) {
      expect(f.capped, `${f.href} is not capped in this store`).toBe(false);
      const rows = await rowsOf(f.href);
      const got = f.of === "tokens" ? tokensOf(rows) : rows.length;
      if (got !== f.n) mismatches.push(`${f.href}: figure ${f.n}, list ${got}`);
    }
    expect(mismatches).toEqual([]);
  });

  it("the figures count what was seeded, not only agree with themselves", async () => {
    const found = figures((await getOverview("viewer")).text);
    const card = (label: string) => found.find((f) => f.text.includes(label))!;
    // Per agent: idled-then-resumed is the one open incident.
    expect(card("Open incidents").n).toBe(2);
    // Per agent: exhausted-then-idled, idled-then-exhausted, exhausted-then-failed (±reason) and the turn; not links-old's.
    expect(card("Exhaustions (24 h)").n).toBe(2 * 5);
    expect(card("Running runs").n).toBe(2 * 5);
    expect(card("Ambiguous ops").n).toBe(2);
    expect(card("Tokens re-spent by recovery (24 h)")).toMatchObject({ n: 2 * (1500 + 780), of: "tokens" });
    // One agent has events missing: its list is that agent, with how many.
    const gaps = card("Agents with missing events");
    expect(gaps).toMatchObject({ n: 1, href: "/agents?gaps=true" });
    expect((await rowsOf(gaps.href)).map((a) => [(a as { agentName: string }).agentName, (a as { missing: number }).missing])).toEqual([["links-gap", 2]]);
    // One agent said its events cannot reach the console, and none arrived since: its list is that agent, with what it said.
    const blocked = card("Agents whose events cannot reach the console");
    expect(blocked).toMatchObject({ n: 1, href: "/agents?blocked=true" });
    expect((await rowsOf(blocked.href)).map((a) => [(a as { agentName: string }).agentName, (a as { pipeline: string }).pipeline])).toEqual([
      ["links-gap", "no_queue"],
    ]);
    // The exhausted-then-failed incidents are listed as exhausted, with the exhaustion's reason.
    const exhausted = (await rowsOf(card("Exhaustions (24 h)").href)) as IncidentRow[];
    expect(
      exhausted
        .filter((i) => i.incidentId === "exhausted-then-failed")
        .map((i) => [i.agentName, i.status, i.reason])
        .sort(),
    ).toEqual([
      ["links-a", "exhausted", "max_attempts_exceeded"],
      ["links-b", "exhausted", "max_attempts_exceeded"],
    ]);
    // Force-idled closed incidents keep their root cause in the exhausted list.
    expect(
      exhausted.filter((i) => i.incidentId === "exhausted-then-idled").every((i) => i.reason === "max_attempts_exceeded" && i.closedBy === "force_idled"),
    ).toBe(true);
    // The top reason max_attempts_exceeded (2 per agent) leads to those incidents, not to "No incidents match".
    const top = found.find((f) => f.href.startsWith("/incidents?") && new URL(f.href, "https://x").searchParams.get("reason") === "max_attempts_exceeded")!;
    expect(top.n).toBe(4);
    // Running, confirmed by the agent: the one reconciled fiber per agent.
    const confirmed = found.filter((f) => new URL(f.href, "https://x").searchParams.get("confirmed") === "true" && f.n > 0);
    expect(confirmed.map((f) => [new URL(f.href, "https://x").searchParams.get("kind"), f.n])).toEqual([["fiber", 2]]);
  });

  it("'Worst open incidents' shows open incidents only", async () => {
    const data = await getJson<{ worst: IncidentRow[] }>("/");
    expect(data.worst.length).toBe(2);
    for (const i of data.worst) expect([i.incidentId, i.status]).toEqual(["idled-then-resumed", "open"]);
    const html = (await getOverview("viewer")).text;
    const table = /<table data-testid="worst-incidents">([\s\S]*?)<\/table>/.exec(html)![1]!;
    expect(table.match(/<tr>/g)!.length - 1).toBe(2);
    expect(table).not.toContain("exhausted");
  });
});
