import { env } from "cloudflare:workers";
import { fiberIncidentId } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import { PAUSE_CONTRACT, PAUSE_DEFAULT_HOURS } from "../../src/admin-rpc/contract";
import { recoveryPauseOf } from "../../src/store/read-models";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows, rejectionOf } from "../helpers";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { csrfFor, csrfFromPage, getText, postForm, registerAgent, uid } from "../worker/routes/harness";

// Pausing recovery on a real agent (both mixins, its own onFiberRecovered), evicted with ctx.abort(): while paused
// the SDK's recovery runs and is held back (no recovery, an event, a visible state), the work stays recoverable,
// and one resume recovers it, as the SDK's own records (cf_agents_runs, inspectFiber) and the agent's hook say.

const operator = { email: "oncall@example.com", role: "operator" as const };
const admin = () => consoleAdminClient(env, operator);

/** A fresh stub after an eviction: the SDK recovers (or holds back) interrupted work when this wakes the agent. */
async function evictAndWake(name: string) {
  const before = await getAgentByName(env.PausableAgent, name);
  await rejectionOf(before.evict());
  const after = await getAgentByName(env.PausableAgent, name);
  // Any call wakes it; the SDK's startup recovery runs before the call is answered.
  await after.recoveredIds();
  return after;
}

