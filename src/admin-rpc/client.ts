import { maskJson, maskSecrets, normalizeSdkEvent, parseAgentKeyName, parseWorkerClassKey, type QueueLike, Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName, getSubAgentByName } from "agents";
import { z } from "zod";
import { ADMIN_ACTIONS, type AdminActionName, mayTake, upgradeRefusal } from "./actions.js";
import { capAuditRecord } from "./audit-caps.js";
import type { AuditRecord, AuditResult } from "./audit-record.js";
import {
  type AdminError,
  type AdminErrorFacts,
  type AdminResult,
  type AdminRpc,
  type AdminRpcBefore7,
  adminError,
  describeInput,
  type FindRunsOutput,
  fail,
  findRunsInput,
  findRunsOutput,
  type ListRunsOutput,
  listRunsOutput,
  type ResolveOpInput,
  type ResolveOpOutput,
  type RunDetail,
  runDetail,
  runIdInput,
  type StatusOutput,
  statusOutput,
  type VerifiedAfter,
  type VerifiedForceIdleOutput,
  type VerifiedTriggerAlarmOutput,
  verifyOutput,
} from "./contract.js";
import { foundRunsOf } from "./find-runs.js";
import { inputWords } from "./input-words.js";
import { findRunRecords, recoveryBudgetRecords, residencyRecords, runRecords, verifyRecords } from "./records-contract.js";
import { budgetOf, type RecoveryBudgetOutput, recoveryBudgetInput, recoveryBudgetOutput } from "./recovery-budget.js";
import { residencyOf } from "./residency.js";
import { type ResidencyOutput, residencyOutput } from "./residency-contract.js";
import { resolveOpOf } from "./resolve-op.js";
import { verifyOutputOf } from "./run-check.js";
import { runDetailOf } from "./run-detail.js";
import type { VerifyReads } from "./verify.js";

/** Who is acting. The console supplies it from the verified identity; the client refuses without one. */
export const actor = z.object({ email: z.string().trim().min(1, "an actor is required"), role: z.enum(["viewer", "operator"]) });
export type Actor = z.infer<typeof actor>;

/** An agent, addressed by its class (which is also its Durable Object binding name) and instance name. */
export const target = z.object({
  agentClass: z
    .string()
    .trim()
    .regex(/^[A-Za-z_$][\w$]{0,199}$/, "agent class must be a class name"),
  agentName: z.string().trim().min(1, "agent name is required").max(500),
});
export type Target = z.infer<typeof target>;

/**
 * What the client needs from the Worker it runs in, passed in so this entry
 * carries no storage code: the console wires its D1 audit writer, its agent
 * registry and its Durable Object bindings (worker/admin-client.ts).
 */
export type AdminClientPorts = {
  /**
   * Writes one audit row, or completes it. Every action is audited first, with result "pending", before
   * anything else happens; the same record id is written again with the outcome, whatever happens (the
   * writer must update the pending row: src/store/audit.ts). A row left "pending" is an attempt whose
   * outcome never came back.
   */
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
  /** The shared telemetry signing secret, when ingest requires signed events. */
  signingSecret?: string | null;
};
export type AdminClientOptions = {
  timeoutMs?: number;
  now?: () => number;
  /** Address agents the registry has never heard from (plain agents without our telemetry). Off by default: a typo would otherwise create an empty Durable Object. */
  allowUnregistered?: boolean;
  /** Pause before the one retry of a call that failed in transit (default 100 ms). */
  retryDelayMs?: number;
  /** Marks every action's audit record as part of this bulk action (audit_log.batch_id). */
  batchId?: string;
};

const DEFAULT_TIMEOUT_MS = 15_000;
/** Reading the agent back after an action: a short read, so a slow agent does not hold the answer long. */
const VERIFY_TIMEOUT_MS = 5_000;
/** Free text longer than this is cut before masking; the audit caps are far below it. */
const MASK_CHARS = 64 * 1024;
/** workerd's error for an RPC method the target class does not have: the agent has no admin mixin (or an older one). */
// The last is how the SDK's sub-agent bridge (getSubAgentByName) answers a method the sub-agent lacks.
const NOT_IMPLEMENTED = /does not implement|is not a function|no such method|Method "[^"]*" not found on/i;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

