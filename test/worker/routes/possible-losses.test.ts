import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { beforeAll, describe, expect, it } from "vitest";
import type { PossibleLosses } from "../../../src/store/read-models/possible-losses";
import { consoleConfig } from "../../../worker/config";
import type { Env } from "../../../worker/env";
import { handleDeadLetterBatch } from "../../../worker/ingest/consumer";
import { deadLetterStatements } from "../../../worker/ingest/dead-letters";
import { handleTail } from "../../../worker/tail";
import { makeEvent } from "../../fixtures/events";
import { ingest } from "../../store/store-helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, findAll, mustTestId } from "../html";
import { call, getText } from "./harness";

// Possible losses, counted where a person sees them: each kind is seeded on its real path (reconciliation's findings
// through ingest, the tail handler's cut, unreadable and refused items, ingest's refusal, the dead-letter Queue), and
// every figure on the overview and the agent page must equal what was seeded, and link to a list of exactly those.

const NOW = Date.now();
const DAY = 86_400_000;

/** A run's start and reconciliation's finding about it, as ingest stores them. */
function runWithFinding(agentName: string, kind: "fiber" | "task" | "managed_fiber", runId: string, finding: "unknown" | "ended_unreported"): TelemetryEvent[] {
  const start =
    kind === "task"
      ? makeEvent("task.accepted", { definition: "invoice" }, { agentName, corr: { taskId: runId } })
      : makeEvent("fiber.started", { fiberName: "etl", ...(kind === "managed_fiber" ? { managed: true } : {}) }, { agentName, corr: { fiberId: runId } });
  const corr = kind === "task" ? { taskId: runId } : { fiberId: runId };
  return [start, makeEvent("run.reconciled", { kind, runId, finding, detail: "seeded" }, { agentName, corr })];
}

/** A trace item of one TailedAgent invocation, as the runtime forwards it. */
function item(name: string, messages: { type: string; payload: Record<string, unknown> }[], over: Partial<TailItem> = {}): TailItem {
  return {
    scriptName: null,
    durableObjectId: crypto.randomUUID().replace(/-/g, ""),
    eventTimestamp: NOW,
    truncated: false,
    diagnosticsChannelEvents: messages.map((m) => ({
      timestamp: NOW,
      channel: `agents:${m.type.split(":")[0]}`,
      message: { ...m, agent: "TailedAgent", name, timestamp: NOW },
    })),
    ...over,
  };
}
const started = (fiberId: string) => ({ type: "fiber:run:started", payload: { fiberId, fiberName: "import", managed: false } });

const getJson = async <T>(path: string): Promise<T> => {
  const r = await call(path, { as: "viewer", headers: { Accept: "application/json" } });
  expect(r.status, path).toBe(200);
  return (await r.json()) as T;
};

/** Every row of a list, through all its pages (JSON). */
async function rowsOf<T>(href: string): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const u = new URL(href, "https://x");
    u.searchParams.set("limit", "2");
    if (cursor) u.searchParams.set("cursor", cursor);
    const page: { items: T[]; next: string | null } = await getJson(`${u.pathname}${u.search}`);
    rows.push(...page.items);
    if (!page.next) return rows;
    cursor = page.next;
  }
  throw new Error(`${href}: too many pages`);
}

/** The figures (data-figure links) inside an element of the page, with their hrefs. */
const figuresIn = (html: string) => findAll(html, "data-figure").map((f) => ({ n: Number(f.attrs["data-figure"]), href: f.attrs.href! }));