type AuditRow = { action: string; result: string; before: string | null; after: string | null; error: string | null };
const auditRows = async (name: string) =>
  (await env.DB.prepare("SELECT action, result, before, after, error FROM audit_log WHERE target_name = ? ORDER BY time, rowid").bind(name).all<AuditRow>())
    .results;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("pause recovery", () => {
  it("holds a runFiber's recovery back across an eviction, reports it, and one resume recovers it (cf_agents_runs)", async () => {
    const name = `pause-${uid()}`;
    const stub = await getAgentByName(env.PausableAgent, name);
    const fiberId = await stub.startHanging();
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'PausableAgent' AND agent_name = ?", [name], (r) => r.length === 1);
    const target = { agentClass: "PausableAgent", agentName: name };
    expect(await stub.oncallKeys()).toEqual([]);

    const paused = await admin().action("pause_recovery", target, { reason: "retries run up the LLM bill", hours: 2 });
    expect(paused.ok).toBe(true);
    // The pause is one entry (one row) of the agent's own storage.
    expect(await stub.oncallKeys()).toEqual(["agent-oncall:recovery-pause"]);

    // Evicted while paused: the SDK finds the run and calls the hook, which holds it back; the row stays.
    const woke = await evictAndWake(name);
    await woke.runAlarm(); // a second scan, as the SDK's backoff retry would run it
    expect(await woke.recoveredIds()).toEqual([]);
    expect(await woke.runRowIds()).toEqual([fiberId]);
    const status = await admin().status(target);
    expect(status.ok && status.value.recoveryPause).toMatchObject({ active: true, reason: "retries run up the LLM bill" });
    expect(status.ok && status.value.recoveryPause!.skipped).toBeGreaterThanOrEqual(2);

    // An event, not a silent skip: the SDK's failed attempt arrives as recovery.skipped_paused, the incident stays open.
    const incidentId = fiberIncidentId("PausableAgent", name, fiberId);
    const skips = await pollRows<{ incident_id: string; fiber_id: string }>(
      "SELECT incident_id, fiber_id FROM events WHERE agent_name = ? AND type = 'recovery.skipped_paused'",
      [name],
      (r) => r.length >= 2,
    );
    expect(skips[0]).toEqual({ incident_id: incidentId, fiber_id: fiberId });
    const rows = await pollRows<{ pause_state: string; skipped: number }>(
      "SELECT pause_state, skipped FROM recovery_pauses WHERE agent_class = 'PausableAgent' AND agent_name = ?",
      [name],
      (r) => r.length === 1 && r[0]!.skipped >= 2,
    );
    expect(rows[0]!.pause_state).toBe("paused");
    expect(await env.DB.prepare("SELECT status FROM incidents WHERE incident_id = ?").bind(incidentId).first<{ status: string }>()).toEqual({ status: "open" });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM incidents WHERE incident_id = ? AND status = 'failed'").bind(incidentId).first()).toEqual({ n: 0 });
    expect(await recoveryPauseOf(env.DB, "PausableAgent", name, Date.now())).toMatchObject({ state: "paused", actor: operator.email });

    // Visible on the agent page and the incident page.
    const page = await getText(`/agents/PausableAgent/${encodeURIComponent(name)}`, "viewer");
    expect(page.text).toMatch(/data-testid="recovery-pause" data-state="paused"/);
    expect(page.text).toMatch(/data-testid="live-recovery-pause" data-active="true"/);
    const incidentPage = await getText(`/incidents/${encodeURIComponent(incidentId)}`, "viewer");
    expect(incidentPage.text).toMatch(/data-testid="recovery-pause" data-state="paused"/);

    // One resume: the alarm runs the SDK's recovery, the agent's own hook recovers the fiber, its row is gone.
    const resumed = await admin().action("resume_recovery", target, { reason: "upstream fixed" });
    expect(resumed.ok).toBe(true);
    if (!resumed.ok) return;
    expect(resumed.value).toMatchObject({ noop: false, recovered: [fiberId], after: { pause: null, pendingRecovery: 0 } });
    expect(await woke.recoveredIds()).toEqual([fiberId]);
    expect(await woke.runRowIds()).toEqual([]);
    await pollRows(
      "SELECT 1 FROM recovery_pauses WHERE agent_class = 'PausableAgent' AND agent_name = ? AND pause_state = 'resumed'",
      [name],
      (r) => r.length === 1,
    );

    // Audited like every action, with before and after as the agent read them.
    const audit = await auditRows(name);
    expect(audit.map((a) => [a.action, a.result])).toEqual([
      ["pause_recovery", "ok"],
      ["resume_recovery", "ok"],
    ]);
    expect(JSON.parse(audit[0]!.before!)).toMatchObject({ pause: null, pendingRecovery: 0 });
    expect(JSON.parse(audit[0]!.after!)).toMatchObject({ pause: { active: true, reason: "retries run up the LLM bill" } });
    expect(JSON.parse(audit[1]!.before!)).toMatchObject({ pause: { active: true }, pendingRecovery: 1 });
    expect(JSON.parse(audit[1]!.after!)).toMatchObject({ pause: null, pendingRecovery: 0 });
  });

  it("leaves a managed fiber interrupted while paused (inspectFiber), and resume settles it through the agent's own hook", async () => {
    const name = `pause-managed-${uid()}`;
    const stub = await getAgentByName(env.PausableAgent, name);
    const fiberId = await stub.startManagedHanging();
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'PausableAgent' AND agent_name = ?", [name], (r) => r.length === 1);
    const target = { agentClass: "PausableAgent", agentName: name };
    expect((await admin().action("pause_recovery", target, { reason: "hold the CRM sync" })).ok).toBe(true);

    const woke = await evictAndWake(name);
    expect(await woke.fiberStatus(fiberId)).toBe("interrupted");
    expect(await woke.recoveredIds()).toEqual([]);
    const status = await admin().status(target);
    expect(status.ok && status.value.recoveryPause?.held).toEqual([fiberId]);
    // Reported by the mixin (the SDK's own event for a managed fiber says "handled"): the incident stays open.
    await pollRows("SELECT 1 FROM recovery_pauses WHERE agent_name = ? AND skipped = 1", [name], (r) => r.length === 1);
    const incidentId = fiberIncidentId("PausableAgent", name, fiberId);
    await pollRows("SELECT 1 FROM incidents WHERE incident_id = ? AND status = 'open'", [incidentId], (r) => r.length === 1);

    const resumed = await admin().action("resume_recovery", target, { reason: "go" });
    expect(resumed.ok && resumed.value).toMatchObject({ recovered: [fiberId], after: { pendingRecovery: 0 } });
    expect(await woke.fiberStatus(fiberId)).toBe("completed");
    expect(await woke.recoveredIds()).toEqual([fiberId]);
  });

  it("an expired pause holds nothing back: the agent's own hook recovers as if never paused", async () => {
    const name = `pause-expiry-${uid()}`;
    const stub = await getAgentByName(env.PausableAgent, name);
    const fiberId = await stub.startHanging();
    await pollRows("SELECT 1 FROM agents WHERE agent_class = 'PausableAgent' AND agent_name = ?", [name], (r) => r.length === 1);
    const target = { agentClass: "PausableAgent", agentName: name };
    // 0.0003 h ≈ 1 s.
    expect((await admin().action("pause_recovery", target, { reason: "brief hold", hours: 0.0003 })).ok).toBe(true);
    await scheduler.wait(1300);

    const woke = await evictAndWake(name);
    expect(await woke.recoveredIds()).toEqual([fiberId]);
    expect(await woke.runRowIds()).toEqual([]);
    const status = await admin().status(target);
    expect(status.ok && status.value.recoveryPause).toMatchObject({ active: false, skipped: 0 });
    await pollRows("SELECT 1 FROM recovery_pauses WHERE agent_name = ? AND pause_state = 'paused'", [name], (r) => r.length === 1);
    expect(await recoveryPauseOf(env.DB, "PausableAgent", name, Date.now())).toMatchObject({ state: "expired" });
  });

  it("refuses an agent whose admin mixin predates the pause, naming it and what to upgrade (422, unsupported, audited)", async () => {
    const name = `older-${uid()}`;
    await registerAgent("OlderMixinAgent", name);
    const r = await admin().action("pause_recovery", { agentClass: "OlderMixinAgent", agentName: name }, { reason: "stop the storm" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe("unsupported");
    // What to upgrade, as facts: the agent, the method it lacks and the contract that brought it.
    expect(r.error.facts).toEqual({
      kind: "upgrade",
      action: "pause_recovery",
      rpc: "adminPauseRecovery",
      since: PAUSE_CONTRACT,
      agentClass: "OlderMixinAgent",
      agentName: name,
    });

    const csrf = csrfFromPage((await getText(`/agents/OlderMixinAgent/${encodeURIComponent(name)}`, "operator")).text);
    const res = await postForm(
      "/actions/resume-recovery",
      "operator",
      { agentClass: "OlderMixinAgent", agentName: name, reason: "resume" },
      { csrf, headers: { Accept: "application/json" } },
    );
    expect(res.status).toBe(422);
    // On the wire, the console's words for those facts: naming the agent and what to upgrade.
    const refused = (await res.json()) as { error: { code: string; message: string } };
    expect(refused.error.code).toBe("unsupported");
    expect(refused.error.message).toContain(`OlderMixinAgent "${name}"`);
    expect(refused.error.message).toContain("@agent-oncall/admin-rpc");
    expect((await auditRows(name)).map((a) => [a.action, a.result])).toEqual([
      ["pause_recovery", "error"],
      ["resume_recovery", "error"],
    ]);
  });

  it("pauses a class through a bulk action: every known agent of it, each audited, for the default expiry", async () => {
    const names = [`bulk-a-${uid()}`, `bulk-b-${uid()}`];
    for (const n of names) await (await getAgentByName(env.PausableAgent, n)).startHanging();
    for (const n of names) await pollRows("SELECT 1 FROM agents WHERE agent_class = 'PausableAgent' AND agent_name = ?", [n], (r) => r.length === 1);
    const started = Date.now();
    const res = await postForm(
      "/bulk",
      "operator",
      { agentClass: "PausableAgent", action: "pause-recovery", reason: "storm after the deploy" },
      { csrf: await csrfFor("operator"), headers: { Accept: "application/json" } },
    );
    expect(res.status).toBe(202);
    for (const n of names) {
      await pollRows("SELECT 1 FROM audit_log WHERE target_name = ? AND action = 'pause_recovery' AND result = 'ok'", [n], (r) => r.length === 1, 20_000);
      const st = await admin().status({ agentClass: "PausableAgent", agentName: n });
      expect(st.ok && st.value.recoveryPause).toMatchObject({ active: true, reason: "storm after the deploy" });
      const until = st.ok ? st.value.recoveryPause!.until : 0;
      expect(until - started).toBeGreaterThanOrEqual(PAUSE_DEFAULT_HOURS * 3_600_000 - 1000);
      expect(until - Date.now()).toBeLessThanOrEqual(PAUSE_DEFAULT_HOURS * 3_600_000);
    }
  });

  it("refuses a pause longer than 7 days, with a 400 and a sentence", async () => {
    const name = `pause-long-${uid()}`;
    await registerAgent("PausableAgent", name);
    const r = await admin().action("pause_recovery", { agentClass: "PausableAgent", agentName: name }, { reason: "long", hours: 24 * 8 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("at most 168 hours") });
  });
});
