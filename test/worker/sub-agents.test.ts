import { env } from "cloudflare:workers";
import { AGENT_CHANNEL } from "@agent-oncall/admin-rpc/facts";
import { captureFromTail } from "@agent-oncall/telemetry/tail";
import { getAgentByName } from "agents";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { facetIdentityName } from "../../src/admin-rpc/facet-ids";
import { consoleAdminClient } from "../../worker/admin-client";
import type { Env } from "../../worker/env";
import { forgetFacetFindings } from "../../worker/ingest/facet-parents";
import { handleTail } from "../../worker/tail";
import { listenLikeATail } from "../diagnostics-tail";
import type { HelperWork } from "../fixtures/sub-agents";
import { pollRows, pollRunRows } from "../helpers";
import { publishEnvTeamKeys } from "./access-tokens";
import { getText } from "./routes/harness";

/**
 * Two parents, each with a sub-agent named "helper" (test/fixtures/sub-agents.ts). What reaches the console is what
 * the SDK publishes on its diagnostics channels, and the ancestry the admin package publishes on its own, as a Tail
 * Worker receives them: the messages are caught here as they are published and handed to the tail handler as a trace item.
 */
const tail = listenLikeATail(["agents:fiber", AGENT_CHANNEL]);
afterEach(() => tail.clear());
afterAll(() => tail.stop());
const asItem = () => tail.item();
// The agent pages below are read as a signed-in viewer.
beforeAll(() => publishEnvTeamKeys());

async function workUnder(parent: string): Promise<HelperWork> {
  const hub = await getAgentByName((env as Env & { SubAgentHub: DurableObjectNamespace<import("../fixtures/sub-agents").SubAgentHub> }).SubAgentHub, parent);
  return hub.workInHelper("helper");
}

describe("sub-agents", () => {
  it("are two console agents when two parents give their sub-agent the same name, each with the ancestry its SDK records", async () => {
    const [p1, p2] = [`hub-${crypto.randomUUID().slice(0, 8)}`, `hub-${crypto.randomUUID().slice(0, 8)}`];
    const w1 = await workUnder(p1);
    const w2 = await workUnder(p2);
    // The SDK's own records: one name under both parents, each with its own ancestry.
    expect([w1.name, w2.name]).toEqual(["helper", "helper"]);
    expect(w1.parentPath).toEqual([{ className: "SubAgentHub", name: p1 }]);
    expect(w2.parentPath).toEqual([{ className: "SubAgentHub", name: p2 }]);

    const captured = captureFromTail([asItem()]);
    const runs = captured.events.filter((e) => e.corr.fiberId === w1.fiberId || e.corr.fiberId === w2.fiberId);
    expect(runs.map((e) => [e.type, e.corr.fiberId, e.source])).toEqual([
      ["fiber.started", w1.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p1} › helper`, parentPath: w1.parentPath }],
      ["fiber.completed", w1.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p1} › helper`, parentPath: w1.parentPath }],
      ["fiber.started", w2.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p2} › helper`, parentPath: w2.parentPath }],
      ["fiber.completed", w2.fiberId, { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${p2} › helper`, parentPath: w2.parentPath }],
    ]);

    // Through the console's tail handler and ingest: two agents, each with its own run.
    await handleTail([asItem()], env as Env);
    // Both completed healthily, so they left D1: each agent's run is read from R2 (runRowsOf).
    const one = (agentName: string, fiberId: string) =>
      pollRunRows<{ agent_class: string; agent_name: string; fiber_id: string; outcome: string | null }>(
        agentName,
        (r) => r.agent_class === "SubAgentHelper" && r.fiber_id === fiberId,
        (rs) => rs.length === 1 && rs.every((r) => r.outcome),
      );
    const rows = [...(await one(`SubAgentHub:${p1} › helper`, w1.fiberId)), ...(await one(`SubAgentHub:${p2} › helper`, w2.fiberId))]
      .map(({ agent_name, fiber_id, outcome }) => ({ agent_name, fiber_id, outcome }))
      .sort((a, b) => a.agent_name.localeCompare(b.agent_name));
    expect(rows).toEqual(
      [
        { agent_name: `SubAgentHub:${p1} › helper`, fiber_id: w1.fiberId, outcome: "completed" },
        { agent_name: `SubAgentHub:${p2} › helper`, fiber_id: w2.fiberId, outcome: "completed" },
      ].sort((a, b) => a.agent_name.localeCompare(b.agent_name)),
    );
    const agents = await pollRows<{ agent_name: string }>(
      "SELECT agent_name FROM agents WHERE agent_class = 'SubAgentHelper' AND agent_name IN (?, ?)",
      [`SubAgentHub:${p1} › helper`, `SubAgentHub:${p2} › helper`],
      (rs) => rs.length === 2,
    );
    expect(agents).toHaveLength(2);
  });

  it("are read and acted on through their parent, with the SDK's bridge; one deeper than that is refused with why", async () => {
    const parent = `hub-${crypto.randomUUID().slice(0, 8)}`;
    const work = await workUnder(parent);
    await handleTail([asItem()], env as Env);
    const target = { agentClass: "SubAgentHelper", agentName: `SubAgentHub:${parent} › helper` };
    await pollRows("SELECT agent_name FROM agents WHERE agent_class = ? AND agent_name = ?", [target.agentClass, target.agentName], (rs) => rs.length === 1);

    // The live view reads the sub-agent's own records: the SDK there has no live run (its one fiber completed).
    const live = await consoleAdminClient(env, { email: "viewer@example.com", role: "viewer" }).live(target);
    expect(live.ok, JSON.stringify(live)).toBe(true);
    if (!live.ok) return;
    expect(live.value.runs.runs.map((r) => r.id)).not.toContain(work.fiberId);

    // Trigger alarm reaches the sub-agent through its parent and reads it back.
    const alarm = await consoleAdminClient(env, { email: "oncall@example.com", role: "operator" }).triggerAlarm(target, { reason: "recover the helper now" });
    expect(alarm.ok, JSON.stringify(alarm)).toBe(true);
    if (!alarm.ok) return;
    expect(alarm.value.outcome).toBe("ran");

    // A sub-agent of a sub-agent: the SDK's public bridge does not reach it, so the console says so and calls nothing.
    const nested = await consoleAdminClient(env, { email: "viewer@example.com", role: "viewer" }).status({
      agentClass: "SubAgentHelper",
      agentName: `SubAgentHub:${parent} › SubAgentHelper:helper › leaf`,
    });
    expect(nested).toMatchObject({ ok: false, error: { code: "unsupported", facts: { kind: "nested_sub_agent", depth: 2 } } });
  });
});

