import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows, rejectionOf } from "../helpers";

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "viewer@example.com", role: "viewer" as const };

/** A SessionAgent with a turn that streams, then stalls: a running turn to act on. */
async function stalledSession() {
  const name = `adm-${crypto.randomUUID().slice(0, 8)}`;
  const s = await getAgentByName(env.FaultySessionAgent, name);
  await s.setScript({ chunks: ["Working on the migration"], stall: true });
  await s.sendMessage("migrate the tenant");
  await pollRows("SELECT 1 FROM agents WHERE agent_class = 'FaultySessionAgent' AND agent_name = ?", [name], (r) => r.length === 1);
  return { name, s, t: { agentClass: "FaultySessionAgent", agentName: name } };
}

describe("admin RPC on the runtime's SessionAgent", () => {
  it("lists the running turn's fiber with its checkpoint", async () => {
    const { t } = await stalledSession();
    const admin = consoleAdminClient(env, viewer);
    const runs = await admin.listRuns(t);
    expect(runs.ok && runs.value.runs.map((r) => r.name)).toEqual(["session-turn"]);
    const run = await admin.getRun(t, runs.ok ? runs.value.runs[0]!.id : "");
    expect(run.ok && run.value.snapshot).toEqual({ turnSeq: 1, step: 1, pendingTool: null, streamedChars: "Working on the migration".length });
    const status = await admin.status(t);
    expect(status.ok && status.value.status).toBe("running");
  });

  it("force-idles a running turn: the turn is aborted, the row gone, the audit and event written; again is a no-op", async () => {
    const { name, s, t } = await stalledSession();
    const admin = consoleAdminClient(env, operator);
    const r = await admin.forceIdle(t, { reason: "runaway migration" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.before.status).toBe("running");
    expect(r.value.after).toMatchObject({ status: "idle", runCount: 0 });
    expect(r.value.clearedIncidents).toContain("turn:1");
    expect(await s.status()).toBe("idle");
    expect(await s.sendMessage("are you free now?")).toMatchObject({ ok: true });

    const again = await admin.forceIdle(t, { reason: "double-check" });
    // The new turn above runs the default script and finishes; once it has, force idle has nothing to do.
    await expect.poll(() => s.status()).toBe("idle");
    const third = await admin.forceIdle(t, { reason: "double-check" });
    expect(third.ok && third.value.noop).toBe(true);
    expect(again.ok).toBe(true);

    const audit = await env.DB.prepare("SELECT action, result, reason FROM audit_log WHERE target_name = ? ORDER BY time, rowid").bind(name).all();
    expect(audit.results[0]).toEqual({ action: "force_idle", result: "ok", reason: "runaway migration" });
    expect(audit.results.at(-1)).toEqual({ action: "force_idle", result: "noop", reason: "double-check" });
    await pollRows("SELECT 1 FROM events WHERE agent_name = ? AND type = 'admin.force_idle'", [name], (x) => x.length === 3);
    await pollRows("SELECT 1 FROM events WHERE agent_name = ? AND type = 'session.status_idle' AND payload LIKE '%forced idle%'", [name], (x) => x.length >= 1);
  });

  it("after an eviction, trigger alarm recovers the orphaned turn at once and says so", async () => {
    const { name, s, t } = await stalledSession();
    // The resumed turn will finish instead of stalling again.
    await s.setScript({ chunks: ["Working on the migration", " - done."] });
    await rejectionOf(s.evict());
    const r = await consoleAdminClient(env, operator).triggerAlarm(t, { reason: "recover the migration now" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.recoveredRuns).toHaveLength(1);
    expect(r.value.recoveryEvents.map((e) => e.type)).toEqual(expect.arrayContaining(["fiber.recovery.detected", "fiber.recovery.handled"]));
    const after = await getAgentByName(env.FaultySessionAgent, name);
    await expect.poll(() => after.status()).toBe("idle");
    expect((await after.events()).filter((e) => e.kind === "assistant").map((e) => e.content)).toEqual(["Working on the migration - done."]);
    expect(await after.recoveries(1)).toBe(1);
  });
});
