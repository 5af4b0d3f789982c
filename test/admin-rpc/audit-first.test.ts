import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import type { AuditRecord } from "../../src/admin-rpc/audit-record";
import { type AdminClientPorts, createAdminClient } from "../../src/admin-rpc/client-entry";
import { writeAudit } from "../../src/store/audit";
import { pollRows } from "../helpers";

// Every action is on record before it starts and completed whatever happens (a throw, a timeout, a failing
// binding); a call that fails in transit is retried once; an agent without the mixin is refused, typed.

const operator = { email: "oncall@example.com", role: "operator" as const };
const viewer = { email: "viewer@example.com", role: "viewer" as const };
const uid = () => crypto.randomUUID().slice(0, 8);

type Fault = { method: string; times: number; error?: () => unknown; hang?: boolean; calls: number };

/**
 * A namespace whose stubs fail `method` the first `times` calls (thrown in transit, as a stub of an agent
 * being evicted does), or never answer it. Everything else is the real agent.
 */
function faulty(agents: unknown, fault: Fault): DurableObjectNamespace {
  const ns = agents as DurableObjectNamespace;
  return {
    idFromName: (n: string) => ns.idFromName(n),
    get: (id: DurableObjectId, o?: DurableObjectNamespaceGetDurableObjectOptions) => {
      const stub = ns.get(id, o);
      return new Proxy(stub, {
        get(target, prop) {
          if (prop === fault.method) {
            return (...args: unknown[]) => {
              fault.calls++;
              if (fault.hang) return new Promise(() => {});
              if (fault.times-- > 0) throw fault.error?.() ?? Object.assign(new Error("Network connection lost."), { retryable: true });
              return (target as unknown as Record<string, (...a: unknown[]) => unknown>)[fault.method]!(...args);
            };
          }
          const v = Reflect.get(target, prop);
          // An RPC stub's methods are called on the stub itself (`bind` would be taken for a remote method).
          return typeof v === "function" ? (...args: unknown[]) => (target as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[prop]!(...args) : v;
        },
      });
    },
  } as unknown as DurableObjectNamespace;
}

function ports(overrides: Partial<AdminClientPorts> & { log?: string[] } = {}): AdminClientPorts {
  const log = overrides.log ?? [];
  return {
    audit: async (e) => {
      log.push(`audit:${e.result}`);
      await writeAudit(env.DB, e);
    },
    agentClasses: ["ProbeAgent", "PlainAdminAgent", "TelemetryOnlyAgent"],
    isRegistered: async () => true,
    namespace: (c) => {
      log.push(`namespace:${c}`);
      return (env as unknown as Record<string, DurableObjectNamespace>)[c] ?? null;
    },
    ...overrides,
  };
}

const auditRows = (name: string) =>
  env.DB.prepare("SELECT id, action, result, error FROM audit_log WHERE target_name = ? ORDER BY time, rowid")
    .bind(name)
    .all<{ id: string; action: string; result: string; error: string | null }>()
    .then((r) => r.results);

describe("the retry rule", () => {
  it("retries a read that failed in transit once, and answers", async () => {
    const name = `retry-${uid()}`;
    const fault: Fault = { method: "adminStatus", times: 1, calls: 0 };
    const client = createAdminClient(ports({ namespace: () => faulty(env.PlainAdminAgent, fault) }), viewer, { retryDelayMs: 10 });
    expect(await client.status({ agentClass: "PlainAdminAgent", agentName: name })).toMatchObject({ ok: true, value: { status: "idle" } });
    expect(fault.calls).toBe(2);
  });

  it("gives a typed error, not a throw, when the retry fails too", async () => {
    const fault: Fault = { method: "adminListRuns", times: 2, calls: 0 };
    const client = createAdminClient(ports({ namespace: () => faulty(env.PlainAdminAgent, fault) }), viewer, { retryDelayMs: 10 });
    expect(await client.listRuns({ agentClass: "PlainAdminAgent", agentName: `twice-${uid()}` })).toEqual({
      ok: false,
      error: {
        code: "unavailable",
        message: "the agent could not be reached: Network connection lost.",
        facts: { kind: "unreachable", cause: "Network connection lost." },
      },
    });
    expect(fault.calls).toBe(2);
  });

  it("does not retry an overloaded agent", async () => {
    const fault: Fault = {
      method: "adminStatus",
      times: 1,
      calls: 0,
      error: () => Object.assign(new Error("Durable Object is overloaded."), { retryable: true, overloaded: true }),
    };
    const client = createAdminClient(ports({ namespace: () => faulty(env.PlainAdminAgent, fault) }), viewer, { retryDelayMs: 10 });
    expect(await client.status({ agentClass: "PlainAdminAgent", agentName: `busy-${uid()}` })).toMatchObject({ ok: false, error: { code: "unavailable" } });
    expect(fault.calls).toBe(1);
  });

  it("answers an agent class without the admin mixin with `unsupported`, once, without retrying", async () => {
    const name = `nomixin-${uid()}`;
    await (await getAgentByName(env.TelemetryOnlyAgent, name)).work();
    const fault: Fault = { method: "adminStatus", times: 0, calls: 0 };
    const client = createAdminClient(ports({ namespace: () => faulty(env.TelemetryOnlyAgent, fault) }), viewer, { retryDelayMs: 10 });
    expect(await client.status({ agentClass: "TelemetryOnlyAgent", agentName: name })).toEqual({
      ok: false,
      error: { code: "unsupported", message: expect.any(String), facts: { kind: "no_mixin", agentClass: "TelemetryOnlyAgent" } },
    });
    expect(fault.calls).toBe(1);
  });
});

describe("audit first, completed whatever happens", () => {
  it("writes the pending row before it touches the agent, then completes the same row", async () => {
    const name = `order-${uid()}`;
    const log: string[] = [];
    const r = await createAdminClient(ports({ log }), operator, { allowUnregistered: true }).forceIdle(
      { agentClass: "PlainAdminAgent", agentName: name },
      { reason: "check the order" },
    );
    expect(r).toMatchObject({ ok: true, value: { noop: true } });
    expect(log).toEqual(["audit:pending", "namespace:PlainAdminAgent", "audit:noop"]);
    expect(await auditRows(name)).toEqual([expect.objectContaining({ action: "force_idle", result: "noop", error: null })]);
  });

  it("completes the row when the agent never answers (timeout)", async () => {
    const name = `slow-${uid()}`;
    const fault: Fault = { method: "adminForceIdle", times: 0, calls: 0, hang: true };
    const client = createAdminClient(ports({ namespace: () => faulty(env.PlainAdminAgent, fault) }), operator, { timeoutMs: 200 });
    const r = await client.forceIdle({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "stuck" });
    expect(r).toEqual({
      ok: false,
      error: { code: "timeout", message: "the agent did not answer within 200 ms", facts: { kind: "timeout", limitMs: 200 } },
    });
    expect(await auditRows(name)).toEqual([
      expect.objectContaining({ result: "error", error: expect.stringMatching(/^timeout: the agent did not answer within 200 ms/) }),
    ]);
  });

  it("completes the row when the binding itself throws, and answers with a typed error", async () => {
    const name = `boom-${uid()}`;
    const client = createAdminClient(
      ports({
        namespace: () => {
          throw new Error("binding exploded");
        },
      }),
      operator,
    );
    const r = await client.triggerAlarm({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "recover" });
    expect(r).toEqual({
      ok: false,
      error: {
        code: "unavailable",
        message: "the action failed in the console: binding exploded",
        facts: { kind: "console_failed", cause: "binding exploded" },
      },
    });
    expect(await auditRows(name)).toEqual([
      expect.objectContaining({ action: "trigger_alarm", result: "error", error: "unavailable: the action failed in the console: binding exploded" }),
    ]);
  });

  it("completes the row when the registry lookup fails", async () => {
    const name = `registry-${uid()}`;
    const client = createAdminClient(
      ports({
        isRegistered: async () => {
          throw new Error("D1_ERROR: overloaded");
        },
      }),
      operator,
    );
    const r = await client.forceIdle({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "x" });
    expect(r).toMatchObject({ ok: false, error: { code: "unavailable" } });
    expect(await auditRows(name)).toEqual([
      expect.objectContaining({ result: "error", error: "unavailable: the action failed in the console: D1_ERROR: overloaded" }),
    ]);
  });

  it("does not act at all when the attempt cannot be recorded", async () => {
    const log: string[] = [];
    const client = createAdminClient(
      ports({
        log,
        audit: async () => {
          throw new Error("D1 is down");
        },
      }),
      operator,
      { allowUnregistered: true },
    );
    const r = await client.forceIdle({ agentClass: "PlainAdminAgent", agentName: `nodb-${uid()}` }, { reason: "x" });
    expect(r).toEqual({
      ok: false,
      error: { code: "unavailable", message: "the audit log could not be written: D1 is down", facts: { kind: "audit_failed", cause: "D1 is down" } },
    });
    expect(log).toEqual([]);
  });

  it("leaves the row pending, visibly, when only the outcome cannot be recorded", async () => {
    const name = `half-${uid()}`;
    let writes = 0;
    const client = createAdminClient(
      ports({
        audit: async (e: AuditRecord) => {
          if (writes++ > 0) throw new Error("D1 went away");
          await writeAudit(env.DB, e);
        },
      }),
      operator,
      { allowUnregistered: true },
    );
    expect(await client.forceIdle({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "x" })).toMatchObject({ ok: true });
    expect(await auditRows(name)).toEqual([expect.objectContaining({ result: "pending", error: null })]);
  });

  it("never rewrites a completed row", async () => {
    const name = `done-${uid()}`;
    await createAdminClient(ports(), operator, { allowUnregistered: true }).forceIdle({ agentClass: "PlainAdminAgent", agentName: name }, { reason: "x" });
    const [row] = await auditRows(name);
    await writeAudit(env.DB, {
      id: row!.id,
      time: 1,
      actor: "mallory@example.com",
      role: "operator",
      action: "force_idle",
      targetClass: "PlainAdminAgent",
      targetName: name,
      reason: "r",
      before: null,
      after: null,
      result: "ok",
      error: null,
    });
    expect(await auditRows(name)).toEqual([expect.objectContaining({ id: row!.id, result: "noop" })]);
    await pollRows("SELECT actor FROM audit_log WHERE id = ?", [row!.id], (r) => (r[0] as { actor: string }).actor === operator.email);
  });
});
