import { getAgentByName } from "agents";
import { z } from "zod";
import { maskJson, maskSecrets, type QueueLike, Telemetry } from "@agent-oncall/telemetry";
import { capAuditRecord } from "./audit-caps.js";
import { type AuditRecord } from "./audit-record.js";
import {
  type ActionInput,
  type AdminError,
  type AdminResult,
  type AdminRpc,
  actionInput,
  adminError,
  describeInput,
  fail,
  type ForceIdleOutput,
  forceIdleOutput,
  type ListRunsOutput,
  listRunsOutput,
  type RunDetail,
  runDetail,
  runIdInput,
  type StatusOutput,
  statusOutput,
  type TriggerAlarmOutput,
  triggerAlarmOutput,
} from "./contract.js";

/** Who is acting. The console supplies it from the verified identity; the client refuses without one. */
export const actor = z.object({ email: z.string().trim().min(1, "an actor is required"), role: z.enum(["viewer", "operator"]) });
export type Actor = z.infer<typeof actor>;

/** An agent, addressed by its class (which is also its Durable Object binding name) and instance name. */
export const target = z.object({
  agentClass: z.string().trim().regex(/^[A-Za-z_$][\w$]{0,199}$/, "agent class must be a class name"),
  agentName: z.string().trim().min(1, "agent name is required").max(500),
});
export type Target = z.infer<typeof target>;

/**
 * What the client needs from the Worker it runs in, passed in so this entry
 * carries no storage code: the console wires its D1 audit writer, its agent
 * registry and its Durable Object bindings (worker/admin-client.ts).
 */
export type AdminClientPorts = {
  /** Writes one audit row. Called for every action, whatever its result. */
  audit: (entry: AuditRecord) => Promise<void>;
  /**
   * The agent classes this Worker may address: its Durable Object bindings to agents, by class name. Nothing
   * else is ever looked up (in workerd, ASSETS and other bindings pass a "has idFromName" test).
   */
  agentClasses: readonly string[];
  /** Whether this agent has ever reported (so a typo cannot create an empty Durable Object). */
  isRegistered: (agentClass: string, agentName: string) => Promise<boolean>;
  /** The Durable Object namespace that hosts this agent class, or null when the Worker may not address it. */
  namespace: (agentClass: string) => DurableObjectNamespace | null;
  /** Where admin telemetry events go (the telemetry Queue producer); none means no event. */
  queue?: QueueLike | null;
};
export type AdminClientOptions = {
  timeoutMs?: number;
  now?: () => number;
  /** Address agents the registry has never heard from (plain agents without our telemetry). Off by default: a typo would otherwise create an empty Durable Object. */
  allowUnregistered?: boolean;
};

const DEFAULT_TIMEOUT_MS = 15_000;
/** Free text longer than this is cut before masking; the audit caps are far below it. */
const MASK_CHARS = 64 * 1024;

/** A run detail with its snapshot masked, as JSON (key-aware) and as text. */
function maskedRun(r: RunDetail): RunDetail {
  return { ...r, snapshot: maskJson(r.snapshot), snapshotText: r.snapshotText === null ? null : maskSecrets(r.snapshotText) };
}

/** Validates what a Durable Object sent back, so a mismatched deploy shows as a typed error, not a crash. */
function checked<T>(schema: z.ZodType<T>, r: unknown): AdminResult<T> {
  const shape = z.union([z.object({ ok: z.literal(true), value: z.unknown() }), z.object({ ok: z.literal(false), error: adminError })]).safeParse(r);
  if (!shape.success) return fail("unavailable", "the agent answered with something that is not an admin result (is it running an older version without withAdminRpc?)");
  if (!shape.data.ok) return { ok: false, error: shape.data.error };
  const value = schema.safeParse(shape.data.value);
  return value.success ? { ok: true, value: value.data } : fail("unavailable", `the agent's answer did not match the contract: ${describeInput(value.error)}`);
}

/**
 * The Worker-side admin client. Reads need an actor; actions need an operator
 * and a reason, and every action — allowed, refused, invalid or failed — goes
 * through one audited path: an audit_log row and an admin telemetry event.
 */
