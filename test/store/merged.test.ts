import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { partitionOf, type Store, singleStore } from "../../src/store/partitions";
import { AmbiguousOwner } from "../../src/store/read-models/errors";
import { INCIDENT_GROUPS } from "../../src/store/read-models/incidents";
import {
  countIncidentsIn,
  findAgentIn,
  getIncidentIn,
  getSessionIn,
  getStoredRunIn,
  groupIncidentsIn,
  listAgentsIn,
  listAmbiguousOpsIn,
  listBackupsIn,
  listIncidentsIn,
  listRunsIn,
  listSessionsIn,
  mergePages,
} from "../../src/store/read-models/merged";
import type { Page, PageOptions } from "../../src/store/read-models/paging";
import { ingestIntoStore } from "../../worker/ingest/consumer";
import { chatIncidentLife, fiberLife, makeEvent } from "../fixtures/events";
import { patient } from "../patience";
import { empty } from "./store-helpers";

/**
 * The merged read models (src/store/read-models/merged.ts) against the single-database ones: the same fleet is
 * ingested into a store of one D1 database and into one of two, and every merged list, count and lookup must
 * give what the one database gives (items and cursors page by page), whatever partition each agent landed in.
 */

const P1 = env.DB_P1!;
const MIN = 60_000;
const T0 = Math.floor((Date.now() - 2 * 86_400_000) / MIN) * MIN;
const CLASSES = ["ProbeAgent", "SupportAgent"];
/** What "expired" is judged against: some of the fleet's backups expire before it, some after. */
const NOW = T0 + 6 * MIN;

/** 40 agents over two classes: runs, recoveries, sessions and ambiguous ops; times collide within minutes on purpose. */
function fleet(): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  const at = (agentClass: string, agentName: string, e: TelemetryEvent, time: number): TelemetryEvent => ({ ...e, time, source: { agentClass, agentName } });
  for (let a = 0; a < 40; a++) {
    const cls = CLASSES[a % 2]!;
    const name = `m-${a}`;
    // Several agents share a minute (listed_at) and some a millisecond (first_seen), so the tie-breaks are exercised.
    const base = T0 + Math.floor(a / 3) * MIN + (a % 3 === 2 ? 0 : (a % 3) * 7_000);
    const life = [...fiberLife(a % 7 === 0 ? "f-shared" : `f-${a}`, name), ...(a % 2 ? chatIncidentLife(`inc-${a}`, name) : [])];
    for (const [i, e] of life.entries()) out.push(at(cls, name, e, base + i * 100));
    const sessionName = a % 5 === 0 ? "shared-session" : `s-${a}`;
    const s = { sessionName };
    out.push(at(cls, name, makeEvent(a % 3 ? "session.status_running" : "session.status_idle", { turnSeq: 1 }, { corr: s }), base + 2_000));
    const corr = { opId: `op-${a}`, sessionName };
    out.push(at(cls, name, makeEvent("op.ambiguous", { opKind: "tool.charge", detail: `op ${a}` }, { corr }), base + 3_000));
    const backup = { handle: `h-${a % 9}`, tenant: `t${a % 3}`, environment: `e${a % 2}`, sessionName };
    out.push(at(cls, name, makeEvent("backup.created", { ...backup, expiresAt: base + (a % 4) * MIN, bytes: 100 + a }, { corr: s }), base + 5_000));
    if (a % 3 === 0) out.push(at(cls, name, makeEvent("op.resolved", { opKind: "tool.charge", resolution: "verified_ran" }, { corr }), base + 4_000));
  }
  return out;
}

/** Every page of a list, as [items, next] per page (rowsRead left out: a merged page reads every partition). */
async function pages<T>(read: (p: PageOptions) => Promise<Page<T>>, limit: number): Promise<[T[], string | null][]> {
  const out: [T[], string | null][] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 200; i++) {
    const p: Page<T> = await read({ cursor, limit });
    out.push([p.items, p.next]);
    if (!p.next) return out;
    cursor = p.next;
  }
  throw new Error("too many pages");
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (e: unknown) => (e instanceof AmbiguousOwner ? { ambiguous: { what: e.what, id: e.id, candidates: e.candidates, more: e.more } } : Promise.reject(e)),
  );

