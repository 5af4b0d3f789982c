import type { Agent } from "agents";
import type { Observability } from "agents/observability";
import type { z } from "zod";
import { chatSubmissionsOf } from "./chat-stop.js";
import { readBusy } from "./check.js";
import type {
  AdminHooks,
  AdminRpc,
  Capabilities,
  ForceIdleFacts,
  ListRunsAnswer,
  PauseRecoveryOutput,
  ResumeRecoveryOutput,
  StatusAnswer,
  TriggerAlarmAnswer,
  TriggerAlarmOutput,
} from "./contract.js";
import { EVENT_PIPE, type EventPipe } from "./facts.js";
import { stopWork } from "./force-idle.js";
import {
  ADMIN_CONTRACT_VERSION,
  type AdminResult,
  actionInput,
  describeInput,
  fail,
  findRunsInput,
  ok,
  pauseRecoveryInput,
  recoveryBudgetInput,
  resolveOpInput,
  runIdInput,
  verifyInput,
} from "./inputs.js";
import { type AgentWork, readRuns, readStatus } from "./inspect.js";
import {
  clearPause,
  composeChatRecovery,
  composeFiberRecovery,
  pauseState,
  readPause,
  recordChatDecline,
  recordSkip,
  recoverHeld,
  waitingRecoveryIds,
  writePause,
} from "./pause.js";
import { ancestryPublisher, publishEvent } from "./publish.js";
import { checkRecord, findRunRecords, recoveryBudgetRecords, residencyRecords, runRecords } from "./records.js";
import type { FindRunRecords, RecoveryBudgetRecords, ResidencyRecordsAnswer, RunRecords, VerifyRecordsAnswer } from "./records-contract.js";
import { activeFiberIds } from "./sdk-layout.js";

// biome-ignore lint/suspicious/noExplicitAny: mixins need an open constructor type.
type AgentClass = abstract new (...args: any[]) => Agent<any, any>;

/**
 * The SDK's event types that describe recovery: the tap keeps these (in the SDK's words; the client names them in
 * the console's contract), not every event the agent emits (a runFiber's start and end, stashes, chat chunks).
 */
const SDK_RECOVERY_EVENT = /^(fiber:recovery:|fiber:run:interrupted$|chat:recovery:)/;

// The agent answers its refusals as facts with an empty message: the client states them (client.ts statementOf).

/** Turns an unexpected failure into a typed error; the message is kept, the stack is not. */
function unavailable<T>(e: unknown): AdminResult<T> {
  return fail("unavailable", "", { kind: "agent_failed", cause: e instanceof Error ? e.message : String(e) });
}

/** Runs one admin method's work; whatever it throws is a typed `unavailable` answer: the mixin's methods never throw. */
async function guarded<T>(run: () => Promise<AdminResult<T>>): Promise<AdminResult<T>> {
  try {
    return await run();
  } catch (e) {
    return unavailable(e);
  }
}

/** Checks an admin method's input against its schema (a typed `invalid_input` when it does not fit), then runs it guarded. */
function checked<I, T>(
  schema: { safeParse(input: unknown): z.ZodSafeParseResult<I> },
  input: unknown,
  run: (parsed: I) => Promise<AdminResult<T>>,
): Promise<AdminResult<T>> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) return Promise.resolve(fail("invalid_input", describeInput(parsed.error)));
  return guarded(() => run(parsed.data));
}

export type WithAdminRpcOptions = {
  /**
   * After force idle, evict the agent (`ctx.abort`) when a runFiber callback is still running in memory that
   * nothing else could stop (the SDK has no cancel for plain runFiber, and the agent's hook did not stop it).
   * Its row is gone by then, so nothing is recovered on the next wake. Default true; with false the result
   * says plainly which callbacks run on (`stopped: false`).
   */
  evictToStop?: boolean | undefined;
  /** How long force idle waits for aborted and cancelled work to settle before judging it. Default 1000 ms. */
  settleMs?: number | undefined;
  /**
   * How long trigger alarm waits for the alarm to run before answering `still_running` (the alarm goes on in
   * the background). Default 1000 ms, so the operator has an answer within 2 s whatever the alarm meets.
   */
  alarmBudgetMs?: number | undefined;
};

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