beforeAll(async () => {
  await publishEnvTeamKeys();
  // Runs whose end the console does not know: two agents, three kinds; and runs it does know, which must not count.
  await ingest(
    [
      ...runWithFinding("loss-a", "fiber", "f-u1", "unknown"),
      ...runWithFinding("loss-a", "fiber", "f-u2", "unknown"),
      ...runWithFinding("loss-a", "task", "t-e1", "ended_unreported"),
      ...runWithFinding("loss-b", "managed_fiber", "m-u1", "unknown"),
      makeEvent("fiber.started", { fiberName: "etl" }, { agentName: "loss-a", corr: { fiberId: "f-run" } }),
      makeEvent("fiber.started", { fiberName: "etl" }, { agentName: "loss-a", corr: { fiberId: "f-ok" } }),
      makeEvent("fiber.failed", { fiberName: "etl", error: "boom" }, { agentName: "loss-a", corr: { fiberId: "f-ok" } }),
    ],
    NOW,
  );
  // Events lost on the way in: one item the runtime cut short, one unreadable message, two events the Queue refused.
  const cut = item("tail-loss", [started("tl-1")], { truncated: true });
  const garbled: TailItem = { ...item("tail-loss", []), diagnosticsChannelEvents: [{ timestamp: NOW, channel: "agents:fiber", message: "not an event" }] };
  expect(await handleTail([cut, garbled], env as Env)).toMatchObject({ losses: 2 });
  const refusing = { ...env, TELEMETRY_QUEUE: { send: () => Promise.reject(new Error("full")), sendBatch: () => Promise.reject(new Error("full")) } };
  expect(await handleTail([item("tail-loss", [started("tl-2"), started("tl-3")])], refusing as unknown as Env)).toMatchObject({ sendFailed: 2 });
  // One event ingest refuses (no type it knows), one message the Queue gave up delivering.
  await ingest([{ v: 1, id: "bogus-1", time: NOW - 1000, type: "no.such.event", source: { agentClass: "ProbeAgent", agentName: "loss-a" } }], NOW);
  await handleDeadLetterBatch(
    {
      queue: "agent-telemetry",
      messages: [{ id: "undelivered-1", attempts: 4, body: "{}" }],
      ackAll() {},
      retryAll() {},
    } as unknown as MessageBatch<unknown>,
    env as unknown as { DB: D1Database },
  );
  // A loss of two days ago: in the list without a time bound, not in the last 24 h.
  await env.DB.batch(deadLetterStatements(env.DB, [{ messageId: "old-cut", reason: "unreadable message on old", eventType: null, body: "{}" }], NOW - 2 * DAY));
});

