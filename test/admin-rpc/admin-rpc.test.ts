import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { consoleAdminClient } from "../../worker/admin-client";
import { pollRows, rejectionOf } from "../helpers";

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "viewer@example.com", role: "viewer" as const };

type Kind = {
  label: string;
  agentClass: "ProbeAgent" | "PlainAdminAgent";
  /** Starts a fiber that runs until evicted, stashing `snapshot`; returns its run id. */
  start(name: string, snapshot: unknown): Promise<string>;
  evict(name: string): Promise<void>;
  clientOpts: { allowUnregistered?: boolean };
};

const kinds: Kind[] = [
  {
    label: "a plain Agent with only the mixin",
    agentClass: "PlainAdminAgent",
    start: async (name, snapshot) => (await getAgentByName(env.PlainAdminAgent, name)).startHangingFiber(snapshot),
    evict: async (name) => void (await rejectionOf((await getAgentByName(env.PlainAdminAgent, name)).evict())),
    clientOpts: { allowUnregistered: true },
  },
  {
    label: "an agent with telemetry and the mixin",
    agentClass: "ProbeAgent",
    start: async (name, snapshot) => {
      const stub = await getAgentByName(env.ProbeAgent, name);
      await stub.startHangingFiber(undefined, "probe-hang", snapshot);
      // The registry learns of it through its own telemetry.
      await pollRows("SELECT 1 FROM agents WHERE agent_class = 'ProbeAgent' AND agent_name = ?", [name], (r) => r.length === 1);
      return (await stub.runRows())[0]!.id;
    },
    evict: async (name) => void (await rejectionOf((await getAgentByName(env.ProbeAgent, name)).evict())),
    clientOpts: {},
  },
];

const auditRows = (name: string) =>
  env.DB.prepare("SELECT actor, role, action, reason, result, error, before, after FROM audit_log WHERE target_name = ? ORDER BY time, rowid")
    .bind(name)
    .all<{
      actor: string;
      role: string;
      action: string;
      reason: string;
      result: string;
      error: string | null;
      before: string | null;
      after: string | null;
    }>()
    .then((r) => r.results);