export function withAdminRpc<TBase extends AgentClass>(Base: TBase, options: WithAdminRpcOptions = {}): WithAdminRpcClass<TBase> {
  const evictToStop = options.evictToStop !== false;
  const settleMs = options.settleMs ?? 1000;
  const alarmBudgetMs = options.alarmBudgetMs ?? 1000;

  // The agent's optional hooks (AdminHooks) are read off the instance through a cast, which costs no code.
  abstract class WithAdminRpc extends Base implements AdminRpc {
    /** The agent's durable work, through the SDK's public APIs where it has them. */
    #work(): AgentWork {
      // Think's submissions (duck-typed: @cloudflare/think is not a dependency), and the agent's own run record.
      const think = this as unknown as { listSubmissions?: (o: { limit: number }) => Promise<unknown[]> };
      const hooks = this as unknown as AdminHooks;
      return {
        sql: this.ctx.storage.sql,
        storage: this.ctx.storage,
        listFibers: (o) => this.listFibers(o as Parameters<Agent["listFibers"]>[0]),
        inspectFiber: (id) => this.inspectFiber(id),
        listTasks: (o) => this.tasks.list(o as Parameters<Agent["tasks"]["list"]>[0]) as ReturnType<AgentWork["listTasks"]>,
        getTask: (id) => this.tasks.get(id) as ReturnType<AgentWork["getTask"]>,
        active: () => activeFiberIds(this),
        ...chatSubmissionsOf(this),
        ...(typeof think.listSubmissions === "function"
          ? { listSubmissions: (o) => think.listSubmissions!.call(this, o) as ReturnType<NonNullable<AgentWork["listSubmissions"]>> }
          : {}),
        ...(typeof hooks.adminRunRecord === "function" ? { runRecord: async (id: string) => hooks.adminRunRecord!.call(this, id) } : {}),
      };
    }

    async #capabilities(w: AgentWork, chatRecords: number): Promise<Capabilities> {
      const self = this as unknown as { taskDefinitions?: unknown; chatRecovery?: unknown };
      // Think and AIChatAgent run every chat turn on Tasks and keep chat-recovery records.
      const chat = "chatRecovery" in self || chatRecords > 0;
      const declared = typeof self.taskDefinitions === "object" && self.taskDefinitions !== null && Object.keys(self.taskDefinitions).length > 0;
      const has = (hook: keyof AdminHooks) => typeof (this as unknown as AdminHooks)[hook] === "function";
      return {
        contract: ADMIN_CONTRACT_VERSION,
        forceIdleHook: has("onAdminForceIdle"),
        derivedStatus: has("adminDerivedStatus"),
        tasks: declared || chat || (await w.listTasks({ limit: 1 })).length > 0,
        managedFibers: (await w.listFibers({ limit: 1 })).length > 0,
        chatRecovery: chat,
        resolveOps: has("onAdminResolveOp"),
        plainFiberStop: evictToStop ? "evict" : "none",
        pauseRecovery: true,
      };
    }

    async #status(): Promise<StatusAnswer> {
      const w = this.#work();
      const s = await readStatus(w, (this as unknown as AdminHooks).adminDerivedStatus?.() ?? null);
      // The opt-in outbox (withTelemetry sets EVENT_PIPE) numbers what it ships; an agent without it has none to report.
      const pipe = (this as { [EVENT_PIPE]?: EventPipe })[EVENT_PIPE];
      const shipped = pipe ? pipe.shippedThrough() : null;
      // Its own counts of what it sent and what waits, as it reports them: the client's schema (contract.ts
      // telemetryHealth) picks the contract's fields and reads an older package's counts as "not reported".
      const health = pipe ? (pipe.stats() as StatusAnswer["telemetry"]) : null;
      return {
        ...s,
        capabilities: await this.#capabilities(w, s.chatRecoveryIncidents.length),
        eventsShippedThrough: shipped,
        telemetry: health,
        recoveryPause: await readPause(this.ctx.storage, Date.now()),
      };
    }

    async adminListRuns(): Promise<AdminResult<ListRunsAnswer>> {
      return guarded(async () => ok(await readRuns(this.#work())));
    }

    /** One live run with its snapshot, as the SDK records it (the client's run-detail.ts builds the view; null: none). */
    async adminGetRunRecords(input: unknown): Promise<AdminResult<RunRecords>> {
      return checked(runIdInput, input, async (parsed) => ok(await runRecords(this.#work(), parsed.id)));
    }

    /**
     * What the agent still records of runs, in every state (reconciliation asks before it judges): by id, and/or
     * its most recent runs of each kind, as the SDK's records (the client builds the answer). Read-only.
     */
    async adminFindRunRecords(input: unknown): Promise<AdminResult<FindRunRecords>> {
      return checked(findRunsInput, input, async (parsed) => ok(await findRunRecords(this.#work(), parsed)));
    }

    /** The recovery budget as the agent holds it: the SDK's resolved bounds and its chat-recovery records (the client reads the counters). Read-only. */
    async adminRecoveryBudgetRecords(input: unknown): Promise<AdminResult<RecoveryBudgetRecords>> {
      return checked(recoveryBudgetInput, input ?? {}, async (parsed) => ok(await recoveryBudgetRecords(this, this.ctx.storage, parsed)));
    }

    async adminStatus(): Promise<AdminResult<StatusAnswer>> {
      return guarded(async () => ok(await this.#status()));
    }

    /**
     * Forces the agent idle and stops its work wherever the SDK has a public way: the agent's own hook aborts
     * in-memory turns, Tasks runs are cancelled (`this.tasks.cancel`), managed fibers too (`cancelFiber`),
     * run rows are removed so nothing is recovered, chat-recovery records are cleared. What still runs after
     * that (a plain runFiber callback) is stopped by evicting the agent, or reported as not stopped (see
     * WithAdminRpcOptions.evictToStop). A second call finds nothing to do and says so.
     */
    async adminForceIdle(input: unknown): Promise<AdminResult<ForceIdleFacts>> {
      return checked(actionInput, input, async (parsed) => {
        const before = await this.#status();
        if (before.status === "terminated") return fail("agent_terminated", "", { kind: "terminated", action: "force_idle" });
        const hook = (this as unknown as AdminHooks).onAdminForceIdle;
        const r = await stopWork({
          agent: this,
          work: this.#work(),
          reason: parsed.reason,
          before,
          hook: hook ? (why) => hook.call(this, why) : null,
          cancelTask: (id, why) => this.tasks.cancel(id, why),
          cancelFiber: (id, why) => this.cancelFiber(id, why),
          settleMs,
          evictToStop,
        });
        const instance = this.#instance;
        if (r.noop) return ok({ ...r.output, instance, before, after: before });
        const after = await this.#status();
        // The new idle status, for the console: the SDK publishes nothing for it.
        publishEvent(this, "session.status_idle", { detail: `forced idle: ${parsed.reason}`.slice(0, 2000) });
        if (r.output.evicted) {
          // After the answer is on its way: the rows are deleted and durable (output gate), so the next wake recovers nothing.
          setTimeout(() => this.ctx.abort(`force idle stopped work nothing else could stop: ${parsed.reason}`.slice(0, 500)), 20);
        }
        return ok({ ...r.output, instance, before, after });
      });
    }

    /**
     * Asks the agent's `onAdminResolveOp` hook to record how an ambiguous op was resolved, in its own ledger (the agent
     * knows its ops, whether one is idempotent, and how to re-run it), and answers what the hook answered: the client
     * checks it and words the outcome (resolve-op.ts). Without the hook the answer is `unsupported`.
     */
    async adminResolveOpRecords(input: unknown): Promise<AdminResult<{ answer: unknown }>> {
      return checked(resolveOpInput, input, async ({ opId, resolution, resultRef, reason }) => {
        const hook = (this as unknown as AdminHooks).onAdminResolveOp;
        if (typeof hook !== "function") return fail("unsupported", "", { kind: "no_resolve_hook", agentClass: this.constructor.name });
        return ok({ answer: await hook.call(this, { opId, resolution, resultRef: resultRef ?? null, reason }) });
      });
    }

    /** Recovery events since this instance woke, not yet reported by a triggerAlarm. */
    #recoveryLog: RecoveryEvent[] = [];
    /** This instance: a fresh one (after an eviction) answers with another id. */
    readonly #instance = crypto.randomUUID();
    /** When this instance started: alarm-loop marks older than this were left by an instance that is gone. */
    readonly #bornAt = Date.now();

    /**
     * Reads the agent back after an action, in one visit: its status and live runs, each run asked about by
     * its SDK id (a Tasks run id, a fiber id) as the SDK records it now (the client judges them), and the work running now.
     */
    async adminVerifyRecords(input: unknown): Promise<AdminResult<VerifyRecordsAnswer>> {
      return checked(verifyInput, input, async (parsed) => {
        const w = this.#work();
        const checks = [];
        for (const id of new Set(parsed.ids)) checks.push(await checkRecord(w, id));
        return ok({ instance: this.#instance, status: await this.#status(), runs: await readRuns(w), checks, busy: await readBusy(w, this.#bornAt) });
      });
    }

    /** What keeps the agent resident, as the SDK's records (the client's residency.ts answers from them). Read-only, so not audited. */
    async adminResidencyRecords(): Promise<AdminResult<ResidencyRecordsAnswer>> {
      return guarded(async () => ok(await residencyRecords(this, this.#work(), { instance: this.#instance, bornAt: this.#bornAt })));
    }

    /**
     * Pauses the agent's recovery until `hours` from now (src/admin-rpc/pause.ts): every fiber recovery the SDK
     * starts meanwhile is held back, not lost; every chat recovery is declined (the SDK ends the turn). A repeated pause replaces the reason and expiry and keeps what the
     * earlier one held. Writes one row of the agent's storage.
     */
    async adminPauseRecovery(input: unknown): Promise<AdminResult<PauseRecoveryOutput>> {
      return checked(pauseRecoveryInput, input, async (parsed) => {
        const now = Date.now();
        const before = await pauseState(this, now);
        const prior = before.pause;
        await writePause(this.ctx.storage, {
          reason: parsed.reason,
          pausedAt: now,
          until: now + Math.round(parsed.hours * 3_600_000),
          skipped: prior?.skipped ?? 0,
          held: prior?.held ?? [],
        });
        return ok({ noop: false, before, after: await pauseState(this, Date.now()) });
      });
    }

    /**
     * Ends the pause (active or expired) and recovers what it held now: held managed fibers through the agent's
     * own hook and `resolveFiber`, run rows through the agent's alarm (the SDK's recovery), within `alarmBudgetMs`.
     * Without a pause it is a no-op.
     */
    async adminResumeRecovery(input: unknown): Promise<AdminResult<ResumeRecoveryOutput>> {
      return checked(actionInput, input, async () => {
        const before = await pauseState(this, Date.now());
        if (!before.pause) return ok({ noop: true, before, after: before, alarm: "not_needed", recovered: [] });
        await clearPause(this.ctx.storage);
        const waiting = await waitingRecoveryIds(this, before.pause.held);
        const recovered = new Set(await recoverHeld(this, before.pause.held));
        let alarm: ResumeRecoveryOutput["alarm"] = "not_needed";
        const rows = (await pauseState(this, Date.now())).pendingRecovery;
        if (rows > 0) {
          const outcome = await this.#alarmWithinBudget("after resume");
          if (outcome !== "ran" && outcome !== "still_running") return unavailable(outcome);
          alarm = outcome;
        }
        const still = new Set(await waitingRecoveryIds(this, before.pause.held));
        for (const id of waiting) if (!still.has(id)) recovered.add(id);
        return ok({ noop: false, before, after: await pauseState(this, Date.now()), alarm, recovered: [...recovered] });
      });
    }

    /**
     * Runs the agent's alarm and waits for it at most `alarmBudgetMs`: "ran", "still_running" (it goes on in the
     * background, not cancelled, as the platform's own alarm would), or the error it failed with (logged).
     */
    async #alarmWithinBudget(what: string): Promise<"ran" | "still_running" | unknown> {
      const alarm = this.alarm().then(
        () => "ran" as const,
        (e: unknown) => {
          console.error(`[admin] alarm failed (${what}): ${e instanceof Error ? e.message : String(e)}`);
          return e;
        },
      );
      this.ctx.waitUntil(alarm);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const budget = new Promise<"still_running">((done) => (timer = setTimeout(() => done("still_running"), alarmBudgetMs)));
      return Promise.race([alarm, budget]).finally(() => clearTimeout(timer));
    }

    // biome-ignore lint/suspicious/noExplicitAny: mixin constructors take the base's arguments.
    constructor(...args: any[]) {
      super(...args);
      // Before the agent's own onFiberRecovered (whatever the class order): a recovery pause holds recovery back.
      composeFiberRecovery(this, (ctx, pause, managed) => {
        if (managed) recordSkip(this, ctx, pause);
      });
      // Likewise before the agent's own onChatRecovery (Think, AIChatAgent): a pause declines the chat recovery.
      composeChatRecovery(this, (ctx, pause) => recordChatDecline(this, ctx, pause));
      // Wrap whatever observability is in place (the SDK's, or telemetry's) so the log sees every recovery
      // event, including those of the recovery the SDK runs when an evicted agent wakes for this very call; a
      // sub-agent publishes its ancestry before its SDK messages (publish.ts).
      this.observability = tapRecovery(
        this.observability,
        (e) => {
          this.#recoveryLog.push(e);
          if (this.#recoveryLog.length > 200) this.#recoveryLog.shift();
        },
        ancestryPublisher(this),
      );
    }

    /**
     * Runs the agent's alarm now (housekeeping, fiber recovery, due jobs) and reports what recovery found and
     * did — including recovery the SDK already ran when this call woke an evicted agent. Answers in bounded
     * time: while the SDK's alarm loop runs a queued or scheduled callback (Think runs its turns so), an alarm
     * started now would wait for it and run it a second time, so it is not started (`busy`, naming what holds
     * it); otherwise it gets `alarmBudgetMs` before the answer says it is still running (it goes on).
     */
    async adminTriggerAlarm(input: unknown): Promise<AdminResult<TriggerAlarmAnswer>> {
      return checked(actionInput, input, async () => {
        const w = this.#work();
        const before = await this.#status();
        if (before.status === "terminated") return fail("agent_terminated", "", { kind: "terminated", action: "trigger_alarm" });
        const busy = await readBusy(w, this.#bornAt);
        const base = { busy, budgetMs: alarmBudgetMs, instance: this.#instance, before };
        // A queued or scheduled callback the alarm loop runs holds the alarm (see the method comment).
        if (busy.jobs.length > 0) return ok({ ...base, outcome: "busy", after: before, recoveredRuns: [], recoveryEvents: [] });
        const runsBefore = (await readRuns(w)).runs.map((r) => r.id);
        const outcome = await this.#alarmWithinBudget("triggered");
        if (outcome !== "ran" && outcome !== "still_running") return unavailable(outcome);
        const after = await this.#status();
        const still = new Set((await readRuns(w)).runs.map((r) => r.id));
        // The rows the alarm's recovery settled; the client adds the fibers its recovery events settled (client.ts).
        const recoveredRuns = runsBefore.filter((id) => !still.has(id));
        const recoveryEvents = this.#recoveryLog.splice(0);
        return ok({ ...base, outcome, busy: outcome === "ran" ? busy : await readBusy(w, this.#bornAt), after, recoveredRuns, recoveryEvents });
      });
    }
  }
  // An explicit type keeps stacked mixins (withAdminRpc(withTelemetry(Agent))) cheap for the type checker.
  return WithAdminRpc as unknown as WithAdminRpcClass<TBase>;
}

type RecoveryEvent = TriggerAlarmOutput["recoveryEvents"][number];

/** A string field of an SDK payload, or null. */
const text = (v: unknown): string | null => (typeof v === "string" && v ? v : null);

/**
 * An observability that passes every event on, after a sub-agent's ancestry (`ancestry`), and copies recovery
 * events to `log` in the SDK's words (its type, fiber, chat incident and reason): the client names them in the
 * console's contract (client.ts), through src/telemetry, the one place that knows the SDK's event shapes.
 */
function tapRecovery(inner: Observability | undefined, log: (e: RecoveryEvent) => void, ancestry: () => void): Observability {
  return {
    emit(event) {
      ancestry();
      try {
        if (SDK_RECOVERY_EVENT.test(event.type)) {
          const p = (event.payload ?? {}) as Record<string, unknown>;
          log({
            type: event.type,
            fiberId: text(p.fiberId),
            fiberName: text(p.fiberName),
            incidentId: text(p.incidentId),
            detail: text(p.reason) ?? text(p.error),
          });
        }
      } catch {
        /* the tap never breaks the agent */
      }
      inner?.emit(event);
    },
  };
}
