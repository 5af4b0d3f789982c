import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { AUDIT_LIMITS, capAuditRecord } from "../../src/admin-rpc/audit-caps";
import { createAdminClient } from "../../src/admin-rpc/client-entry";
import { writeAudit } from "../../src/store/audit";
import { allowedAgentClasses, consoleAdminClient } from "../../worker/admin-client";
import { ConfigError } from "../../worker/config";
import type { Env } from "../../worker/env";
import { envWith, pollRows } from "../helpers";

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "viewer@example.com", role: "viewer" as const };
const uid = () => crypto.randomUUID().slice(0, 8);

type AuditRow = {
  actor: string;
  role: string;
  action: string;
  target_class: string;
  target_name: string;
  reason: string;
  result: string;
  error: string | null;
};
const auditByName = (name: string) =>
  env.DB.prepare("SELECT actor, role, action, target_class, target_name, reason, result, error FROM audit_log WHERE target_name = ?")
    .bind(name)
    .all<AuditRow>()
    .then((r) => r.results);

/** The test env with a different AGENT_CLASSES (every other binding inherited). */
const withAgentClasses = (value: string) => envWith<Env>({ AGENT_CLASSES: value });

async function runningProbe(snapshot: unknown) {
  const name = `safety-${uid()}`;
  const stub = await getAgentByName(env.ProbeAgent, name);
  await stub.startHangingFiber(undefined, "probe-hang", snapshot);
  await pollRows("SELECT 1 FROM agents WHERE agent_class = 'ProbeAgent' AND agent_name = ?", [name], (r) => r.length === 1);
  return { t: { agentClass: "ProbeAgent", agentName: name }, runId: (await stub.runRows())[0]!.id };
}

describe("the admin client's agent allowlist", () => {
  it("is the test worker's agent bindings, read from AGENT_CLASSES", () => {
    // Every Durable Object namespace the test worker binds (the agents it hosts; not the vitest plugin's own), and nothing else.
    const namespaces = Object.entries(env).filter(
      ([k, v]) => !k.startsWith("__VITEST") && (v as object | null)?.constructor?.name === "DurableObjectNamespace",
    );
    expect(namespaces.length).toBeGreaterThan(20);
    expect(allowedAgentClasses(env).sort()).toEqual(namespaces.map(([k]) => k).sort());
    expect(allowedAgentClasses(withAgentClasses(" ProbeAgent , GapAgent,"))).toEqual(["ProbeAgent", "GapAgent"]);
    // A list naming one of the console's own bindings, or something that is no class name, is refused outright; unset means none.
    for (const bad of [" ProbeAgent ,ASSETS", "DB", "TELEMETRY_QUEUE", "HISTORY", "ProbeAgent,not a class"]) {
      expect(() => allowedAgentClasses(withAgentClasses(bad)), bad).toThrow(ConfigError);
      expect(() => consoleAdminClient(withAgentClasses(bad), viewer), bad).toThrow(/AGENT_CLASSES=/);
    }
    expect(allowedAgentClasses(envWith<Env>({ AGENT_CLASSES: undefined }))).toEqual([]);
  });

  it("refuses ASSETS as not found, for reads and for audited actions", async () => {
    const name = `assets-${uid()}`;
    const t = { agentClass: "ASSETS", agentName: name };
    for (const client of [consoleAdminClient(env, viewer, { allowUnregistered: true })]) {
      expect(await client.status(t)).toMatchObject({
        ok: false,
        error: { code: "not_found", facts: { kind: "not_addressable", agentClass: "ASSETS" } },
      });
      expect(await client.listRuns(t)).toMatchObject({ ok: false, error: { code: "not_found" } });
      expect(await client.getRun(t, "run-1")).toMatchObject({ ok: false, error: { code: "not_found" } });
    }
    const r = await consoleAdminClient(env, operator, { allowUnregistered: true }).forceIdle(t, { reason: "probing: password=hunter2hunter2" });
    expect(r).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await auditByName(name)).toEqual([
      expect.objectContaining({
        actor: operator.email,
        action: "force_idle",
        target_class: "ASSETS",
        result: "error",
        // The reason is masked like any other free text people read.
        reason: "probing: password=[masked: password]",
        error: expect.stringMatching(/^not_found: ASSETS is not an addressable agent class/),
      }),
    ]);
  });

  it("refuses a bound agent class that is not in the allowlist, without looking its binding up", async () => {
    const { t } = await runningProbe({ step: 1 });
    const looked: string[] = [];
    const client = createAdminClient(
      {
        audit: (e) => writeAudit(env.DB, e),
        agentClasses: ["PlainAdminAgent"],
        isRegistered: async () => true,
        namespace: (c) => {
          looked.push(c);
          return (env as unknown as Record<string, DurableObjectNamespace>)[c] ?? null;
        },
      },
      operator,
    );
    expect(await client.status(t)).toMatchObject({
      ok: false,
      error: { code: "not_found", facts: { kind: "not_addressable", agentClass: "ProbeAgent", allowed: ["PlainAdminAgent"] } },
    });
    expect(await client.triggerAlarm(t, { reason: "recover now" })).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(looked).toEqual([]);
    expect(await auditByName(t.agentName)).toEqual([
      expect.objectContaining({
        action: "trigger_alarm",
        target_class: "ProbeAgent",
        result: "error",
        error: "not_found: ProbeAgent is not an addressable agent class",
      }),
    ]);
    // The same agent through the console's allowlist is reachable.
    expect(await consoleAdminClient(env, viewer).status(t)).toMatchObject({ ok: true, value: { status: "running" } });
  });
});

