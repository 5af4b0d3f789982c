import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { singleStore } from "../../src/store/partitions";
import {
  bulkTargets,
  countIncidents,
  groupIncidents,
  INCIDENT_STATUSES,
  listIncidents,
  listStuck,
  openWorkOf,
  searchIn,
  staleAgents,
} from "../../src/store/read-models";
import { runRetention } from "../../src/store/retention";
import { incidentScenarios } from "../fixtures/incident-scenarios";
import { ingest, walk } from "./store-helpers";

/** The header's search over one database (the store of one partition). */
const search = (db: D1Database, q: unknown) => searchIn(singleStore(db), q);

// Every reader of an incident's status reads the shown status (the SDK's word, or the closed-by overlay while the
// SDK's word is open and older): lists and their filters, counts, groups, search, stuck detection, the open work
// reconciliation asks about, bulk targets and retention. Seeded through the real ingest.

const agentName = "status-readers";
const owner = { agentClass: "ProbeAgent", agentName };
// An hour ago: inside every window, old enough for stuck detection's 15 minutes.
const T0 = Date.now() - 3_600_000;
const scenarios = incidentScenarios(agentName, T0);
const idsWith = (pred: (s: (typeof scenarios)[number]) => boolean) =>
  scenarios
    .filter(pred)
    .map((s) => s.incidentId)
    .sort();

beforeAll(async () => {
  await ingest(scenarios.flatMap((s) => s.events));
});

describe("status filters list exactly the incidents showing that status", () => {
  for (const status of INCIDENT_STATUSES) {
    it(`status=${status}, over the status index and over the agent's index, and its count`, async () => {
      const expected = idsWith((s) => s.expected.status === status);
      // Over incidents_status (the whole store: other files' agents are not in this file's D1).
      const all = await walk(
        (p) => listIncidents(env.DB, { status }, p),
        2,
        (i) => `${i.incidentId}/${i.agentName}`,
      );
      expect(
        all
          .filter((i) => i.agentName === agentName)
          .map((i) => i.incidentId)
          .sort(),
      ).toEqual(expected);
      for (const i of all) expect(i.status).toBe(status);
      // Over incidents_agent, the status tested per row.
      const mine = await walk(
        (p) => listIncidents(env.DB, { ...owner, status }, p),
        2,
        (i) => i.incidentId,
      );
      expect(mine.map((i) => i.incidentId).sort()).toEqual(expected);
      expect(await countIncidents(env.DB, { ...owner, status })).toMatchObject({ n: expected.length, capped: false });
    });
  }

  it("the reason filter and group-by-reason keep the root cause of force-idled incidents", async () => {
    const exhausted = await listIncidents(env.DB, { ...owner, reason: "max_attempts_exceeded" });
    expect(exhausted.items.map((i) => [i.incidentId, i.status, i.closedBy]).sort()).toEqual([
      ["exhausted-then-failed", "exhausted", null],
      ["exhausted-then-idled", "exhausted", "force_idled"],
    ]);
    const groups = await groupIncidents(env.DB, owner, "reason");
    const expected = new Map<string, number>();
    for (const s of scenarios) expected.set(s.expected.reason ?? "", (expected.get(s.expected.reason ?? "") ?? 0) + 1);
    expect(Object.fromEntries(groups.groups.map((g) => [g.key, g.n]))).toEqual(Object.fromEntries(expected));
    // The operator's sentence is never a reason.
    expect(groups.groups.map((g) => g.key)).not.toContain("bulk force idle: runaway imports");
  });

  it("noReason=true lists those without a reason, exactly the '' group", async () => {
    const none = await walk(
      (p) => listIncidents(env.DB, { ...owner, noReason: "true" }, p),
      3,
      (i) => i.incidentId,
    );
    expect(none.map((i) => i.incidentId).sort()).toEqual(idsWith((s) => s.expected.reason === null));
    const group = (await groupIncidents(env.DB, owner, "reason")).groups.find((g) => g.key === "");
    expect(group?.n).toBe(none.length);
    expect(await countIncidents(env.DB, { ...owner, noReason: "true" })).toMatchObject({ n: none.length });
  });

  it("group-by-status counts the shown status", async () => {
    const groups = await groupIncidents(env.DB, owner, "status");
    const expected = new Map<string, number>();
    for (const s of scenarios) expected.set(s.expected.status, (expected.get(s.expected.status) ?? 0) + 1);
    expect(Object.fromEntries(groups.groups.map((g) => [g.key, g.n]))).toEqual(Object.fromEntries(expected));
  });
});

describe("other readers of incident status", () => {
  it("search shows the shown status", async () => {
    const r = await search(env.DB, "open-then-idled");
    const m = r.matches.find((x) => x.kind === "incident" && x.agentName === agentName)!;
    expect(m).toMatchObject({ kind: "incident", status: "force_idled" });
    const closed = (await search(env.DB, "exhausted-then-idled")).matches.find((x) => x.kind === "incident" && x.agentName === agentName)!;
    expect(closed).toMatchObject({ kind: "incident", status: "exhausted" });
  });

  it("stuck detection, reconciliation and bulk targets see only incidents open now", async () => {
    const openNow = idsWith((s) => s.expected.status === "open");
    expect(openNow).toEqual(["idled-then-resumed"]);
    const stuck = (await listStuck(env.DB, Date.now(), undefined, { rule: "incident_no_attempt" })).filter((e) => e.agentName === agentName);
    expect(stuck.map((e) => e.subjectId)).toEqual(openNow);
    expect((await openWorkOf(env.DB, owner)).incidents.map((i) => i.incidentId)).toEqual(openNow);
    expect(await staleAgents(env.DB, Date.now(), 50)).toContainEqual(owner);
    const targets = await bulkTargets(env.DB, Date.now(), { status: "open_incidents" });
    expect(targets.targets.map((t) => [t.agentClass, t.agentName])).toContainEqual(["ProbeAgent", agentName]);
  });

  it("an agent whose only open incidents were force idled is no longer a target, nor stuck, nor asked about", async () => {
    const name = "status-readers-idled";
    const [idled] = incidentScenarios(name, T0).filter((s) => s.incidentId === "open-then-idled");
    await ingest(idled!.events);
    const me = { agentClass: "ProbeAgent", agentName: name };
    expect((await bulkTargets(env.DB, Date.now(), { status: "open_incidents" })).targets.map((t) => t.agentName)).not.toContain(name);
    expect((await listStuck(env.DB, Date.now())).map((e) => e.agentName)).not.toContain(name);
    expect((await openWorkOf(env.DB, me)).incidents).toEqual([]);
    expect(await staleAgents(env.DB, Date.now(), 50)).not.toContainEqual(me);
  });

  it("retention ages out force-idled incidents like any closed one, and keeps the open", async () => {
    const name = "status-readers-old";
    const old = Date.now() - 40 * 86_400_000;
    const s = incidentScenarios(name, old).filter((x) => ["open-then-idled", "idled-then-resumed", "exhausted-then-idled"].includes(x.incidentId));
    await ingest(s.flatMap((x) => x.events));
    await runRetention(env.DB, { maxAgeDays: 30 });
    const left = (await env.DB.prepare("SELECT incident_id FROM incidents WHERE agent_name = ? ORDER BY incident_id").bind(name).all<{ incident_id: string }>())
      .results;
    expect(left.map((r) => r.incident_id)).toEqual(["idled-then-resumed"]);
  });
});
