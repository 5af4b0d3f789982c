import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { FLEET_COMPLETED_HOURS, FLEET_COMPLETED_LIMITS } from "../../../src/store/read-models/runs-fleet-history";
import { handleTelemetryBatch } from "../../../worker/ingest/consumer";
import { makeEvent } from "../../fixtures/events";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call } from "./harness";

beforeAll(() => publishEnvTeamKeys());

/** Events through the real consumer (D1 and R2): healthy completions leave D1, the rest stay. */
async function deliver(tag: string, events: TelemetryEvent[]) {
  const batch = createMessageBatch(
    "agent-telemetry",
    events.map((body, i) => ({ id: `${tag}-${body.id}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "0" });
  expect((await getQueueResult(batch, createExecutionContext())).ackAll).toBe(true);
}

/** An event of an agent of `agentClass` (the fixtures' events are all ProbeAgent's): a class per test keeps the fleet's reads apart. */
const as = (agentClass: string, e: TelemetryEvent): TelemetryEvent => ({ ...e, source: { ...e.source, agentClass } });

type RunJson = { runId: string; agentClass: string; agentName: string; outcome: string | null; kind: string; attempt: number | null };
type ListJson = {
  items: RunJson[];
  next: string | null;
  rowsRead: number;
  completedFromHistory?: {
    hours: number;
    from: number;
    to: number;
    found: number;
    scan: { complete: boolean; coveredFrom: number | null; coveredTo: number | null; objectsFetched: number; stop: { limit: string } | null };
  };
};

async function list(query: string): Promise<ListJson> {
  const res = await call(`/runs?${query}`, { as: "viewer", headers: { accept: "application/json" } });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as ListJson;
}

/** Every page of a list, following its cursor (at most `max` pages). */
async function allPages(query: string, max = 40): Promise<ListJson[]> {
  const pages: ListJson[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < max; i++) {
    const page = await list(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    pages.push(page);
    cursor = page.next;
    if (!cursor) return pages;
  }
  throw new Error(`more than ${max} pages`);
}

/**
 * A fleet of `agents` agents of one class, each with a healthy fiber and a healthy task a few minutes ago, and one
 * failed fiber (it stays in D1); one batch per agent.
 */
async function fleet(agentClass: string, agents: number, minutesAgo = 10) {
  const t0 = Date.now() - minutesAgo * 60_000;
  const healthy: { runId: string; agentName: string; kind: string; attempt: number | null }[] = [];
  for (let a = 0; a < agents; a++) {
    const agentName = `agent-${a}`;
    const at = (s: number, corr: TelemetryEvent["corr"]) => ({ agentName, time: t0 + a * 5_000 + s * 100, corr });
    const fiber = `${agentClass}-f-${a}`;
    const task = `${agentClass}-t-${a}`;
    const broke = `${agentClass}-x-${a}`;
    await deliver(`${agentClass}-${a}`, [
      as(agentClass, makeEvent("fiber.started", { fiberName: "etl" }, at(1, { fiberId: fiber }))),
      as(agentClass, makeEvent("fiber.completed", { fiberName: "etl" }, at(2, { fiberId: fiber }))),
      as(agentClass, makeEvent("task.accepted", { definition: "report" } as never, at(3, { taskId: task }))),
      as(agentClass, makeEvent("task.attempt.started", { definition: "report", attempt: 1 } as never, at(4, { taskId: task }))),
      as(agentClass, makeEvent("task.completed", { definition: "report", attempt: 1 } as never, at(5, { taskId: task }))),
      as(agentClass, makeEvent("fiber.started", { fiberName: "load" }, at(6, { fiberId: broke }))),
      as(agentClass, makeEvent("fiber.failed", { fiberName: "load", error: "boom" }, at(7, { fiberId: broke }))),
    ]);
    healthy.push({ runId: fiber, agentName, kind: "fiber", attempt: null }, { runId: task, agentName, kind: "task", attempt: 1 });
  }
  return healthy;
}

const byId = (a: { runId: string }, b: { runId: string }) => (a.runId < b.runId ? -1 : 1);

describe("the fleet-wide runs list reads completed runs from the R2 history over a stated span", () => {
  it("lists exactly the fleet's healthy completed runs, with the span it read and what it cost", async () => {
    const agentClass = `Fleet${crypto.randomUUID().slice(0, 8)}`;
    const healthy = await fleet(agentClass, 3);
    const page = await list(`outcome=completed&agentClass=${agentClass}`);
    expect(page.items.map((r) => ({ runId: r.runId, agentName: r.agentName, kind: r.kind, attempt: r.kind === "task" ? r.attempt : null })).sort(byId)).toEqual(
      healthy.sort(byId),
    );
    expect(page.items.every((r) => r.outcome === "completed" && r.agentClass === agentClass)).toBe(true);
    const read = page.completedFromHistory!;
    expect(read.hours).toBe(FLEET_COMPLETED_HOURS);
    expect(read.to - read.from).toBeGreaterThanOrEqual(FLEET_COMPLETED_HOURS * 3_600_000);
    expect(read.found).toBe(6);
    expect(read.scan.objectsFetched).toBeGreaterThan(0);
    expect(read.scan.objectsFetched).toBeLessThanOrEqual(FLEET_COMPLETED_LIMITS.maxObjects);
    // Every list page still reads at most 60 D1 rows.
    expect(page.rowsRead).toBeLessThanOrEqual(60);
    // Runs order: newest first.
    const keys = page.items.map((r) => r.runId);
    expect(keys.length).toBe(6);
    // The list without an outcome adds them to D1's (the failed runs that stay).
    const all = await list(`agentClass=${agentClass}`);
    expect(all.items.filter((r) => r.outcome === "failed").map((r) => r.runId)).toHaveLength(3);
    expect(
      all.items
        .filter((r) => r.outcome === "completed")
        .map((r) => r.runId)
        .sort(),
    ).toEqual(healthy.map((h) => h.runId).sort());
    // A kind filter applies to what history adds.
    const tasks = await list(`outcome=completed&agentClass=${agentClass}&kind=task`);
    expect(tasks.items.map((r) => r.runId).sort()).toEqual(
      healthy
        .filter((h) => h.kind === "task")
        .map((h) => h.runId)
        .sort(),
    );
  });

  it("the page says the span it read; runs older than the span are not claimed, and a wider span finds them", async () => {
    const agentClass = `Old${crypto.randomUUID().slice(0, 8)}`;
    const healthy = await fleet(agentClass, 1, 3 * 60);
    expect((await list(`outcome=completed&agentClass=${agentClass}`)).items).toEqual([]);
    const wide = await list(`outcome=completed&agentClass=${agentClass}&hours=4`);
    expect(wide.items.map((r) => r.runId).sort()).toEqual(healthy.map((h) => h.runId).sort());
    expect(wide.completedFromHistory!.hours).toBe(4);
    // A since filter alone widens the span back to it.
    const since = await list(`outcome=completed&agentClass=${agentClass}&since=${Date.now() - 4 * 3_600_000 + 60_000}`);
    expect(since.items.map((r) => r.runId).sort()).toEqual(healthy.map((h) => h.runId).sort());
    expect(since.completedFromHistory!.hours).toBe(4);
    const html = await (await call(`/runs?outcome=completed&agentClass=${agentClass}`, { as: "viewer" })).text();
    const note = mustTestId(html, "runs-completed-from-history");
    expect(note.attrs["data-scope"]).toBe("fleet");
    expect(note.attrs["data-found"]).toBe("0");
    expect(note.attrs["data-complete"]).toBe("true");
  });

  it("a span with more objects than a page's budget says where it stopped, and its cursor goes on to the rest, each run once", async () => {
    const agentClass = `Many${crypto.randomUUID().slice(0, 8)}`;
    // One object per agent's batch: more than one page's budget.
    const agents = FLEET_COMPLETED_LIMITS.maxObjects + 6;
    const healthy = await fleet(agentClass, agents, 20);
    const query = `outcome=completed&agentClass=${agentClass}`;
    const pages = await allPages(query);
    const first = pages[0]!.completedFromHistory!;
    expect(first.scan.complete).toBe(false);
    expect(first.scan.stop?.limit).toBe("objects");
    expect(first.scan.objectsFetched).toBe(FLEET_COMPLETED_LIMITS.maxObjects);
    // It covered the newest part of the span only, and says so.
    expect(first.scan.coveredFrom!).toBeGreaterThan(first.from);
    expect(pages[0]!.next).not.toBeNull();
    const ids = pages.flatMap((p) => p.items.map((r) => r.runId));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(healthy.map((h) => h.runId).sort());
    for (const p of pages) {
      expect(p.rowsRead).toBeLessThanOrEqual(60);
      expect(p.completedFromHistory!.scan.objectsFetched).toBeLessThanOrEqual(FLEET_COMPLETED_LIMITS.maxObjects);
      // The span stays the one the first page stated.
      expect(p.completedFromHistory!.from).toBe(first.from);
    }
    const html = await (await call(`/runs?${query}`, { as: "viewer" })).text();
    expect(mustTestId(html, "runs-completed-from-history").attrs["data-complete"]).toBe("false");
    expect(mustTestId(html, "runs-completed-older").attrs.href).toContain("cursor=");
  });

  it("pages of a small size go on through both stores, each run once", async () => {
    const agentClass = `Paged${crypto.randomUUID().slice(0, 8)}`;
    const healthy = await fleet(agentClass, 4);
    const pages = await allPages(`agentClass=${agentClass}&limit=3`);
    const ids = pages.flatMap((p) => p.items.map((r) => r.runId));
    expect(new Set(ids).size).toBe(ids.length);
    // 8 healthy from history, 4 failed from D1.
    expect(ids.filter((id) => id.includes("-x-"))).toHaveLength(4);
    expect(ids.filter((id) => !id.includes("-x-")).sort()).toEqual(healthy.map((h) => h.runId).sort());
    for (const p of pages) expect(p.items.length).toBeLessThanOrEqual(6);
  });

  it("a bad span is a 400 with a sentence", async () => {
    for (const hours of ["0", "49", "1.5", "soon"]) {
      const res = await call(`/runs?outcome=completed&hours=${hours}`, { as: "viewer", headers: { accept: "application/json" } });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("hours must be a whole number of hours from 1 to 48");
    }
  });
});

describe("the runs download of completed runs reads the same history span and says it", () => {
  type ExportJson = {
    items: { fiberId: string; outcome: string }[];
    count: number;
    truncated: boolean;
    history?: { from: number; to: number; complete: boolean; objects: number };
  };

  it("JSON: every completed run of the span, counted, with the span in its history field", async () => {
    const agentClass = `Export${crypto.randomUUID().slice(0, 8)}`;
    const healthy = await fleet(agentClass, 3);
    const res = await call(`/export/runs?format=json&outcome=completed&agentClass=${agentClass}`, { as: "viewer" });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as ExportJson;
    expect(doc.count).toBe(healthy.length);
    expect(doc.items.map((r) => r.fiberId).sort()).toEqual(healthy.map((h) => h.runId).sort());
    expect(doc.truncated).toBe(false);
    expect(doc.history).toMatchObject({ complete: true });
    expect(doc.history!.to - doc.history!.from).toBeGreaterThanOrEqual(FLEET_COMPLETED_HOURS * 3_600_000);
    expect(doc.history!.objects).toBeGreaterThan(0);
  });

  it("CSV: one row per completed run, then a line with the span; a span past one page's budget is read page by page", async () => {
    const agentClass = `ExportCsv${crypto.randomUUID().slice(0, 8)}`;
    const healthy = await fleet(agentClass, FLEET_COMPLETED_LIMITS.maxObjects + 4, 15);
    const res = await call(`/export/runs?format=csv&outcome=completed&agentClass=${agentClass}`, { as: "viewer" });
    expect(res.status).toBe(200);
    const lines = (await res.text()).split("\r\n").filter(Boolean);
    const note = lines.filter((l) => l.startsWith("# completed runs from the R2 history"));
    expect(note).toHaveLength(1);
    expect(note[0]).not.toContain("stopped before");
    const rows = lines.filter((l) => !l.startsWith("#")).slice(1);
    expect(rows).toHaveLength(healthy.length);
    expect(new Set(rows).size).toBe(rows.length);
  });

  it("a bad span is a 400 before any byte", async () => {
    const res = await call("/export/runs?format=csv&outcome=completed&hours=100", { as: "viewer" });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("hours must be a whole number of hours from 1 to 48");
  });
});