describe("audit field caps", () => {
  it("stores a 20,010-character target name, a huge reason and a huge actor capped, with a marker", async () => {
    const prefix = `cap-${uid()}-`;
    const agentName = prefix + "n".repeat(20_010 - prefix.length);
    const email = `${"a".repeat(1000)}@example.com`;
    const r = await consoleAdminClient(env, { email, role: "operator" }).forceIdle({ agentClass: "ProbeAgent", agentName }, { reason: "r".repeat(5000) });
    expect(r).toMatchObject({ ok: false, error: { code: "invalid_input" } });
    const rows = (await env.DB.prepare("SELECT actor, target_name, reason, result FROM audit_log WHERE target_name LIKE ?").bind(`${prefix}%`).all<AuditRow>())
      .results;
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.result).toBe("invalid");
    expect(row.target_name).toBe(`${agentName.slice(0, AUDIT_LIMITS.targetName)}… [cut: ${20_010 - AUDIT_LIMITS.targetName} more chars]`);
    expect(row.reason).toBe(`${"r".repeat(AUDIT_LIMITS.reason)}… [cut: ${5000 - AUDIT_LIMITS.reason} more chars]`);
    expect(row.actor).toBe(`${email.slice(0, AUDIT_LIMITS.actor)}… [cut: ${email.length - AUDIT_LIMITS.actor} more chars]`);
  });

  it("replaces an oversized before/after with an explicit stand-in and caps the error and class", () => {
    const big = { status: "running", schedules: Array.from({ length: 2000 }, (_, i) => ({ id: `s${i}`, callback: "tick" })) };
    const capped = capAuditRecord({
      id: "x",
      time: 1,
      actor: "a@example.com",
      role: "operator",
      action: "force_idle",
      targetClass: "C".repeat(300),
      targetName: "n",
      reason: "why",
      before: big,
      after: { status: "idle" },
      result: "ok",
      error: "e".repeat(3000),
    });
    const json = JSON.stringify(big);
    expect(capped.before).toEqual({
      cut: true,
      chars: json.length,
      preview: `${json.slice(0, AUDIT_LIMITS.json)}… [cut: ${json.length - AUDIT_LIMITS.json} more chars]`,
    });
    expect(capped.after).toEqual({ status: "idle" });
    expect(capped.targetClass).toBe(`${"C".repeat(200)}… [cut: 100 more chars]`);
    expect(capped.error).toBe(`${"e".repeat(2000)}… [cut: 1000 more chars]`);
    expect(capped.reason).toBe("why");
  });
});

describe("live snapshots through the admin client", () => {
  it("are masked, as parsed JSON and as text", async () => {
    const snapshot = {
      step: 4,
      password: "hunter2hunter2",
      notes: ["push with ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345"],
      db: { url: "postgres://app:Pg5ecret99@db/x" },
    };
    const { t, runId } = await runningProbe(snapshot);
    const run = await consoleAdminClient(env, viewer).getRun(t, runId);
    expect(run.ok).toBe(true);
    if (!run.ok) return;
    expect(run.value.snapshot).toEqual({
      step: 4,
      password: "[masked: password]",
      notes: ["push with [masked: github token]"],
      db: { url: "postgres://[masked: url credentials]@db/x" },
    });
    for (const secret of ["hunter2", "R4nd0mT0k3n", "Pg5ecret99"]) expect(run.value.snapshotText).not.toContain(secret);
    expect(JSON.parse(run.value.snapshotText!)).toEqual(run.value.snapshot);
  });

  it("keep nothing of a secret that straddles the snapshot cap", async () => {
    const token = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngXyZ12345";
    // The agent cuts snapshots at 65,536 characters: place the token across that cut.
    const snapshot = { blob: `${"x".repeat(65_536 - '{"blob":"'.length - 10)} ${token} ${"y".repeat(100)}` };
    const { t, runId } = await runningProbe(snapshot);
    const run = await consoleAdminClient(env, viewer).getRun(t, runId);
    expect(run.ok && run.value.truncated).toBe(true);
    if (!run.ok) return;
    const text = run.value.snapshotText!;
    for (let i = 4; i + 6 <= token.length; i++) expect(text).not.toContain(token.slice(i, i + 6));
    expect(text).toMatch(/… \[truncated: \d+ bytes, showing the first 65536\]$/);
  });
});
