import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { exhaustedIncidentsIn, openAmbiguousOpsIn } from "../../src/store/alerts";
import { partitionFor, partitionOf, type Store, singleStore } from "../../src/store/partitions";
import { exhaustingSoon } from "../../src/store/read-models/budget";
import { listDeploys } from "../../src/store/read-models/deploys";
import { countAgentsWithGaps } from "../../src/store/read-models/event-gaps";
import { agentsWithGapsIn, blockedAgentsIn, bulkTargetsIn, gapAgentsDueIn, staleAgentsIn } from "../../src/store/read-models/merged";
import { respentLastHourIn } from "../../src/store/read-models/merged-alerts";
import { deployStormsIn, incidentsOpenedInStore, listDeploysIn, previousDeployIn, versionFiguresIn } from "../../src/store/read-models/merged-deploys";
import {
  alarmRatesIn,
  countStuckIn,
  eventSeriesIn,
  exhaustingSoonIn,
  listStuckIn,
  overviewCountsIn,
  residentEstimateIn,
  topReasonsIn,
} from "../../src/store/read-models/merged-overview";
import { lastReconciliation, openWorkOf } from "../../src/store/read-models/open-work";
import { overviewNowIn } from "../../src/store/read-models/overview-now";
import type { Page } from "../../src/store/read-models/paging";
import { countAlarmLoopsIn } from "../../src/store/read-models/residency";
import { countStuck, listStuck, STUCK_RULES } from "../../src/store/read-models/stuck";
import { recordReconciliation } from "../../src/store/reconciliations";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { patient } from "../patience";
import { empty } from "./store-helpers";

/**
 * The overview's and the stuck page's reads over a partitioned store (merged-overview.ts) against one database:
 * the same fleet is ingested into a store of one D1 database and into one of two, and every figure, series, top
 * list and stuck finding must be what the one database gives, whatever partition each agent landed in.
 */

const P1 = env.DB_P1!;
const MIN = 60_000;
/** The fleet's "now": every read is asked as of it, so the answers do not move while the test runs. */
const NOW = Math.floor(Date.now() / MIN) * MIN - 5 * MIN;
const CLASSES = ["ProbeAgent", "SupportAgent"];
const REASONS = ["no_progress_timeout", "max_attempts_exceeded", "work_budget_exceeded", "stable_timeout", "recovery_aborted"] as const;

/**
 * 40 agents over two classes: stale open runs (no_progress), incidents open with no attempt for an hour, incidents
 * attempting fast (exhausting soon), exhausted ones with several reasons, ambiguous ops, re-spent tokens, alarm
 * loops, missing sequence numbers (gaps), and Worker versions first seen at different times in each partition.
 */