export function createAdminClient(ports: AdminClientPorts, identity: unknown, opts: AdminClientOptions = {}) {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const now = opts.now ?? Date.now;
  const me = actor.safeParse(identity);

  async function stubFor(t: unknown): Promise<AdminResult<{ target: Target; stub: AdminRpc }>> {
    const parsed = target.safeParse(t);
    if (!parsed.success) return fail("invalid_input", describeInput(parsed.error));
    const { agentClass, agentName } = parsed.data;
    if (!ports.agentClasses.includes(agentClass)) {
      return fail("not_found", `${agentClass} is not an agent class this Worker may address (it may address: ${ports.agentClasses.join(", ") || "none"})`);
    }
    if (!opts.allowUnregistered && !(await ports.isRegistered(agentClass, agentName))) return fail("not_found", `no agent ${agentClass} "${agentName}" in the registry`);
    const ns = ports.namespace(agentClass);
    if (!ns) return fail("not_found", `this Worker has no Durable Object binding named ${agentClass}`);
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's helper is typed for Agent namespaces.
    const stub = (await getAgentByName(ns as any, agentName)) as unknown as AdminRpc;
    return { ok: true, value: { target: parsed.data, stub } };
  }

  async function call<T>(schema: z.ZodType<T>, fn: () => Promise<unknown>): Promise<AdminResult<T>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<AdminResult<T>>((resolve) => {
      timer = setTimeout(() => resolve(fail("timeout", `the agent did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([fn().then((r) => checked(schema, r)), timeout]);
    } catch (e) {
      return fail("unavailable", `the agent could not be reached: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async function read<T>(t: unknown, schema: z.ZodType<T>, fn: (stub: AdminRpc) => Promise<unknown>): Promise<AdminResult<T>> {
    if (!me.success) return fail("not_permitted", describeInput(me.error));
    const s = await stubFor(t);
    if (!s.ok) return s;
    return call(schema, () => fn(s.value.stub));
  }

  /** The one audited path every action takes. */
  async function act<T extends { before?: unknown; after?: unknown; noop?: boolean }>(
    action: "force_idle" | "trigger_alarm",
    t: unknown,
    input: unknown,
    schema: z.ZodType<T>,
    fn: (stub: AdminRpc, input: ActionInput) => Promise<unknown>,
  ): Promise<AdminResult<T>> {
    const tgt = target.safeParse(t);
    const who = me.success ? me.data : { email: String((identity as { email?: unknown } | null)?.email || "(none)"), role: "none" };
    const rawReason = typeof (input as { reason?: unknown } | null)?.reason === "string" ? (input as { reason: string }).reason : "";
    // The admin event is reported as coming from the target; only a target that exists may report, or a typo
    // would enter the registry (and make the agent addressable) through its own refusal.
    let targetKnown = false;
    const audit = async (result: "ok" | "noop" | "error" | "denied" | "invalid", value?: T, error?: AdminError) => {
      const raw = {
        id: crypto.randomUUID(),
        time: now(),
        actor: who.email,
        role: who.role,
        action,
        targetClass: tgt.success ? tgt.data.agentClass : String((t as { agentClass?: unknown } | null)?.agentClass ?? "(invalid)"),
        targetName: tgt.success ? tgt.data.agentName : String((t as { agentName?: unknown } | null)?.agentName ?? "(invalid)"),
        // A reason is free text: masked like everything else an operator types that others read.
        reason: maskSecrets(rawReason.slice(0, MASK_CHARS)),
        before: value?.before ?? null,
        after: value?.after ?? null,
        result,
        error: error ? maskSecrets(`${error.code}: ${error.message}`.slice(0, MASK_CHARS)) : null,
      } satisfies AuditRecord;
      // Caps every field: refused and invalid attempts carry whatever the caller sent.
      const entry = capAuditRecord(raw);
      await ports.audit(entry);
      if (targetKnown) await emitAdminEvent(ports.queue ?? null, action, entry);
    };
    if (tgt.success) targetKnown = await ports.isRegistered(tgt.data.agentClass, tgt.data.agentName);

    if (!me.success) {
      const r = fail<T>("not_permitted", `refused: ${describeInput(me.error)}`);
      await audit("denied", undefined, r.ok ? undefined : r.error);
      return r;
    }
    if (me.data.role !== "operator") {
      const r = fail<T>("not_permitted", `refused: ${me.data.email} has the ${me.data.role} role; this action needs operator`);
      await audit("denied", undefined, r.ok ? undefined : r.error);
      return r;
    }
    const parsed = actionInput.safeParse(input);
    if (!parsed.success) {
      const r = fail<T>("invalid_input", describeInput(parsed.error));
      await audit("invalid", undefined, r.ok ? undefined : r.error);
      return r;
    }
    const s = await stubFor(t);
    if (!s.ok) {
      await audit(s.error.code === "invalid_input" ? "invalid" : "error", undefined, s.error);
      return s;
    }
    targetKnown = true; // resolved: registered, or explicitly allowed

    const r = await call(schema, () => fn(s.value.stub, parsed.data));
    if (r.ok) await audit(r.value.noop ? "noop" : "ok", r.value);
    else await audit("error", undefined, r.error);
    return r;
  }

  return {
    /** Live run rows and managed fibers. */
    listRuns: (t: Target): Promise<AdminResult<ListRunsOutput>> => read(t, listRunsOutput, (s) => s.adminListRuns()),
    /**
     * One run with its (capped) snapshot, masked: credentials in it never reach a viewer. There is no
     * unmasked variant; the agent's owner reads raw state with their own tools.
     */
    getRun: async (t: Target, id: unknown): Promise<AdminResult<RunDetail>> => {
      const p = runIdInput.safeParse({ id });
      if (!p.success) return fail("invalid_input", describeInput(p.error));
      const r = await read(t, runDetail, (s) => s.adminGetRun(p.data));
      return r.ok ? { ok: true, value: maskedRun(r.value) } : r;
    },
    /** Derived status, next alarm, schedules and chat-recovery records. */
    status: (t: Target): Promise<AdminResult<StatusOutput>> => read(t, statusOutput, (s) => s.adminStatus()),
    /** Operator only, audited. */
    forceIdle: (t: Target, input: unknown): Promise<AdminResult<ForceIdleOutput>> => act("force_idle", t, input, forceIdleOutput, (s, i) => s.adminForceIdle(i)),
    /** Operator only, audited. */
    triggerAlarm: (t: Target, input: unknown): Promise<AdminResult<TriggerAlarmOutput>> =>
      act("trigger_alarm", t, input, triggerAlarmOutput, (s, i) => s.adminTriggerAlarm(i)),
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;

/** The admin telemetry event for an audited action, sent through the same Queue as agent events. */
async function emitAdminEvent(
  queue: QueueLike | null,
  action: "force_idle" | "trigger_alarm",
  e: { actor: string; reason: string; result: string; before: unknown; after: unknown; targetClass: string; targetName: string; error: string | null },
): Promise<void> {
  if (!queue) return;
  const telemetry = new Telemetry({ source: { agentClass: e.targetClass, agentName: e.targetName }, queue });
  const result = e.result === "invalid" ? "error" : (e.result as "ok" | "noop" | "error" | "denied");
  telemetry.record(action === "force_idle" ? "admin.force_idle" : "admin.trigger_alarm", {
    actor: e.actor,
    reason: e.reason || "(none given)",
    result,
    ...(e.before ? { before: summary(e.before) } : {}),
    ...(e.after ? { after: summary(e.after) } : {}),
  });
  await telemetry.settle();
}

/** The part of a status worth keeping in an event: small and without snapshots. */
function summary(s: unknown): unknown {
  const v = s as Partial<StatusOutput>;
  return { status: v.status, runCount: v.runCount, nextAlarm: v.nextAlarm, chatRecoveryIncidents: v.chatRecoveryIncidents?.length };
}