type SdkRecoveryEvent = { type: string; fiberId: string | null; fiberName?: string | null; incidentId: string | null; detail: string | null };

/** The SDK's recovery events that settle a fiber's recovery: trigger alarm counts the fiber as recovered. */
const SETTLED_RECOVERY = /^fiber:recovery:(handled|skipped|failed)$/;

/**
 * Trigger alarm's recovery events, named in the event contract: the agent answers the SDK's words (mixin.ts), and
 * src/telemetry's normalisation names them as ingest does, with a fiber's incident id under the target's key name.
 * The fibers whose recovery those events settled join `recoveredRuns` (from contract 11 the agent lists only the rows
 * its alarm settled; an earlier one listed both, so adding them again changes nothing). An older mixin's answer
 * (already in contract types) is kept as it is.
 */
function recoveryEventsNamed<T>(r: AdminResult<T>, t: Target): AdminResult<T> {
  const events = r.ok ? (r.value as { recoveryEvents?: unknown }).recoveryEvents : null;
  if (!r.ok || !Array.isArray(events)) return r;
  const rows = (r.value as { recoveredRuns?: unknown }).recoveredRuns;
  const settled = (events as SdkRecoveryEvent[]).filter((e) => SETTLED_RECOVERY.test(e?.type) && e.fiberId).map((e) => e.fiberId!);
  const recoveredRuns = Array.isArray(rows) ? [...new Set([...rows, ...settled])] : rows;
  const named = (events as SdkRecoveryEvent[]).map((e) => {
    if (typeof e?.type !== "string" || !e.type.includes(":")) return e;
    const payload = {
      fiberId: e.fiberId ?? undefined,
      fiberName: e.fiberName ?? undefined,
      incidentId: e.incidentId ?? undefined,
      reason: e.detail,
      error: e.detail,
    };
    const n = normalizeSdkEvent({ type: e.type, agent: t.agentClass, name: t.agentName, payload });
    return { type: n?.type ?? e.type, fiberId: e.fiberId, incidentId: n?.corr.incidentId ?? e.incidentId, detail: e.detail };
  });
  return { ...r, value: { ...r.value, recoveredRuns, recoveryEvents: named } };
}

/** The stub as the client calls it: this version's methods, and the earlier reads it falls back to. */
type AgentStub = AdminRpc & AdminRpcBefore7;

/**
 * The read-only reads since contract 7: the agent answers the SDK's records and the client builds the answer.
 * An agent whose mixin predates that (no such method: `no_mixin`) is asked the earlier method, which answers the
 * same shape built by the agent.
 */
async function newerOrBefore<T>(newer: () => Promise<AdminResult<T>>, before: () => Promise<AdminResult<T>>): Promise<AdminResult<T>> {
  const r = await newer();
  return !r.ok && r.error.facts?.kind === "no_mixin" ? before() : r;
}

/**
 * Resolve op: since contract 7 the agent answers its hook's answer and resolve-op.ts reads it; an agent whose mixin
 * predates that answers adminResolveOp.
 */
async function resolveOpCall(s: AgentStub, input: unknown): Promise<unknown> {
  let r: AdminResult<{ answer: unknown }>;
  try {
    r = await s.adminResolveOpRecords(input);
  } catch (e) {
    if (NOT_IMPLEMENTED.test(message(e))) return s.adminResolveOp(input);
    throw e;
  }
  return r.ok ? resolveOpOf(input as ResolveOpInput, r.value.answer) : r;
}

/** How the client asks the agent to take an action: the action's method, or resolve op's own call. */
const actionCall = (name: AdminActionName) => (name === "resolve_op" ? resolveOpCall : (s: AgentStub, i: unknown) => s[ADMIN_ACTIONS[name].rpc](i));

