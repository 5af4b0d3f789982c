import type { Agent } from "agents";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX } from "./sdk-layout.js";
import type { Observability } from "agents/observability";
import {
  type AdminHooks,
  type AdminResult,
  type AdminRpc,
  actionInput,
  describeInput,
  fail,
  type ForceIdleOutput,
  type ListRunsOutput,
  ok,
  type RunDetail,
  runIdInput,
  type StatusOutput,
  type TriggerAlarmOutput,
} from "./contract.js";
import { readRun, readRuns, readStatus } from "./inspect.js";
import { normalizeSdkEvent } from "@agent-oncall/telemetry";

// biome-ignore lint/suspicious/noExplicitAny: mixins need an open constructor type.
type AgentClass = abstract new (...args: any[]) => Agent<any, any>;

const TERMINAL_FIBER = new Set(["completed", "aborted", "error", "interrupted"]);
/** Our event types (src/telemetry's contract) that describe recovery. */
const RECOVERY_EVENT = /^(fiber\.recovery\.|fiber\.interrupted$|chat\.recovery\.)/;

/** Turns an unexpected failure into a typed error; the message is kept, the stack is not. */
function unavailable<T>(e: unknown): AdminResult<T> {
  return fail("unavailable", `the agent could not complete the request: ${e instanceof Error ? e.message : String(e)}`);
}

/**
 * Adds the admin RPC methods to any agents-SDK Agent class:
 *
 * ```ts
 * export class MyAgent extends withAdminRpc(Agent<Env>) { ... }
 * ```
 *
 * The Worker reaches them only through `createAdminClient` (client.ts), which
 * authorizes and audits every action.
 */
// biome-ignore lint/suspicious/noExplicitAny: constructor signature of the mixed-in class.
export type WithAdminRpcClass<TBase extends AgentClass> = TBase & (abstract new (...args: any[]) => AdminRpc);