type Hub = import("../fixtures/sub-agents").SubAgentHub;
const hubs = () => (env as Env & { SubAgentHub: DurableObjectNamespace<Hub> }).SubAgentHub;
const hubOf = (name: string) => getAgentByName(hubs(), name);
const uid = () => crypto.randomUUID().slice(0, 8);

/** A parent that has reported work of its own (a fiber), delivered as its own trace item: the console knows it. */
async function knownParent(name: string): Promise<void> {
  tail.clear();
  await (await hubOf(name)).ownWork();
  await handleTail([tail.item({ durableObjectId: hubs().idFromName(name).toString() })], env as Env);
  tail.clear();
}

/** Work in the parent's bare helper, and the trace item the runtime would send for it: the facet's own object id. */
async function bareWork(parent: string, helper: string) {
  tail.clear();
  const work = await (await hubOf(parent)).workInBareHelper(helper);
  const item = tail.item({ durableObjectId: work.objectId });
  tail.clear();
  return { work, item };
}

const keyOf = (parent: string, helper: string) => `SubAgentHub:${parent} › ${helper}`;

describe("sub-agents without the admin mixin (their messages do not name their parent)", () => {
  it("are two console agents when two known parents give one the same name, each under the parent whose facet id it has", async () => {
    const [p1, p2] = [`hub-${uid()}`, `hub-${uid()}`];
    await knownParent(p1);
    await knownParent(p2);
    await pollRows("SELECT agent_name FROM agents WHERE agent_class = 'SubAgentHub' AND agent_name IN (?, ?)", [p1, p2], (rs) => rs.length === 2);

    const a = await bareWork(p1, "helper");
    const b = await bareWork(p2, "helper");
    // The SDK's own records: one name, two parents, two facet ids.
    expect([a.work.name, b.work.name]).toEqual(["helper", "helper"]);
    expect(a.work.parentPath).toEqual([{ className: "SubAgentHub", name: p1 }]);
    expect(a.work.objectId).not.toBe(b.work.objectId);
    // The SDK's naming rule (src/admin-rpc/facet-ids.ts), pinned on a real facet: the root's binding, the whole path.
    const idOf = async (p: string) =>
      hubs()
        .idFromName(
          await facetIdentityName([
            { className: "SubAgentHub", name: p },
            { className: "SubAgentBareHelper", name: "helper" },
          ]),
        )
        .toString();
    expect([a.work.objectId, b.work.objectId]).toEqual([await idOf(p1), await idOf(p2)]);

    await handleTail([a.item], env as Env);
    await handleTail([b.item], env as Env);
    // Each run under its own parent's key, with that parent's path, as the admin mixin's ancestry would key it.
    for (const [p, w] of [
      [p1, a.work],
      [p2, b.work],
    ] as const) {
      const rows = await pollRunRows<{ agent_class: string; agent_name: string; fiber_id: string; outcome: string | null }>(
        keyOf(p, "helper"),
        (r) => r.agent_class === "SubAgentBareHelper" && r.fiber_id === w.fiberId,
        (rs) => rs.length === 1 && rs.every((r) => r.outcome),
      );
      expect(rows.map((r) => [r.agent_name, r.outcome])).toEqual([[keyOf(p, "helper"), "completed"]]);
    }
    const agents = await pollRows<{ agent_name: string }>(
      "SELECT agent_name FROM agents WHERE agent_class = 'SubAgentBareHelper' AND agent_name IN (?, ?, 'helper') ORDER BY agent_name",
      [keyOf(p1, "helper"), keyOf(p2, "helper")],
      (rs) => rs.length === 2,
    );
    expect(agents.map((r) => r.agent_name)).toEqual([keyOf(p1, "helper"), keyOf(p2, "helper")].sort());

    // The page of each says whose sub-agent it is, with a link to the parent (which reported events of its own).
    const { text: page } = await getText(`/agents/SubAgentBareHelper/${encodeURIComponent(keyOf(p1, "helper"))}`, "viewer");
    expect(page).toContain('data-testid="sub-agent-of"');
    expect(page).toContain(`href="/agents/SubAgentHub/${encodeURIComponent(p1)}"`);
    expect(page).not.toContain('data-testid="parent-unknown"');
  });

  it("are keyed apart by their object when the console knows no parent with their facet id, and the page says so and what it tried", async () => {
    // The parent never reported an event of its own: nothing the console knows has this facet's id. The class is
    // bound, so the id is certainly not the top-level agent's of that name: never merged with it (workers.ts).
    const parent = `hub-${uid()}`;
    const helper = `lonely-${uid()}`;
    const { work, item } = await bareWork(parent, helper);
    await handleTail([item], env as Env);
    const keyed = `SubAgentBareHelper@?${work.objectId.slice(0, 12)}`;
    await pollRows("SELECT agent_name FROM agents WHERE agent_class = ? AND agent_name = ?", [keyed, helper], (rs) => rs.length === 1);
    const stored = await env.DB.prepare("SELECT parent_path, parent_unknown FROM tail_objects WHERE object_id = ?")
      .bind(work.objectId)
      .first<{ parent_path: string | null; parent_unknown: string | null }>();
    expect(stored?.parent_path).toBeNull();
    expect(stored?.parent_unknown).toContain("so it is a sub-agent");
    expect(stored?.parent_unknown).toMatch(/none of the \d+ agents tried: the newest 200 by last event of each of the \d+ classes the console binds/);

    const { status, text: page } = await getText(`/agents/${encodeURIComponent(keyed)}/${encodeURIComponent(helper)}`, "viewer");
    expect(status).toBe(200);
    expect(page).toContain('data-testid="other-worker"');
    expect(page).toContain("<strong>Parent unknown, or another Worker");
    // What the console tried, by class: the classes it binds, among them the real parent's.
    // The test worker binds dozens of classes: they are counted, not listed.
    expect(page).toMatch(/agents tried: the newest 200 by last event of each of the \d+ classes the console binds \(AGENT_CLASSES\)/);
    expect(page).not.toContain('data-testid="sub-agent-of"');
  });

  it("are matched to a parent whose own first events arrive in the same tail batch (still in the Queue, not yet registered)", async () => {
    const parent = `hub-${uid()}`;
    tail.clear();
    await (await hubOf(parent)).ownWork();
    const parentItem = tail.item({ durableObjectId: hubs().idFromName(parent).toString() });
    const { work, item } = await bareWork(parent, "helper");
    await handleTail([parentItem, item], env as Env);
    await pollRunRows<{ agent_name: string; fiber_id: string; outcome: string | null }>(
      keyOf(parent, "helper"),
      (r) => r.fiber_id === work.fiberId,
      (rs) => rs.length === 1 && rs.every((r) => r.outcome === "completed"),
    );
    const stored = await env.DB.prepare("SELECT parent_path FROM tail_objects WHERE object_id = ?").bind(work.objectId).first<{ parent_path: string }>();
    expect(JSON.parse(stored!.parent_path)).toEqual([{ className: "SubAgentHub", name: parent }]);
  });

  it("cost: the parent is matched once per facet (its tail_objects row written once), then no row written and no candidate tried per event", async () => {
    const parent = `hub-${uid()}`;
    await knownParent(parent);
    await pollRows("SELECT agent_name FROM agents WHERE agent_class = 'SubAgentHub' AND agent_name = ?", [parent], (rs) => rs.length === 1);
    const first = await bareWork(parent, "helper");
    const r1 = await handleTail([first.item], env as Env);
    expect(r1.parentsTried).toBeGreaterThan(0);
    // One row, with its entries in the primary key's index and tail_objects_agent (local D1 counts index entries).
    expect(r1.objectRowsWritten).toBe(3);

    // Later work of the same facet: the finding is in this isolate's memory.
    const again = await bareWork(parent, "helper");
    expect(again.work.objectId).toBe(first.work.objectId);
    const r2 = await handleTail([again.item], env as Env);
    expect([r2.parentsTried, r2.objectRowsWritten, r2.sent]).toEqual([0, 0, r1.sent]);

    // Another isolate (memory empty) reads the finding back from tail_objects: still nothing tried, nothing written.
    forgetFacetFindings();
    const later = await bareWork(parent, "helper");
    const r3 = await handleTail([later.item], env as Env);
    expect([r3.parentsTried, r3.objectRowsWritten]).toEqual([0, 0]);
    await pollRunRows<{ agent_name: string; fiber_id: string; outcome: string | null }>(
      keyOf(parent, "helper"),
      (r) => r.fiber_id === later.work.fiberId,
      (rs) => rs.length === 1 && rs.every((r) => r.outcome === "completed"),
    );
  });
});