/** The answers built from the agent's records (records-contract.ts), checked as they arrive. */
const FROM_RECORDS = {
  findRuns: findRunRecords.transform(foundRunsOf),
  residency: residencyRecords.transform(residencyOf),
  verify: verifyRecords.transform(verifyOutputOf),
  recoveryBudget: recoveryBudgetRecords.transform(budgetOf),
  run: runRecords.transform(runDetailOf),
};

/** A run detail with its snapshot masked, as JSON (key-aware) and as text. */
function maskedRun(r: RunDetail): RunDetail {
  return { ...r, snapshot: maskJson(r.snapshot), snapshotText: r.snapshotText === null ? null : maskSecrets(r.snapshotText) };
}

/**
 * The technical statement of each refusal the agent answers as facts only (contract 7: its message is empty), as the
 * agent itself said it before. The console words the facts for people (console/admin-words.ts).
 */
const STATEMENTS: { [K in AdminErrorFacts["kind"]]?: (f: Extract<AdminErrorFacts, { kind: K }>) => string } = {
  agent_failed: (f) => `the agent could not complete the request: ${f.cause}`,
  terminated: () => "the agent is terminated",
  no_resolve_hook: (f) => `${f.agentClass} does not implement onAdminResolveOp`,
  hook_bad_answer: (f) => `onAdminResolveOp answered outside the contract: ${f.detail}`,
  no_op: (f) => `no op "${f.opId}" in the ledger`,
  op_not_ambiguous: (f) => `op "${f.opId}" is not ambiguous`,
  no_live_run: (f) => `no live run with id "${f.id}"`,
};

/** An agent's error with its statement: the agent's own message when it sent one (older agents, invalid input). */
function stated(e: AdminError): AdminError {
  if (e.message || !e.facts) return e;
  const say = STATEMENTS[e.facts.kind] as ((f: AdminErrorFacts) => string) | undefined;
  return say ? { ...e, message: say(e.facts) } : e;
}

/** Validates what a Durable Object sent back, so a mismatched deploy shows as a typed error, not a crash. */
function checked<T>(schema: z.ZodType<T>, r: unknown): AdminResult<T> {
  const shape = z.union([z.object({ ok: z.literal(true), value: z.unknown() }), z.object({ ok: z.literal(false), error: adminError })]).safeParse(r);
  if (!shape.success) return fail("unavailable", "the agent answered with something that is not an admin result", { kind: "bad_answer", detail: null });
  if (!shape.data.ok) return { ok: false, error: stated(shape.data.error) };
  const value = schema.safeParse(shape.data.value);
  if (value.success) return { ok: true, value: value.data };
  const detail = describeInput(value.error);
  return fail("unavailable", `the agent's answer did not match the contract: ${detail}`, { kind: "bad_answer", detail });
}

/**
 * A thrown failure of a call to a Durable Object, as a typed error. A missing method means the class has no
 * admin mixin: `unsupported`, for good. Anything else thrown is the platform's (the agent is being evicted,
 * reset or is failing; the mixin itself never throws): `unavailable`.
 */
function thrownError(e: unknown, agentClass: string): AdminError {
  if (NOT_IMPLEMENTED.test(message(e))) {
    return { code: "unsupported", message: `${agentClass} has no admin mixin (withAdminRpc)`, facts: { kind: "no_mixin", agentClass } };
  }
  return { code: "unavailable", message: `the agent could not be reached: ${message(e)}`, facts: { kind: "unreachable", cause: message(e) } };
}

/**
 * The retry rule: one retry, after a short pause, for a call that threw in transit — an agent being evicted
 * or reset answers the next call from a fresh instance. Typed errors are answers and are not retried, nor is
 * a missing mixin or an overloaded object (retrying the same object will not help). Every admin call is
 * safe to repeat: reads, stub creation, force idle (a repeat finds nothing to do) and the alarm (which the
 * platform itself retries on failure).
 */
function retryable(e: unknown): boolean {
  if ((e as { overloaded?: unknown } | null)?.overloaded === true) return false;
  return !NOT_IMPLEMENTED.test(message(e));
}