function fleet(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let a = 0; a < 40; a++) {
    const agentClass = CLASSES[a % 2]!;
    const agentName = `ov-${a}`;
    const own: TelemetryEvent[] = [];
    const add = (e: TelemetryEvent, time: number) => own.push({ ...e, time, source: { agentClass, agentName } });
    if (a % 2 === 0) add(makeEvent("fiber.started", { fiberName: "etl" }, { corr: { fiberId: `run-${a}` } }), NOW - 120 * MIN + a * 1000);
    if (a % 3 === 0) {
      const corr = { incidentId: `stale-${a}`, requestId: `r-${a}` };
      const base = { maxAttempts: 5, recoveryKind: "retry" as const };
      add(makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { corr }), NOW - 90 * MIN + a * 1000);
      add(makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { corr }), NOW - 89 * MIN + a * 1000);
    }
    if (a % 3 === 1) {
      const corr = { incidentId: `fast-${a}`, requestId: `r-${a}` };
      const base = { maxAttempts: 5, recoveryKind: "continue" as const };
      add(makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { corr }), NOW - 4 * MIN);
      for (let i = 0; i < 3; i++) add(makeEvent("chat.recovery.attempt", { ...base, attempt: i + 1 }, { corr }), NOW - (4 - i) * MIN + (a % 5) * 3_000);
      const usage = { inputTokens: 100 + a, outputTokens: 10 };
      add(makeEvent("model.usage", { ...usage, attempt: 2 }, { corr }), NOW - 3 * MIN);
    }
    if (a % 4 !== 3) {
      const corr = { incidentId: `done-${a}`, requestId: `rd-${a}` };
      const base = { maxAttempts: 3, recoveryKind: "retry" as const };
      add(makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { corr }), NOW - 60 * MIN + a * 1000);
      add(makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: REASONS[(a * 7) % 5]! }, { corr }), NOW - 59 * MIN + a * 1000);
    }
    if (a % 5 === 1) {
      for (let i = 0; i < 12; i++) add(makeEvent("schedule.executed", { callback: "tick", scheduleId: "s1" }), NOW - (12 - i) * 2 * MIN);
    }
    if (a % 6 === 2) add(makeEvent("op.ambiguous", { opKind: "tool.charge", detail: `op ${a}` }, { corr: { opId: `op-${a}` } }), NOW - 30 * MIN);
    // Numbered events; agents a % 4 === 0 skip one number (a gap); versions reach both partitions at different times.
    own.sort((x, y) => x.time - y.time);
    own.forEach((e, i) => {
      const ver = `v${(a % 3) + (i > 1 ? 1 : 0)}`;
      out.push({ ...e, seq: i + 1 + (a % 4 === 0 && i > 0 ? 1 : 0), ver } as TelemetryEvent);
    });
  }
  return out;
}

/** Drops rowsRead (a merged read reads every partition) at any depth of an answer. */
const facts = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (k, v) => (k === "rowsRead" ? undefined : v)));

/**
 * Reconciliation asked some agents (its record lives in each agent's partition): some recently, some with an alarm
 * long overdue, some saying their events cannot reach the console (agents ov-21 and ov-36 were heard from since).
 */
async function reconcileSome(store: Store): Promise<void> {
  for (let a = 0; a < 40; a += 3) {
    const agent = { agentClass: CLASSES[a % 2]!, agentName: `ov-${a}` };
    const nextAlarmAt = a % 2 ? NOW - (30 + a) * MIN : null;
    await recordReconciliation(partitionFor(store, agent.agentClass, agent.agentName), {
      ...agent,
      askedAt: NOW - 2 * MIN,
      findings: 0,
      error: null,
      nextAlarmAt,
      pipeline: a % 9 === 0 ? "no_queue" : a % 9 === 3 ? "failing" : null,
    });
  }
}

/** Every page of a list, each as its items and its cursor (at most 100 pages). */
async function pagesOf(read: (after: string | null) => Promise<Page<unknown>>): Promise<[unknown[], string | null][]> {
  const pages: [unknown[], string | null][] = [];
  let after: string | null = null;
  do {
    const p = await read(after);
    pages.push([p.items, p.next]);
    after = p.next;
  } while (after && pages.length < 100);
  return pages;
}