/** Everything the merged read models answer on this store. */
async function readAll(store: Store, events: TelemetryEvent[]) {
  const agents = [...new Map(events.map((e) => [`${e.source.agentClass}/${e.source.agentName}`, e.source])).values()];
  const runIds = [...new Set(events.flatMap((e) => (e.corr.fiberId ? [e.corr.fiberId] : [])))];
  const incidentIds = [...new Set(events.flatMap((e) => (e.corr.incidentId ? [e.corr.incidentId] : [])))];
  const sessionNames = [...new Set(events.flatMap((e) => (e.corr.sessionName ? [e.corr.sessionName] : [])))];
  const one = agents[3]!;
  const out: Record<string, unknown> = {};
  for (const limit of [1, 7, 50]) {
    out[`agents/${limit}`] = await pages((p) => listAgentsIn(store, {}, p), limit);
    out[`agents class/${limit}`] = await pages((p) => listAgentsIn(store, { agentClass: "SupportAgent" }, p), limit);
    out[`runs/${limit}`] = await pages((p) => listRunsIn(store, {}, p), limit);
    out[`runs running/${limit}`] = await pages((p) => listRunsIn(store, { outcome: "running" }, p), limit);
    out[`runs class/${limit}`] = await pages((p) => listRunsIn(store, { agentClass: "ProbeAgent" }, p), limit);
    out[`runs agent/${limit}`] = await pages((p) => listRunsIn(store, { ...one }, p), limit);
    out[`incidents/${limit}`] = await pages((p) => listIncidentsIn(store, {}, p), limit);
    out[`incidents open chat/${limit}`] = await pages((p) => listIncidentsIn(store, { status: "exhausted" }, p), limit);
    out[`incidents agent/${limit}`] = await pages((p) => listIncidentsIn(store, { ...one }, p), limit);
    out[`sessions/${limit}`] = await pages((p) => listSessionsIn(store, {}, p), limit);
    out[`sessions idle class/${limit}`] = await pages((p) => listSessionsIn(store, { status: "idle", agentClass: "ProbeAgent" }, p), limit);
    out[`ops/${limit}`] = await pages((p) => listAmbiguousOpsIn(store, {}, p), limit);
    out[`ops open/${limit}`] = await pages((p) => listAmbiguousOpsIn(store, { open: "true" }, p), limit);
    out[`backups/${limit}`] = await pages((p) => listBackupsIn(store, {}, p, NOW), limit);
    out[`backups expired/${limit}`] = await pages((p) => listBackupsIn(store, { expired: "true" }, p, NOW), limit);
    out[`backups tenant/${limit}`] = await pages((p) => listBackupsIn(store, { tenant: "t1" }, p, NOW), limit);
    out[`ops agent open/${limit}`] = await pages((p) => listAmbiguousOpsIn(store, { open: "true", ...one }, p), limit);
  }
  out.groups = [];
  for (const by of INCIDENT_GROUPS) {
    (out.groups as unknown[]).push(
      ...[await groupIncidentsIn(store, {}, by), await groupIncidentsIn(store, { kind: "chat" }, by), await groupIncidentsIn(store, { ...one }, by)].map(
        ({ rowsRead: _, ...g }) => g,
      ),
    );
  }
  out.counts = [
    await countIncidentsIn(store, {}),
    await countIncidentsIn(store, { kind: "chat" }),
    await countIncidentsIn(store, {}, 5),
    await countIncidentsIn(store, { ...one }),
  ].map(({ rowsRead: _, ...c }) => c);
  out.agentLookups = await Promise.all(agents.map((a) => findAgentIn(store, a.agentClass, a.agentName)));
  out.runLookups = await Promise.all(runIds.flatMap((id) => [settle(getStoredRunIn(store, id)), ...agents.map((a) => settle(getStoredRunIn(store, id, a)))]));
  out.incidentLookups = await Promise.all(incidentIds.flatMap((id) => [settle(getIncidentIn(store, id)), settle(getIncidentIn(store, id, one))]));
  out.sessionLookups = await Promise.all(
    sessionNames.flatMap((n) => [settle(getSessionIn(store, n)), ...agents.slice(0, 10).map((a) => settle(getSessionIn(store, n, a)))]),
  );
  return out;
}

it("a store of two partitions answers every merged read model exactly as one database does", { timeout: patient(120_000) }, async () => {
  const events = fleet();
  const now = Math.max(...events.map((e) => e.time)) + 1000;
  const msgs = () => events.map((body, i) => ({ id: `mm-${i}`, body }));
  // The agents land in both partitions, including two that share a run id and a session name.
  const parts = new Set(events.map((e) => partitionOf(e.source.agentClass, e.source.agentName, 2)));
  expect([...parts].sort()).toEqual([0, 1]);

  await empty(env.DB);
  await empty(P1);
  expect((await ingestIntoStore(singleStore(env.DB), msgs(), { now })).stored).toBe(events.length);
  const single = await readAll(singleStore(env.DB), events);

  await empty(env.DB);
  const two: Store = { home: env.DB, parts: [env.DB, P1] };
  expect((await ingestIntoStore(two, msgs(), { now })).stored).toBe(events.length);
  const merged = await readAll(two, events);

  // Not vacuous: the lists hold the fleet, and the shared ids are refused without an owner on both stores.
  expect((single["runs/50"] as [unknown[]][]).flatMap((p) => p[0]).length).toBeGreaterThan(30);
  expect((single["ops/7"] as [unknown[]][]).length).toBeGreaterThan(3);
  expect((single["backups expired/50"] as [unknown[]][])[0]![0].length).toBeGreaterThan(3);
  expect(JSON.stringify(single.groups)).toContain('"n":');
  expect(JSON.stringify(single.runLookups)).toContain('"ambiguous"');
  expect(JSON.stringify(single.sessionLookups)).toContain('"ambiguous"');
  for (const key of Object.keys(single)) expect(merged[key], key).toEqual(single[key]);
  await empty(env.DB);
  await empty(P1);
});

it("mergePages stops at the nearest point a partition has answered to, and continues from there", () => {
  const keyOf = (n: number) => [n, `k${n}`];
  const page = (items: number[], next: number | null): Page<number> => ({
    items,
    next:
      next === null
        ? null
        : btoa(JSON.stringify(["t", ...keyOf(next)]))
            .replace(/\+/g, "-")
            .replace(/\//g, "_")
            .replace(/=+$/, ""),
    rowsRead: items.length,
  });
  // Partition 0 stopped a bounded scan at 50 (a short page with a cursor); partition 1 answered down to 10.
  const merged = mergePages([page([90, 60], 50), page([80, 40, 10], null)], { tag: "t", keyOf, dir: "DESC" }, 10);
  expect(merged.items).toEqual([90, 80, 60]);
  expect(merged.next).toBe(page([], 50).next);
  expect(merged.rowsRead).toBe(5);
  // Full pages: the merged page is the first `limit` by key, its cursor the last one taken.
  const full = mergePages([page([9, 7, 5], 5), page([8, 6, 4], 4)], { tag: "t", keyOf, dir: "DESC" }, 3);
  expect(full.items).toEqual([9, 8, 7]);
  expect(full.next).toBe(page([], 7).next);
});