/**
 * The Worker-side admin client. Reads need an actor; actions need an operator
 * and a reason, and every action — allowed, refused, invalid or failed — goes
 * through one audited path: an audit_log row written before anything else and
 * completed whatever happens, and admin telemetry events.
 */
/** An addressable target: its namespace, and for a sub-agent, the parent it is reached through. */
type Resolved = { target: Target; ns: DurableObjectNamespace; via?: { parentName: string; name: string } };

export function createAdminClient(ports: AdminClientPorts, identity: unknown, opts: AdminClientOptions = {}) {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const now = opts.now ?? Date.now;
  const retryDelayMs = opts.retryDelayMs ?? 100;
  const me = actor.safeParse(identity);

  /** Runs `fn` once more after a pause when it threw in transit (see `retryable`). */
  async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!retryable(e)) throw e;
      await scheduler.wait(retryDelayMs);
      return fn();
    }
  }

  /**
   * Checks the target against the allowlist and the registry; never calls the agent. A sub-agent (its key name
   * holds its ancestry, src/telemetry/sub-agents.ts) is reached through its parent, so it is the parent's class
   * that must be addressable; a sub-agent of a sub-agent is refused, with why.
   */
  async function resolve(t: unknown): Promise<AdminResult<Resolved>> {
    // An agent the tail keyed apart (`Class@worker`): not the Durable Object the binding of its class gives its name.
    const keyed = t && typeof t === "object" && typeof (t as { agentClass?: unknown }).agentClass === "string" ? (t as { agentClass: string }).agentClass : "";
    const other = parseWorkerClassKey(keyed.trim());
    // A class the console does not bind at all: refused as any unbound class is.
    if (other && !ports.agentClasses.includes(other.agentClass))
      return fail("not_found", `${other.agentClass} is not an addressable agent class`, {
        kind: "not_addressable",
        agentClass: other.agentClass,
        allowed: [...ports.agentClasses],
      });
    if (other)
      return fail("unsupported", `${keyed.trim()} is not the agent the binding for ${other.agentClass} addresses: it runs in another Worker`, {
        kind: "other_worker",
        agentClass: other.agentClass,
        worker: other.worker,
      });
    const parsed = target.safeParse(t);
    if (!parsed.success) return fail("invalid_input", describeInput(parsed.error));
    const { agentClass, agentName } = parsed.data;
    const sub = parseAgentKeyName(agentName);
    if (sub) {
      const parent = sub.parentPath[0]!;
      if (sub.parentPath.length > 1)
        return fail("unsupported", `${agentClass} "${sub.name}" is a sub-agent of a sub-agent: the SDK reaches only a top-level agent's own sub-agents`, {
          kind: "nested_sub_agent",
          agentClass,
          depth: sub.parentPath.length,
        });
      if (!ports.agentClasses.includes(parent.className))
        return fail("not_found", `${parent.className}, the parent of this sub-agent, is not an addressable agent class`, {
          kind: "not_addressable",
          agentClass: parent.className,
          allowed: [...ports.agentClasses],
        });
      if (!opts.allowUnregistered && !(await ports.isRegistered(agentClass, agentName)))
        return fail("not_found", `no agent ${agentClass} "${agentName}" in the registry`, { kind: "not_registered", agentClass, agentName });
      const ns = ports.namespace(parent.className);
      if (!ns) return fail("not_found", `no Durable Object binding named ${parent.className}`, { kind: "no_binding", agentClass: parent.className });
      return { ok: true, value: { target: parsed.data, ns, via: { parentName: parent.name, name: sub.name } } };
    }
    if (!ports.agentClasses.includes(agentClass)) {
      return fail("not_found", `${agentClass} is not an addressable agent class`, { kind: "not_addressable", agentClass, allowed: [...ports.agentClasses] });
    }
    if (!opts.allowUnregistered && !(await ports.isRegistered(agentClass, agentName)))
      return fail("not_found", `no agent ${agentClass} "${agentName}" in the registry`, { kind: "not_registered", agentClass, agentName });
    const ns = ports.namespace(agentClass);
    if (!ns) return fail("not_found", `no Durable Object binding named ${agentClass}`, { kind: "no_binding", agentClass });
    return { ok: true, value: { target: parsed.data, ns } };
  }

  /**
   * Calls the agent within the timeout: a fresh stub (getAgentByName wakes it, and throws while it is being
   * evicted), then `fn`, retried once together when they threw in transit. Never throws.
   */
  async function call<T>(r: Resolved, schema: z.ZodType<T>, fn: (stub: AgentStub) => Promise<unknown>, limitMs = timeoutMs): Promise<AdminResult<T>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<AdminResult<T>>((done) => {
      timer = setTimeout(() => done(fail("timeout", `the agent did not answer within ${limitMs} ms`, { kind: "timeout", limitMs })), limitMs);
    });
    const attempt = withRetry(async () => {
      // The SDK's own routing retry is off: one retry rule, here.
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's helper is typed for Agent namespaces.
      const top = await getAgentByName(r.ns as any, r.via ? r.via.parentName : r.target.agentName, { routingRetry: false });
      // A sub-agent: the SDK's bridge through its parent's stub. The bridge reads only the class's name; the parent
      // finds the class itself, so the console needs no binding of the sub-agent's class.
      const bySubAgent = getSubAgentByName as unknown as (parent: unknown, cls: { name: string }, name: string) => Promise<unknown>;
      const stub = (r.via ? await bySubAgent(top, { name: r.target.agentClass }, r.via.name) : top) as unknown as AgentStub;
      return fn(stub);
    }).then(
      (v) => checked(schema, v),
      (e) => ({ ok: false, error: thrownError(e, r.target.agentClass) }) as AdminResult<T>,
    );
    try {
      return await Promise.race([attempt, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Status and live runs in one visit (the agent page, reconciliation, and the read-back of an older agent). */
  const readLive = async (stub: AdminRpc) => {
    const [status, runs] = await Promise.all([stub.adminStatus(), stub.adminListRuns()]);
    if (!status.ok) return status;
    if (!runs.ok) return runs;
    return { ok: true, value: { status: status.value, runs: runs.value } };
  };

  /** How an action reads its agent back (verify.ts): adminVerify, with status and runs for an agent whose mixin predates it. */
  function readsOf(r: Resolved): VerifyReads {
    const limit = Math.min(timeoutMs, VERIFY_TIMEOUT_MS);
    return {
      verify: (ids) =>
        newerOrBefore(
          () => call(r, FROM_RECORDS.verify, (s) => s.adminVerifyRecords({ ids }), limit),
          () => call(r, verifyOutput, (s) => s.adminVerify({ ids }), limit),
        ),
      live: () => call(r, liveOutput, readLive, limit),
      now,
      wait: (ms) => scheduler.wait(ms),
    };
  }

  /** The verified value of an action (its entry's `verify`): what is true after it, read back, with the audit's result. */
  const verified = (action: AdminActionName, r: Resolved, value: unknown) => ADMIN_ACTIONS[action].verify(value, () => readsOf(r));

  async function read<T>(t: unknown, schema: z.ZodType<T>, fn: (stub: AgentStub) => Promise<unknown>): Promise<AdminResult<T>> {
    if (!me.success) return fail("not_permitted", describeInput(me.error));
    try {
      const r = await resolve(t);
      return r.ok ? await call(r.value, schema, fn) : r;
    } catch (e) {
      // The registry lookup (D1) failed: a typed error, never a thrown one.
      return fail("unavailable", `the registry lookup failed: ${message(e)}`, { kind: "lookup_failed", cause: message(e) });
    }
  }

  /** The one audited path every action takes. */
  async function act<T extends { before?: unknown; after?: unknown; noop?: boolean }>(
    action: AdminActionName,
    t: unknown,
    input: unknown,
    schema: z.ZodType<T>,
    fn: (stub: AgentStub, input: unknown) => Promise<unknown>,
  ): Promise<AdminResult<T>> {
    const tgt = target.safeParse(t);
    const who = me.success ? me.data : { email: String((identity as { email?: unknown } | null)?.email || "(none)"), role: "none" };
    const rawReason = typeof (input as { reason?: unknown } | null)?.reason === "string" ? (input as { reason: string }).reason : "";
    const id = crypto.randomUUID();
    const time = now();
    const record = (result: AuditResult, value?: T, error?: AdminError): AuditRecord =>
      // Caps every field: refused and invalid attempts carry whatever the caller sent.
      capAuditRecord({
        id,
        time,
        actor: who.email,
        role: who.role,
        action,
        targetClass: tgt.success ? tgt.data.agentClass : String((t as { agentClass?: unknown } | null)?.agentClass ?? "(invalid)"),
        targetName: tgt.success ? tgt.data.agentName : String((t as { agentName?: unknown } | null)?.agentName ?? "(invalid)"),
        // A reason is free text: masked like everything else an operator types that others read.
        reason: maskSecrets(rawReason.slice(0, MASK_CHARS)),
        before: value?.before ?? null,
        after: auditAfter(value?.after),
        result,
        error: error ? maskSecrets(`${error.code}: ${error.message}`.slice(0, MASK_CHARS)) : null,
        ...(opts.batchId ? { batchId: opts.batchId } : {}),
      });

    // The attempt is on record before anything else happens; without that record nothing happens.
    try {
      await ports.audit(record("pending"));
    } catch (e) {
      return fail("unavailable", `the audit log could not be written: ${message(e)}`, { kind: "audit_failed", cause: message(e) });
    }
    // Admin events are reported as coming from the target; only a target that exists may report, or a typo
    // would enter the registry (and make the agent addressable) through its own refusal.
    let targetKnown = false;
    let outcome: { result: AuditResult; value?: T; error?: AdminError } = {
      result: "error",
      error: { code: "unavailable", message: "the action ended before reporting an outcome", facts: { kind: "no_outcome" } },
    };
    const refuse = (result: AuditResult, error: AdminError): AdminResult<T> => {
      outcome = { result, error };
      return { ok: false, error };
    };
    try {
      if (tgt.success) targetKnown = await ports.isRegistered(tgt.data.agentClass, tgt.data.agentName);
      if (!me.success) return refuse("denied", { code: "not_permitted", message: `refused: ${describeInput(me.error)}` });
      if (!mayTake(me.data.role, action))
        return refuse("denied", {
          code: "not_permitted",
          message: `refused: ${me.data.email} has the ${me.data.role} role; this action needs ${ADMIN_ACTIONS[action].role}`,
          facts: { kind: "role", email: me.data.email, role: me.data.role, needs: ADMIN_ACTIONS[action].role },
        });
      const parsed = ADMIN_ACTIONS[action].input.safeParse(input, { error: inputWords });
      if (!parsed.success) return refuse("invalid", { code: "invalid_input", message: describeInput(parsed.error) });
      const resolved = await resolve(t);
      if (!resolved.ok) return refuse(resolved.error.code === "invalid_input" ? "invalid" : "error", resolved.error);
      targetKnown = true; // resolved: registered, or explicitly allowed

      const r = await call(resolved.value, schema, (stub) => fn(stub, parsed.data));
      if (!r.ok) {
        // An agent whose mixin predates the action: refused, with what to upgrade (a 4xx, never a failure).
        const upgrade = r.error.code === "unsupported" ? upgradeRefusal(action, resolved.value.target.agentClass, resolved.value.target.agentName) : null;
        if (upgrade) return refuse("error", upgrade);
        outcome = { result: "error", error: r.error };
        return r;
      }
      // What is true now, read back from the agent, not what the action attempted: the audit records that.
      const v = await verified(action, resolved.value, r.value);
      outcome = { result: v.result, value: v.value as T };
      return { ok: true, value: v.value as T };
    } catch (e) {
      return refuse("error", {
        code: "unavailable",
        message: `the action failed in the console: ${message(e)}`,
        facts: { kind: "console_failed", cause: message(e) },
      });
    } finally {
      const entry = record(outcome.result, outcome.value, outcome.error);
      try {
        await ports.audit(entry);
      } catch (e) {
        // The row stays "pending": the attempt is recorded, its outcome could not be.
        console.error(`[admin] audit ${id} could not be completed (${outcome.result}): ${message(e)}`);
      }
      if (targetKnown) await emitActionEvents(ports, action, entry, outcome.result === "ok" || outcome.result === "partial" ? outcome.value : undefined);
    }
  }

  return {
    /** Live run rows, managed fibers and Tasks runs. */
    listRuns: (t: Target): Promise<AdminResult<ListRunsOutput>> => read(t, listRunsOutput, (s) => s.adminListRuns()),
    /**
     * One run with its (capped) snapshot, masked: credentials in it never reach a viewer. There is no
     * unmasked variant; the agent's owner reads raw state with their own tools.
     */
    getRun: async (t: Target, id: unknown): Promise<AdminResult<RunDetail>> => {
      const p = runIdInput.safeParse({ id }, { error: inputWords });
      if (!p.success) return fail("invalid_input", describeInput(p.error));
      const r = await newerOrBefore<RunDetail | null>(
        () => read(t, FROM_RECORDS.run, (s) => s.adminGetRunRecords(p.data)),
        () => read(t, runDetail, (s) => s.adminGetRun(p.data)),
      );
      if (!r.ok) return r;
      if (!r.value) return { ok: false, error: stated({ code: "not_found", message: "", facts: { kind: "no_live_run", id: p.data.id } }) };
      return { ok: true, value: maskedRun(r.value) };
    },
    /**
     * What the agent still records of runs, in every state: by id (fiber id, Tasks runId, chat turn request id)
     * and/or its most recent runs. Read-only; reconciliation asks it before it judges a run's end.
     */
    findRuns: async (t: Target, input: unknown): Promise<AdminResult<FindRunsOutput>> => {
      const p = findRunsInput.safeParse(input, { error: inputWords });
      if (!p.success) return fail("invalid_input", describeInput(p.error));
      return newerOrBefore(
        () => read(t, FROM_RECORDS.findRuns, (s) => s.adminFindRunRecords(p.data)),
        () => read(t, findRunsOutput, (s) => s.adminFindRuns(p.data)),
      );
    },
    /** Read-only: the agent's chat-recovery bounds and its records' budget counters (one incident's, given its id). */
    recoveryBudget: async (t: Target, input: unknown = {}): Promise<AdminResult<RecoveryBudgetOutput>> => {
      const p = recoveryBudgetInput.safeParse(input, { error: inputWords });
      if (!p.success) return fail("invalid_input", describeInput(p.error));
      return newerOrBefore(
        () => read(t, FROM_RECORDS.recoveryBudget, (s) => s.adminRecoveryBudgetRecords(p.data)),
        () => read(t, recoveryBudgetOutput, (s) => s.adminRecoveryBudget(p.data)),
      );
    },
    /** Derived status, next alarm, schedules, chat-recovery records and what the agent supports. */
    status: (t: Target): Promise<AdminResult<StatusOutput>> => read(t, statusOutput, (s) => s.adminStatus()),
    /** What keeps the agent resident: keepAlive, schedules and alarm, connections, running work (read-only, not audited). */
    residency: (t: Target): Promise<AdminResult<ResidencyOutput>> =>
      newerOrBefore(
        () => read(t, FROM_RECORDS.residency, (s) => s.adminResidencyRecords()),
        () => read(t, residencyOutput, (s) => s.adminResidency()),
      ),
    /** Status and live runs in one visit to the agent (the agent page). */
    live: (t: Target): Promise<AdminResult<{ status: StatusOutput; runs: ListRunsOutput }>> => read(t, liveOutput, readLive),
    /**
     * Operator only, audited. The value is verified: `after` is the agent read back once force idle answered,
     * run by run, and `result` is `partial` (with what the read-back found in `after.notice`) when work still runs.
     */
    forceIdle: (t: Target, input: unknown): Promise<AdminResult<VerifiedForceIdleOutput>> =>
      act("force_idle", t, input, ADMIN_ACTIONS.force_idle.output, (s, i) => s[ADMIN_ACTIONS.force_idle.rpc](i)) as Promise<
        AdminResult<VerifiedForceIdleOutput>
      >,
    /**
     * Operator only, audited, answered within about 2 s. Verified like force idle: `result` is `ok` only when the
     * alarm ran to its end; `outcome` says `busy` (not run: `busy` names what holds it) or `still_running`.
     */
    triggerAlarm: (t: Target, input: unknown): Promise<AdminResult<VerifiedTriggerAlarmOutput>> =>
      act("trigger_alarm", t, input, ADMIN_ACTIONS.trigger_alarm.output, async (s, i) =>
        recoveryEventsNamed(await s[ADMIN_ACTIONS.trigger_alarm.rpc](i), t),
      ) as Promise<AdminResult<VerifiedTriggerAlarmOutput>>,
    /**
     * Operator only, audited (before/after: the op as the agent's ledger sees it). Records how an ambiguous op
     * was settled, or re-runs it where the agent says it is idempotent.
     */
    resolveOp: (t: Target, input: unknown): Promise<AdminResult<ResolveOpOutput>> =>
      act("resolve_op", t, input, ADMIN_ACTIONS.resolve_op.output, resolveOpCall),
    /** Any action of ADMIN_ACTIONS by name (the action routes loop over the table). */
    action: (name: AdminActionName, t: Target, input: unknown): Promise<AdminResult<{ before?: unknown; after?: unknown; noop?: boolean }>> =>
      act(name, t, input, ADMIN_ACTIONS[name].output as z.ZodType<{ before?: unknown; after?: unknown; noop?: boolean }>, actionCall(name)),
  };
}

const liveOutput = z.object({ status: statusOutput, runs: listRunsOutput });

/** Runs and running work an audit row keeps of a verified after-state (what still runs first); the rest is counted. */
const AUDIT_CHECKS = 30;

/**
 * The after-state as the audit keeps it. A verified one leaves out what the before-state already holds
 * (schedules, capabilities) and keeps its notice and what still runs first, so a large force idle stays
 * under the audit's size cap with its verdict readable.
 */
function auditAfter(after: unknown): unknown {
  const a = after as Partial<VerifiedAfter> | null | undefined;
  if (!a || typeof a !== "object" || typeof a.verified !== "boolean") return after ?? null;
  const { schedules: _s, capabilities: _c, checks = [], busy = [], ...rest } = a;
  const ordered = [...checks].sort((x, y) => Number(x.now === "stopped") - Number(y.now === "stopped"));
  return {
    ...rest,
    checks: ordered.slice(0, AUDIT_CHECKS),
    busy: busy.slice(0, AUDIT_CHECKS),
    ...(checks.length > AUDIT_CHECKS || busy.length > AUDIT_CHECKS
      ? { omitted: { checks: Math.max(0, checks.length - AUDIT_CHECKS), busy: Math.max(0, busy.length - AUDIT_CHECKS) } }
      : {}),
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;

/**
 * The events of an audited action (its entry's `emit`: action-effects.ts), sent through the same Queue as agent
 * events with the target as source (so they work for agents without our telemetry). Never throws: the action is
 * done and audited whatever the Queue does.
 */
async function emitActionEvents(ports: AdminClientPorts, action: AdminActionName, e: AuditRecord, value: unknown): Promise<void> {
  if (!ports.queue) return;
  try {
    const telemetry = new Telemetry({
      source: { agentClass: e.targetClass, agentName: e.targetName },
      queue: ports.queue,
      signingSecret: ports.signingSecret ?? null,
    });
    ADMIN_ACTIONS[action].emit(telemetry, e, value);
    await telemetry.settle();
  } catch (err) {
    console.error(`[admin] events of ${action} on ${e.targetClass} "${e.targetName}" could not be sent: ${message(err)}`);
  }
}