describe("possible losses", () => {
  it("the overview counts each kind as seeded, and each count links to exactly what it counts", async () => {
    const { losses } = await getJson<{ losses: PossibleLosses }>("/");
    console.log(`[possible-losses] rows read: ${losses.rowsRead}`);
    expect(losses.runs).toEqual({ unknown: { n: 3, capped: false }, ended_unreported: { n: 1, capped: false } });
    expect(losses.lost).toMatchObject({ byKind: { truncated: 1, unreadable: 1, refused: 2, ingest: 1, undelivered: 1 }, capped: false });
    // Every class the console may act on from which no event came: the bound classes whose agent list is empty. The
    // main suite shares one runtime, so another file's agent (an alarm, a reconciliation's finding still in the Queue)
    // may report while this one runs: the list a person would follow decides, and ProbeAgent, seeded here, is heard.
    const bound = consoleConfig(env as Env).agentClasses;
    expect(bound).toContain("ProbeAgent");
    const heard = new Set<string>();
    for (const c of bound) if ((await getJson<{ items: unknown[] }>(`/agents?agentClass=${c}&limit=1`)).items.length) heard.add(c);
    expect(heard.has("ProbeAgent")).toBe(true);
    expect(losses.unheardClasses).toEqual(bound.filter((c) => !heard.has(c)));
    // Bounded by what it counts, never by the store: the not-known runs' index rows (plus the merge's look-ahead, one
    // per kind and outcome), the 24 h's dead letters (plus one), at most one agents row per bound class.
    expect(losses.rowsRead).toBeLessThanOrEqual(4 + 2 * 4 + (6 + 1) + bound.length);

    const html = (await getText("/partials/overview", "viewer")).text;
    const section = mustTestId(html, "possible-losses");
    const figures = figuresIn(section.html);
    expect(figures.map((f) => f.n).sort()).toEqual([1, 1, 1, 1, 1, 2, 3].sort());
    for (const f of figures) expect((await rowsOf(f.href)).length, f.href).toBe(f.n);
    // Exactly the seeded rows, not only as many.
    const runsOf = async (testId: string) => {
      const href = figuresIn(mustTestId(section.html, testId).html)[0]!.href;
      return (await rowsOf<{ agentName: string; runId: string }>(href)).map((r) => `${r.agentName} ${r.runId}`).sort();
    };
    expect(await runsOf("loss-runs-unknown")).toEqual(["loss-a f-u1", "loss-a f-u2", "loss-b m-u1"]);
    expect(await runsOf("loss-runs-ended_unreported")).toEqual(["loss-a t-e1"]);
    const lettersOf = async (kind: string) => {
      const href = figuresIn(mustTestId(section.html, `loss-events-${kind}`).html)[0]!.href;
      return (await rowsOf<{ kind: string; eventType: string | null; messageId: string }>(href)).map((d) => [d.kind, d.eventType]);
    };
    expect(await lettersOf("refused")).toEqual([
      ["refused", "fiber.started"],
      ["refused", "fiber.started"],
    ]);
    expect(await lettersOf("truncated")).toEqual([["truncated", null]]);
    expect(await lettersOf("unreadable")).toEqual([["unreadable", null]]);
    expect(await lettersOf("undelivered")).toEqual([["undelivered", null]]);
    expect(await lettersOf("ingest")).toEqual([["ingest", "no.such.event"]]);
    // The page a person follows lists the same rows, each with its kind.
    const refusedPage = (await getText(figuresIn(mustTestId(section.html, "loss-events-refused").html)[0]!.href, "viewer")).text;
    expect(findAll(refusedPage, "data-testid", "dead-letter").map((r) => r.attrs["data-kind"])).toEqual(["refused", "refused"]);
    // The old loss is kept and listed, but outside the overview's 24 h.
    expect((await rowsOf<{ messageId: string }>("/dead-letters?kind=unreadable")).map((d) => d.messageId)).toContain("old-cut");
    // The classes never heard from, each linking to its (empty) agent list.
    const unheard = mustTestId(section.html, "loss-unheard-classes");
    expect(Number(unheard.attrs["data-count"])).toBe(losses.unheardClasses.length);
    for (const a of findAll(unheard.html, "href").slice(0, 2)) expect(await rowsOf(a.attrs.href!)).toEqual([]);
    expect(byTestId(html, "no-possible-losses")).toBeUndefined();
  });

  it("an agent's page counts its own runs whose end is not known, linking to exactly those", async () => {
    for (const [name, want] of [
      ["loss-a", { unknown: 2, ended_unreported: 1 }],
      ["loss-b", { unknown: 1, ended_unreported: 0 }],
    ] as const) {
      const html = (await getText(`/agents/ProbeAgent/${name}`, "viewer")).text;
      const line = mustTestId(html, "agent-not-known");
      expect(line.attrs["data-runs"]).toBe(String(want.unknown + want.ended_unreported));
      for (const o of ["unknown", "ended_unreported"] as const) {
        const fig = byTestId(line.html, `agent-not-known-${o}`);
        if (!want[o]) {
          expect(fig).toBeUndefined();
          continue;
        }
        expect(Number(fig!.attrs["data-figure"])).toBe(want[o]);
        const rows = await rowsOf<{ agentName: string; status: string }>(fig!.attrs.href!);
        expect(rows.map((r) => [r.agentName, r.status])).toEqual(Array.from({ length: want[o] }, () => [name, o]));
      }
    }
    // An agent with no such run says so, in what it counted.
    await ingest([makeEvent("fiber.started", { fiberName: "etl" }, { agentName: "loss-c", corr: { fiberId: "c-1" } })], NOW);
    const none = mustTestId((await getText("/agents/ProbeAgent/loss-c", "viewer")).text, "agent-not-known");
    expect(none.attrs["data-runs"]).toBe("0");
    expect(none.text).toContain("No run of this agent the console keeps has an end it does not know");
  });

  it("refuses a kind of loss it does not know, with a sentence", async () => {
    const r = await call("/dead-letters?kind=misplaced", { as: "viewer", headers: { Accept: "application/json" } });
    expect(r.status).toBe(400);
    expect(await r.text()).toContain("kind must be one of truncated, unreadable, refused, undelivered, ingest");
  });
});