export function withAdminRpc<TBase extends AgentClass>(Base: TBase): WithAdminRpcClass<TBase> {
  abstract class WithAdminRpc extends Base implements AdminRpc {
    #hooks(): AdminHooks {
      return this as unknown as AdminHooks;
    }

    #derived() {
      return this.#hooks().adminDerivedStatus?.() ?? null;
    }

    #status(): Promise<StatusOutput> {
      return readStatus(this.ctx.storage.sql, this.ctx.storage, this.#derived());
    }

    async adminListRuns(): Promise<AdminResult<ListRunsOutput>> {
      try {
        return ok(readRuns(this.ctx.storage.sql));
      } catch (e) {
        return unavailable(e);
      }
    }

    async adminGetRun(input: unknown): Promise<AdminResult<RunDetail>> {
      const parsed = runIdInput.safeParse(input);
      if (!parsed.success) return fail("invalid_input", describeInput(parsed.error));
      try {
        const run = readRun(this.ctx.storage.sql, parsed.data.id);
        return run ? ok(run) : fail("not_found", `no live run with id "${parsed.data.id}" (it may have finished; its last-known snapshot is in the fiber history)`);
      } catch (e) {
        return unavailable(e);
      }
    }

    async adminStatus(): Promise<AdminResult<StatusOutput>> {
      try {
        return ok(await this.#status());
      } catch (e) {
        return unavailable(e);
      }
    }

    /**
     * Forces the agent idle: aborts the active turn (through the agent's hook),
     * removes run rows so nothing is recovered, cancels managed fibers, clears
     * chat-recovery incident records. A second call finds nothing to do and says so.
     */
    async adminForceIdle(input: unknown): Promise<AdminResult<ForceIdleOutput>> {
      const parsed = actionInput.safeParse(input);
      if (!parsed.success) return fail("invalid_input", describeInput(parsed.error));
      try {
        const before = await this.#status();
        if (before.status === "terminated") return fail("agent_terminated", "the agent is terminated; there is nothing to force idle");
        const sql = this.ctx.storage.sql;
        const liveFibers = readRuns(sql).managedFibers.filter((f) => !TERMINAL_FIBER.has(f.status));
        if (before.status === "idle" && before.runCount === 0 && liveFibers.length === 0 && before.chatRecoveryIncidents.length === 0) {
          return ok({ noop: true, before, after: before, abortedRuns: [], cancelledFibers: [], clearedIncidents: [] });
        }
        const cleared = (await this.#hooks().onAdminForceIdle?.(parsed.data.reason)) ?? [];
        const abortedRuns = readRuns(sql).runs.map((r) => r.id);
        sql.exec("DELETE FROM cf_agents_runs");
        const cancelledFibers: string[] = [];
        for (const f of liveFibers) if (await this.cancelFiber(f.fiberId, `force idle: ${parsed.data.reason}`)) cancelledFibers.push(f.fiberId);
        const keys = before.chatRecoveryIncidents.map((i) => i.key).filter((k) => k.startsWith(CHAT_RECOVERY_INCIDENT_KEY_PREFIX));
        if (keys.length) await this.ctx.storage.delete(keys);
        const after = await this.#status();
        recordIdle(this, parsed.data.reason);
        return ok({ noop: false, before, after, abortedRuns, cancelledFibers, clearedIncidents: [...keys, ...cleared] });
      } catch (e) {
        return unavailable(e);
      }
    }

    /** Recovery events since this instance woke, not yet reported by a triggerAlarm. */
    #recoveryLog: RecoveryEvent[] = [];

    // biome-ignore lint/suspicious/noExplicitAny: mixin constructors take the base's arguments.
    constructor(...args: any[]) {
      super(...args);
      // Wrap whatever observability is in place (the SDK's, or telemetry's) so the log sees every recovery
      // event, including those of the recovery the SDK runs when an evicted agent wakes for this very call.
      this.observability = tapRecovery(this.observability, (e) => {
        this.#recoveryLog.push(e);
        if (this.#recoveryLog.length > 200) this.#recoveryLog.shift();
      });
    }

    /**
     * Runs the agent's alarm now (housekeeping and fiber recovery) and reports
     * what recovery found and did — including recovery the SDK already ran when
     * this call woke an evicted agent.
     */
    async adminTriggerAlarm(input: unknown): Promise<AdminResult<TriggerAlarmOutput>> {
      const parsed = actionInput.safeParse(input);
      if (!parsed.success) return fail("invalid_input", describeInput(parsed.error));
      try {
        const before = await this.#status();
        if (before.status === "terminated") return fail("agent_terminated", "the agent is terminated; its alarm will not run recovery");
        const runsBefore = readRuns(this.ctx.storage.sql).runs.map((r) => r.id);
        await this.alarm();
        const after = await this.#status();
        const still = new Set(readRuns(this.ctx.storage.sql).runs.map((r) => r.id));
        const recoveryEvents = this.#recoveryLog.splice(0);
        const settled = recoveryEvents.filter((e) => /^fiber\.recovery\.(handled|skipped|failed)$/.test(e.type) && e.fiberId).map((e) => e.fiberId!);
        const recoveredRuns = [...new Set([...runsBefore.filter((id) => !still.has(id)), ...settled])];
        return ok({ before, after, recoveredRuns, recoveryEvents });
      } catch (e) {
        return unavailable(e);
      }
    }
  }
  // An explicit type keeps stacked mixins (withAdminRpc(withTelemetry(Agent))) cheap for the type checker.
  return WithAdminRpc as unknown as WithAdminRpcClass<TBase>;
}

type RecoveryEvent = TriggerAlarmOutput["recoveryEvents"][number];

/**
 * An observability that passes every event on and copies recovery events to
 * `log`, read through src/telemetry's normalisation (the one place that knows
 * the SDK's event shapes).
 */
function tapRecovery(inner: Observability | undefined, log: (e: RecoveryEvent) => void): Observability {
  return {
    emit(event) {
      try {
        const e = normalizeSdkEvent(event);
        if (e && RECOVERY_EVENT.test(e.type)) {
          const p = e.payload as { reason?: string; error?: string };
          log({ type: e.type, fiberId: e.corr.fiberId ?? null, incidentId: e.corr.incidentId ?? null, detail: p.reason ?? p.error ?? null });
        }
      } catch {
        /* the tap never breaks the agent */
      }
      inner?.emit(event);
    },
  };
}

/** Reports the new idle status through the agent's telemetry, when it has ours. */
function recordIdle(agent: object, reason: string): void {
  const t = (agent as { telemetry?: { record?: (type: "session.status_idle", payload: { detail?: string }) => unknown } }).telemetry;
  try {
    t?.record?.("session.status_idle", { detail: `forced idle: ${reason}`.slice(0, 2000) });
  } catch {
    /* telemetry never fails an admin action */
  }
}