describe.each(kinds)("admin RPC on $label", (kind) => {
  it("lists a running fiber and returns its snapshot", async () => {
    const name = `list-${crypto.randomUUID().slice(0, 8)}`;
    const id = await kind.start(name, { step: 3, cursor: "page-7" });
    const admin = consoleAdminClient(env, viewer, kind.clientOpts);
    const t = { agentClass: kind.agentClass, agentName: name };

    const runs = await admin.listRuns(t);
    expect(runs.ok && runs.value.runs).toEqual([expect.objectContaining({ id, snapshotBytes: JSON.stringify({ step: 3, cursor: "page-7" }).length })]);
    const run = await admin.getRun(t, id);
    expect(run.ok && run.value).toMatchObject({ id, snapshot: { step: 3, cursor: "page-7" }, truncated: false });
    const status = await admin.status(t);
    expect(status.ok && status.value).toMatchObject({ status: "running", runCount: 1 });
    expect(status.ok && status.value.nextAlarm).toBeTypeOf("number");
  });

  it("caps a huge snapshot with an explicit truncation marker", async () => {
    const name = `big-${crypto.randomUUID().slice(0, 8)}`;
    const snapshot = { blob: "x".repeat(100_000) };
    const id = await kind.start(name, snapshot);
    const run = await consoleAdminClient(env, viewer, kind.clientOpts).getRun({ agentClass: kind.agentClass, agentName: name }, id);
    expect(run.ok).toBe(true);
    if (!run.ok) return;
    expect(run.value.truncated).toBe(true);
    expect(run.value.snapshotText!.endsWith(`… [truncated: ${JSON.stringify(snapshot).length} bytes, showing the first 65536]`)).toBe(true);
    expect(run.value.snapshotText!.length).toBeLessThan(66_000);
  });

  it("forces a running agent idle, audits it, and a second call is an explicit no-op", async () => {
    const name = `idle-${crypto.randomUUID().slice(0, 8)}`;
    const id = await kind.start(name, { step: 1 });
    const admin = consoleAdminClient(env, operator, kind.clientOpts);
    const t = { agentClass: kind.agentClass, agentName: name };

    const first = await admin.forceIdle(t, { reason: "stuck turn, paging customer" });
    expect(first.ok).toBe(true);
    if (!first.ok) return;
    expect(first.value).toMatchObject({ noop: false, abortedRuns: [id] });
    expect(first.value.before).toMatchObject({ status: "running", runCount: 1 });
    expect(first.value.after).toMatchObject({ status: "idle", runCount: 0 });
    const runs = await admin.listRuns(t);
    expect(runs.ok && runs.value.runs).toEqual([]);

    const second = await admin.forceIdle(t, { reason: "again, to be sure" });
    expect(second.ok && second.value.noop).toBe(true);

    const audit = await auditRows(name);
    expect(audit.map((a) => [a.action, a.result, a.reason, a.actor, a.role])).toEqual([
      ["force_idle", "ok", "stuck turn, paging customer", "oncall@example.com", "operator"],
      ["force_idle", "noop", "again, to be sure", "oncall@example.com", "operator"],
    ]);
    expect(JSON.parse(audit[0]!.before!)).toMatchObject({ status: "running" });
    expect(JSON.parse(audit[0]!.after!)).toMatchObject({ status: "idle" });

    // The admin event reaches D1 through the telemetry pipeline.
    const events = await pollRows<{ payload: string }>(
      "SELECT payload FROM events WHERE type = 'admin.force_idle' AND agent_name = ? ORDER BY time",
      [name],
      (r) => r.length === 2,
    );
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ actor: "oncall@example.com", reason: "stuck turn, paging customer", result: "ok" });
  });

  it("recovers an orphaned fiber at once when the alarm is triggered after an eviction", async () => {
    const name = `alarm-${crypto.randomUUID().slice(0, 8)}`;
    const id = await kind.start(name, { step: 2 });
    await kind.evict(name);
    const admin = consoleAdminClient(env, operator, kind.clientOpts);
    const r = await admin.triggerAlarm({ agentClass: kind.agentClass, agentName: name }, { reason: "recover now" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    // The SDK recovers when the evicted agent wakes for this call; the result reports that recovery too.
    expect(r.value.recoveredRuns).toEqual([id]);
    expect(r.value.after).toMatchObject({ status: "idle", runCount: 0 });
    expect(r.value.recoveryEvents.map((e) => e.type)).toEqual(expect.arrayContaining(["fiber.recovery.detected", "fiber.recovery.handled"]));
    expect(r.value.recoveryEvents.every((e) => e.fiberId === id)).toBe(true);
    expect((await auditRows(name)).map((a) => [a.action, a.result])).toEqual([["trigger_alarm", "ok"]]);
  });

  it("answers bad input with typed errors, and refuses and audits a missing reason, a viewer and a missing actor", async () => {
    const name = `bad-${crypto.randomUUID().slice(0, 8)}`;
    await kind.start(name, { step: 0 });
    const t = { agentClass: kind.agentClass, agentName: name };
    const op = consoleAdminClient(env, operator, kind.clientOpts);

    expect(await op.getRun(t, "")).toEqual({ ok: false, error: { code: "invalid_input", message: "id: a run id is required" } });
    expect(await op.getRun(t, "no-such-run")).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await op.forceIdle(t, {})).toMatchObject({ ok: false, error: { code: "invalid_input", message: "reason: a reason is required" } });
    expect(await op.forceIdle(t, { reason: "   " })).toMatchObject({ ok: false, error: { code: "invalid_input" } });
    expect(await op.triggerAlarm({ agentClass: "Not A Class", agentName: name }, { reason: "x" })).toMatchObject({
      ok: false,
      error: { code: "invalid_input" },
    });

    const asViewer = await consoleAdminClient(env, viewer, kind.clientOpts).forceIdle(t, { reason: "curious" });
    expect(asViewer).toMatchObject({ ok: false, error: { code: "not_permitted" } });
    const nobody = await consoleAdminClient(env, undefined, kind.clientOpts).triggerAlarm(t, { reason: "anonymous" });
    expect(nobody).toMatchObject({ ok: false, error: { code: "not_permitted" } });
    expect(await consoleAdminClient(env, undefined, kind.clientOpts).listRuns(t)).toMatchObject({ ok: false, error: { code: "not_permitted" } });

    const audit = await auditRows(name);
    expect(audit.map((a) => [a.action, a.result, a.actor, a.role])).toEqual([
      ["force_idle", "invalid", "oncall@example.com", "operator"],
      ["force_idle", "invalid", "oncall@example.com", "operator"],
      ["trigger_alarm", "invalid", "oncall@example.com", "operator"],
      ["force_idle", "denied", "viewer@example.com", "viewer"],
      ["trigger_alarm", "denied", "(none)", "none"],
    ]);
    // Nothing changed: the refused calls did not touch the agent.
    const status = await op.status(t);
    expect(status.ok && status.value.status).toBe("running");
  });
});

describe("admin client addressing", () => {
  it("refuses an agent the registry has never heard of, unless told to allow it", async () => {
    const t = { agentClass: "PlainAdminAgent", agentName: `unknown-${crypto.randomUUID().slice(0, 8)}` };
    expect(await consoleAdminClient(env, viewer).status(t)).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await consoleAdminClient(env, viewer, { allowUnregistered: true }).status(t)).toMatchObject({ ok: true, value: { status: "idle" } });
  });

  it("refuses a class outside the console's agent allowlist", async () => {
    const r = await consoleAdminClient(env, viewer, { allowUnregistered: true }).status({ agentClass: "NoSuchAgent", agentName: "x" });
    expect(r).toEqual({
      ok: false,
      error: {
        code: "not_found",
        message: expect.any(String),
        facts: { kind: "not_addressable", agentClass: "NoSuchAgent", allowed: expect.arrayContaining(["ProbeAgent"]) },
      },
    });
  });
});