/** Everything the merged overview and stuck reads answer on this store. */
async function readAll(store: Store) {
  const out: Record<string, unknown> = {};
  for (const cap of [1000, 5, 2]) out[`counts/${cap}`] = await overviewCountsIn(store, NOW, cap);
  for (const w of [7, 19]) out[`gaps/${w}`] = (await overviewCountsIn(store, NOW, 1000, w)).agentsWithGaps;
  out.series = await eventSeriesIn(store, { since: NOW - 3 * 3_600_000, until: NOW }, NOW);
  // The first screen: recent figures, their windows (exact under 5 min), the hour chart, the capped 24 h exhaustions and
  // the burning classes (and no alerts here).
  for (const minutes of [0.5, 4, 15, 60]) out[`now/${minutes}`] = await overviewNowIn(store, NOW, minutes * MIN);
  out["series types"] = await eventSeriesIn(store, { since: NOW - 3 * 3_600_000, until: NOW, types: "schedule.executed,model.usage,fiber.started" }, NOW);
  for (const limit of [1, 3, 10]) out[`reasons/${limit}`] = await topReasonsIn(store, { since: NOW - 3 * 3_600_000, limit }, NOW);
  for (const limit of [1, 4, 200])
    for (const rule of [undefined, ...STUCK_RULES])
      for (const agentClass of [undefined, "SupportAgent"])
        out[`stuck/${limit}/${rule}/${agentClass}`] = await listStuckIn(store, NOW, undefined, { rule, agentClass, limit });
  for (const cap of [3, 200]) out[`stuck count/${cap}`] = await countStuckIn(store, NOW, undefined, cap);
  for (const limit of [1, 2, 50])
    for (const since of [0, NOW - 100 * MIN, NOW - 30 * MIN]) out[`deploys/${limit}/${since}`] = await listDeploysIn(store, { since, until: NOW, limit });
  for (const d of await listDeploysIn(store, { since: 0, until: NOW }))
    out[`previous of ${d.version}`] = [
      await previousDeployIn(store, d),
      await incidentsOpenedInStore(store, d.version, d.firstSeen, NOW),
      await incidentsOpenedInStore(store, d.version, NOW - 60 * MIN, NOW - 30 * MIN),
    ];
  for (const factor of [0.5, 1, 3]) out[`storms/${factor}`] = await deployStormsIn(store, NOW, { windowMs: 90 * MIN, factor, minIncidents: 1 });
  out.figures = await versionFiguresIn(store, ["v0", "v1", "v2", "v3", "v-none"]);
  for (const limit of [1, 3, 20]) out[`exhausting/${limit}`] = await exhaustingSoonIn(store, NOW, 60 * MIN, limit);
  out.loops = await countAlarmLoopsIn(store, NOW);
  const bulkFilters = [
    { agentClass: "SupportAgent" },
    { incidentReason: "max_attempts_exceeded" },
    { incidentReason: "no_progress_timeout", openOnly: "true" },
    { status: "running_runs" },
    { status: "open_incidents", agentClass: "ProbeAgent" },
    { stuckRule: "no_progress" },
    { stuckRule: "incident_no_attempt", status: "open_incidents" },
  ];
  for (const f of bulkFilters) for (const cap of [3, 500]) out[`bulk/${JSON.stringify(f)}/${cap}`] = await bulkTargetsIn(store, NOW, f, { cap });
  for (const limit of [2, 50]) {
    out[`stale/${limit}`] = await staleAgentsIn(store, NOW - 10 * MIN, limit);
    out[`gap visits/${limit}`] = await gapAgentsDueIn(store, NOW - 10 * MIN, limit);
  }
  for (const a of [0, 3, 4, 9]) {
    const agent = { agentClass: CLASSES[a % 2]!, agentName: `ov-${a}` };
    const db = partitionFor(store, agent.agentClass, agent.agentName);
    out[`open work ${a}`] = [await openWorkOf(db, agent), await lastReconciliation(db, agent)];
  }
  const keys = Array.from({ length: 40 }, (_, a) => ({ agentClass: CLASSES[a % 2]!, agentName: `ov-${a}` })).flatMap((agent, a) => [
    { id: `done-${a}`, ...agent },
    { id: `fast-${a}`, ...agent },
    { id: `op-${a}`, ...agent },
  ]);
  out.exhaustedAlerts = await exhaustedIncidentsIn(store, keys);
  out.opAlerts = await openAmbiguousOpsIn(store, keys);
  out.respent = await respentLastHourIn(store, NOW);
  for (const limit of [1, 3, 100])
    for (const loopsOnly of [false, true]) out[`rates/${limit}/${loopsOnly}`] = await alarmRatesIn(store, { now: NOW, loopsOnly, limit });
  for (const a of [1, 6, 11, 16]) {
    const agent = { agentClass: CLASSES[a % 2]!, agentName: `ov-${a}` };
    out[`rates of ${a}`] = await alarmRatesIn(store, { now: NOW, agent });
    out[`resident ${a}`] = await residentEstimateIn(store, agent, NOW);
  }
  for (const limit of [1, 3, 50])
    for (const agentClass of [undefined, "SupportAgent"]) {
      out[`gaps list/${limit}/${agentClass}`] = await pagesOf((after) => agentsWithGapsIn(store, { limit, after, agentClass }));
      out[`blocked list/${limit}/${agentClass}`] = await pagesOf((after) => blockedAgentsIn(store, { limit, after, agentClass }));
    }
  return facts(out) as Record<string, unknown>;
}

it("a store of two partitions answers the overview's and the stuck page's reads exactly as one database does", { timeout: patient(120_000) }, async () => {
  const events = fleet();
  const msgs = () => events.map((body, i) => ({ id: `mo-${i}`, body }));
  const parts = new Set(events.map((e) => partitionOf(e.source.agentClass, e.source.agentName, 2)));
  expect([...parts].sort()).toEqual([0, 1]);

  await empty(env.DB);
  await empty(P1);
  expect((await ingestIntoStore(singleStore(env.DB), msgs(), { now: NOW })).stored).toBe(events.length);
  await reconcileSome(singleStore(env.DB));
  const single = await readAll(singleStore(env.DB));
  // The one-database answers are the read models' own (the wrappers add nothing on one partition) …
  const db = env.DB;
  expect(single["stuck/200/undefined/undefined"]).toEqual(facts(await listStuck(db, NOW, undefined, { limit: 200 })));
  expect(single["stuck count/3"]).toEqual(await countStuck(db, NOW, undefined, 3));
  expect(single["deploys/50/0"]).toEqual(await listDeploys(db, { since: 0, until: NOW, limit: 50 }));
  expect(single["exhausting/20"]).toEqual(facts(await exhaustingSoon(db, NOW, 60 * MIN, 20)));
  const { rowsRead: _, ...gaps7 } = await countAgentsWithGaps(db, 7);
  expect(single["gaps/7"]).toEqual(gaps7);

  await empty(env.DB);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  expect((await ingestIntoStore(two, msgs(), { now: NOW })).stored).toBe(events.length);
  await reconcileSome(two);
  const merged = await readAll(two);

  // Not vacuous: every figure has something to count, and the small caps and limits cut.
  const counts = single["counts/1000"] as Record<string, { n: number; capped: boolean }>;
  for (const k of ["running", "openIncidents", "exhaustions24h", "ambiguousOps", "agentsWithGaps", "agentsBlocked"]) expect(counts[k]!.n, k).toBeGreaterThan(2);
  expect((single["counts/5"] as { agentsBlocked: unknown }).agentsBlocked).toEqual({ n: 5, capped: true });
  expect((single["blocked list/50/undefined"] as [unknown[]][])[0]![0]).toHaveLength(counts.agentsBlocked!.n);
  expect(single["counts/1000"]).toMatchObject({ respentTokens24h: expect.any(Number) });
  expect((single["counts/1000"] as { respentTokens24h: number }).respentTokens24h).toBeGreaterThan(0);
  expect((single["counts/2"] as { running: { capped: boolean } }).running.capped).toBe(true);
  expect((single["gaps/7"] as { capped: boolean }).capped).toBe(true);
  expect((single["reasons/10"] as { reasons: unknown[] }).reasons.length).toBeGreaterThan(3);
  const stuckRules = new Set((single["stuck/200/undefined/undefined"] as { rule: string }[]).map((e) => e.rule));
  expect([...stuckRules].sort()).toEqual(["alarm_overdue", "incident_no_attempt", "no_progress"]);
  expect((single['bulk/{"stuckRule":"no_progress"}/500'] as { targets: unknown[] }).targets.length).toBeGreaterThan(5);
  expect((single['bulk/{"status":"running_runs"}/3'] as { capped: boolean }).capped).toBe(true);
  expect((single["stale/50"] as unknown[]).length).toBeGreaterThan(5);
  expect((single["gap visits/50"] as unknown[]).length).toBeGreaterThan(3);
  expect(JSON.stringify(single["open work 0"])).toContain("askedAt");
  expect(single["stuck count/3"]).toEqual({ n: 3, capped: true });
  expect((single["deploys/50/0"] as unknown[]).length).toBeGreaterThan(2);
  expect(
    (single.figures as { figures: { incidents: number; exhausted: number }[] }).figures.filter((f) => f.incidents > 0 && f.exhausted > 0).length,
  ).toBeGreaterThan(1);
  expect(Object.keys(single).filter((k) => k.startsWith("previous of ") && (single[k] as unknown[])[0] !== null).length).toBeGreaterThan(1);
  expect((single["storms/0.5"] as unknown[]).length).toBeGreaterThan(0);
  expect((single["exhausting/20"] as { items: unknown[] }).items.length).toBeGreaterThan(3);
  expect((single.loops as { n: number }).n).toBeGreaterThan(1);
  expect((single.exhaustedAlerts as unknown[]).length).toBeGreaterThan(10);
  expect((single.opAlerts as unknown[]).length).toBeGreaterThan(3);
  expect((single.respent as { agents: unknown[]; classes: unknown[] }).classes.length).toBe(2);
  expect((single["rates/100/false"] as { items: unknown[] }).items.length).toBeGreaterThan(3);
  expect((single["resident 6"] as { segments: number }).segments).toBeGreaterThan(0);
  expect((single["gaps list/3/undefined"] as unknown[]).length).toBeGreaterThan(2);
  expect(JSON.stringify(single.series)).toMatch(/[1-9]/);
  type Now = { figures: { key: string; recent: number; chart: number }[]; exhaustions24h: { n: number } };
  const now60 = single["now/60"] as Now;
  expect(now60.figures.find((f) => f.key === "attempts")!.recent).toBeGreaterThan(3);
  expect(now60.figures.find((f) => f.key === "exhausted")!.chart).toBeGreaterThan(3);
  expect(now60.exhaustions24h.n).toBe(counts.exhaustions24h!.n);

  for (const key of Object.keys(single)) expect(merged[key], key).toEqual(single[key]);
  await empty(env.DB);
  await empty(P1);
});

it("the previous deploy over partitions is the version first seen just before, wherever it was seen first", async () => {
  // One database holds each version's earliest first_seen; partitions each hold their own. Version b reached
  // partition 0 late (30) but partition 1 early (5): partition 0's own previous of c (b) is not the store's (a).
  await empty(env.DB);
  await empty(P1);
  const put = (db: D1Database, rows: [string, number][]) =>
    db.batch(rows.map(([v, t]) => db.prepare("INSERT INTO deploys (version, first_seen) VALUES (?, ?)").bind(v, t)));
  await put(env.DB, [
    ["a", 10],
    ["b", 5],
    ["c", 50],
  ]);
  const c = { version: "c", firstSeen: 50 };
  const one = await previousDeployIn(singleStore(env.DB), c);
  expect(one).toEqual({ version: "a", firstSeen: 10 });
  await empty(env.DB);
  await put(env.DB, [
    ["a", 10],
    ["b", 30],
    ["c", 50],
  ]);
  await put(P1, [["b", 5]]);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  expect(await previousDeployIn(two, c)).toEqual(one);
  expect(await previousDeployIn(two, { version: "a", firstSeen: 10 })).toEqual({ version: "b", firstSeen: 5 });
  expect(await listDeploysIn(two, { since: 0, until: 100 })).toEqual([c, { version: "a", firstSeen: 10 }, { version: "b", firstSeen: 5 }]);
  await empty(env.DB);
  await empty(P1);
});
