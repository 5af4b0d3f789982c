import { AsyncLocalStorage } from "node:async_hooks";
import { EVENT_PIPE, type EventPipe } from "@agent-oncall/admin-rpc/facts";
import type { Agent, FiberContext, FiberRecoveryContext, FiberRecoveryResult, StartFiberOptions, StartFiberResult } from "agents";
import { otlpTargetFromEnv } from "./config.js";
import { OUTBOX_SHIPPED_MARK } from "./constants.js";
import { hasUnsentEvents, type QueueLike } from "./outbox.js";
import type { EventType, PayloadOf } from "./payloads.js";
import { parseRedactPatterns, type RedactPatterns } from "./redact.js";
import { readNeeded, readRecord, type SdkReaders, TaskSteps } from "./sdk-reads.js";
import type { TracingFactory } from "./spans.js";
import { readParentPath } from "./sub-agents.js";
import { Telemetry, warnOnce } from "./telemetry.js";

/**
 * How long a wake waits at most for an evicted predecessor's unsent events to reach the Queue before the agent
 * starts (ms). A Queue send takes milliseconds; the wait only bounds a slow or failing Queue.
 */
const LEFTOVERS_WAIT_MS = 1000;

// biome-ignore lint/suspicious/noExplicitAny: mixins need an open constructor type.
type AgentClass = abstract new (...args: any[]) => Agent<any, any>;

export type WithTelemetryOptions = {
  /** Queue producer binding name. Default `TELEMETRY_QUEUE`. */
  queueBinding?: string | undefined;
  /** Env var holding the OTLP/HTTP traces URL. Default `OTLP_ENDPOINT`. */
  otlpEndpointVar?: string | undefined;
  /**
   * Span recording and OTLP export: `otlpTracing` from `@agent-oncall/telemetry/otlp`. Without it, events are not
   * recorded as spans and the OpenTelemetry SDK stays out of your bundle.
   */
  tracing?: TracingFactory | undefined;
  /** Env var holding OTLP headers (`k=v,k2=v2`). Default `OTLP_HEADERS`. */
  otlpHeadersVar?: string | undefined;
  /**
   * When events are written to the agent's outbox: "turn" (default; nothing lost at an eviction) or "flush"
   * (fewer Durable Object rows written; an eviction loses the last flush interval's events). See Outbox.
   */
  outboxWrites?: "turn" | "flush";
  /** How long events gather before one Queue send (ms); see TelemetryOptions.flushDelayMs. */
  flushDelayMs?: number | undefined;
  /** Keep publishing SDK events on diagnostics channels too (Tail Workers, other subscribers). Default true. */
  forwardToDiagnostics?: boolean | undefined;
  /** Env var (a secret) shared with the console; when set, events are signed. Default `TELEMETRY_SIGNING_SECRET`. */
  signingSecretVar?: string | undefined;
  /**
   * Extra things to mask in previews and free text, on top of the built-in credential shapes: RegExps, or
   * strings masked wherever they occur literally. Each match becomes `[masked: custom]`.
   */
  redact?: RedactPatterns | undefined;
  /**
   * Env var with more patterns (a JSON array of RegExp sources, `"/src/flags"` for flags), so an operator
   * can add one without a code change. Default `TELEMETRY_REDACT_PATTERNS`.
   */
  redactPatternsVar?: string | undefined;
  /**
   * Binding name of the Worker's version metadata (wrangler `version_metadata`: `{ id, tag, timestamp }`); its `id`
   * goes on every event as the Worker version. Default `CF_VERSION_METADATA`.
   */
  versionBinding?: string | undefined;
  /** A version of your own (a release tag) for every event, used instead of the version metadata binding. */
  version?: string | undefined;
  /**
   * How often at most one schedule callback's alarm firings ship, in ms (default ALARM_COALESCE_MS, 5 minutes):
   * its first firing at once, later ones counted in memory and shipped as one `schedule.executed` with `count`.
   */
  alarmWindowMs?: number | undefined;
};

/** The version an agent's events carry: the configured value, else the version metadata binding's id, else none. */
export function workerVersion(env: Record<string, unknown>, options: Pick<WithTelemetryOptions, "version" | "versionBinding">): string | null {
  if (options.version?.trim()) return options.version;
  const id = (env[options.versionBinding ?? "CF_VERSION_METADATA"] as { id?: unknown } | undefined)?.id;
  return typeof id === "string" && id.trim() ? id : null;
}

const currentFiber = new AsyncLocalStorage<{ id: string; name: string }>();

/**
 * The user turn a chat recovery under way continues: Think's and AIChatAgent's `_activeChatRecoveryRootRequestId`
 * (agents 0.32), the value the SDK writes into each turn's snapshot as `recoveryRootRequestId` while a recovery
 * callback runs. Not public API; pinned by test/chat/sdk-facts.test.ts. Null outside a recovery (or another SDK).
 */
function activeChatRecoveryRoot(agent: object): string | null {
  const v = (agent as { _activeChatRecoveryRootRequestId?: unknown })._activeChatRecoveryRootRequestId;
  return typeof v === "string" && v ? v : null;
}

/** A signing secret from env: a non-blank string, else none. */
const signingSecret = (v: unknown): string | null => (typeof v === "string" && v.trim() ? v : null);

/**
 * Adds telemetry to any agents-SDK Agent class:
 * - every SDK observability event is normalised and shipped;
 * - every `stash()` checkpoint is shipped as a capped preview (`fiber.stashed`);
 * - `this.telemetry.record(...)` ships the runtime's own events.
 *
 * ```ts
 * export class MyAgent extends withTelemetry(Agent<Env>) { ... }
 * ```
 */
// biome-ignore lint/suspicious/noExplicitAny: constructor signature of the mixed-in class.
export type WithTelemetryClass<TBase extends AgentClass> = TBase & (abstract new (...args: any[]) => { readonly telemetry: Telemetry });

export function withTelemetry<TBase extends AgentClass>(Base: TBase, options: WithTelemetryOptions = {}): WithTelemetryClass<TBase> {
  abstract class WithTelemetry extends Base {
    #telemetry: Telemetry | undefined;
    /** Fibers whose interruption the SDK reported before handing them to the recovery hook (see _handleInternalFiberRecovery). */
    readonly #interruptionReported = new Set<string>();
    /** The step each Tasks run of this isolate is at (the SDK's step events are seen here, not shipped). */
    readonly #steps = new TaskSteps();

    /** This agent's telemetry pipe; created on first use. */
    get telemetry(): Telemetry {
      if (!this.#telemetry) {
        const env = this.env as Record<string, unknown>;
        const queueBinding = options.queueBinding ?? "TELEMETRY_QUEUE";
        const queue = (env[queueBinding] as QueueLike | undefined) ?? null;
        // Nothing reaches the console without it, and nothing else would say so.
        if (!queue) warnOnce(`no Queue binding "${queueBinding}" in this Worker: events wait in each agent's storage until one is bound`);
        const name = this.#knownName();
        this.#nameUnknown = name === undefined;
        this.#telemetry = new Telemetry({
          // Events still carry the class while the name is unknown; see below.
          source: { agentClass: (Object.getPrototypeOf(this).constructor as { name: string }).name, agentName: name ?? "unknown" },
          queue,
          sql: this.ctx.storage.sql,
          otlp: otlpTargetFromEnv(env, options.otlpEndpointVar, options.otlpHeadersVar),
          tracing: options.tracing ?? null,
          ...(options.outboxWrites ? { outboxWrites: options.outboxWrites } : {}),
          ...(options.flushDelayMs !== undefined ? { flushDelayMs: options.flushDelayMs } : {}),
          keepAlive: (p) => this.ctx.waitUntil(p),
          activeChatRecoveryRoot: () => activeChatRecoveryRoot(this),
          signingSecret: signingSecret(env[options.signingSecretVar ?? "TELEMETRY_SIGNING_SECRET"]),
          version: workerVersion(env, options),
          ...(options.alarmWindowMs !== undefined ? { alarmWindowMs: options.alarmWindowMs } : {}),
          redact: [
            ...(options.redact ?? []),
            ...parseRedactPatterns(env[options.redactPatternsVar ?? "TELEMETRY_REDACT_PATTERNS"], (entry, error) =>
              console.warn(`[agents-telemetry] ignoring redact pattern ${JSON.stringify(entry.slice(0, 100))}: ${error}`),
            ),
          ],
        });
        // Events left in the outbox by an evicted predecessor go out now.
        const p = this.#telemetry.flush();
        this.ctx.waitUntil(p);
      }
      // Created before the SDK's startup loaded the name (the constructor, when a wake sends leftovers, of an agent
      // whose id carries none): the name goes on the events from the first use that knows it.
      if (this.#nameUnknown) {
        const name = this.#knownName();
        if (name !== undefined) {
          this.#telemetry.source.agentName = name;
          this.#nameUnknown = false;
        }
      }
      return this.#telemetry;
    }

    /**
     * Where the admin package's publishing helper sends this agent's own events (force idle's report, …): through
     * this outbox, numbered, instead of the agent's diagnostics channel, so each event takes one path. Its status
     * reads the outbox's counts here too.
     */
    get [EVENT_PIPE](): EventPipe {
      return {
        record: (type, payload, corr) => this.telemetry.record(type as EventType, payload as PayloadOf<EventType>, corr),
        shippedThrough: () => this.telemetry.shippedThrough(),
        stats: () => this.telemetry.stats(),
      };
    }

    /** Whether the telemetry was created before this agent's name could be read. */
    #nameUnknown = false;

    #knownName(): string | undefined {
      try {
        return this.name;
      } catch {
        return undefined; // not set yet
      }
    }

    // biome-ignore lint/suspicious/noExplicitAny: mixin constructors take the base's arguments.
    constructor(...args: any[]) {
      super(...args);
      // Wrap whatever observability is in place (the SDK's constructor sets its default, which publishes to
      // diagnostics channels; another mixin may have wrapped it), so stacking mixins in any order keeps every
      // consumer. Read from the instance, not imported: `agents/observability` loads the OpenTelemetry API,
      // which a Worker without tracing should not bundle. None in place means the SDK would publish nothing.
      const inner = this.observability ?? { emit: () => {} };
      this.observability = {
        emit: (event) => {
          if (event.type === "fiber:run:interrupted") this.#interruptionReported.add((event.payload as { fiberId?: string }).fiberId ?? "");
          if (options.forwardToDiagnostics !== false) {
            try {
              // Marked, so a console tailing this Worker skips what the outbox ships (one path per event).
              inner.emit({ ...event, [OUTBOX_SHIPPED_MARK]: true } as unknown as typeof event);
            } catch {
              /* a broken subscriber must not break the agent */
            }
          }
          this.#ship(event);
        },
      };
      // An evicted predecessor's unsent events go out before this instance handles anything, its recovery included.
      // An agent evicted soon after every wake (a poison turn) would otherwise send nothing until the loop ends, and
      // the console would not know it exists. Only after such an eviction, and for at most LEFTOVERS_WAIT_MS.
      try {
        if (hasUnsentEvents(this.ctx.storage.sql)) void this.ctx.blockConcurrencyWhile(() => this.telemetry.flushWithin(LEFTOVERS_WAIT_MS));
      } catch {
        /* telemetry never fails the agent */
      }
      // AIChatAgent reports how each chat turn ended only to `onChatResponse` (no chat:turn:finish): pass the result
      // on to the telemetry first. Wrapped on the instance, so the agent's own override (found on its prototype
      // now) still runs; Think reports the turn itself and the telemetry ignores the copy.
      const own = (this as { onChatResponse?: unknown }).onChatResponse;
      if (typeof own === "function") {
        (this as { onChatResponse?: unknown }).onChatResponse = function (this: WithTelemetry, result: unknown) {
          this.telemetry.chatResponse(result);
          return (own as (r: unknown) => unknown).call(this, result);
        };
      }
    }

    /** The SDK's public reads sdk-reads.ts completes events with. */
    #readers(): SdkReaders {
      return {
        inspectFiber: (id) => this.inspectFiber(id),
        getTask: (id) => this.tasks.get(id) as ReturnType<SdkReaders["getTask"]>,
      };
    }

    /**
     * Ships one SDK event: at once, or, where the SDK records facts the event lacks (a managed fiber's status after
     * its recovery hook, a Tasks run's status message or error message), right after one read of that record.
     */
    #ship(event: { type: string; payload?: unknown }): void {
      let record: { step?: string } = {};
      // A sub-agent's messages name only its own class and name: its ancestry (the SDK's parentPath) keys it.
      event = this.#withAncestry(event);
      try {
        const raw = event as { type: string; payload?: Record<string, unknown> };
        this.#steps.observe(raw);
        const step = this.#steps.stepFor(raw);
        record = step ? { step } : {};
        const need = readNeeded(raw);
        if (need) {
          const extra = record;
          this.telemetry.emitSdkAfter(
            event,
            readRecord(need, this.#readers()).then((r) => ({ ...r, ...extra })),
          );
          return;
        }
      } catch {
        /* telemetry never fails the agent: the event goes out as the SDK sent it */
      }
      this.telemetry.emitSdk(event, record);
    }

    /** The event with this agent's ancestry when it is a sub-agent (sub-agents.ts keys it by that), else as it is. */
    #withAncestry<E extends { type: string }>(event: E): E {
      try {
        const parentPath = readParentPath((this as { parentPath?: unknown }).parentPath);
        return parentPath ? { ...event, parentPath } : event;
      } catch {
        return event;
      }
    }

    /**
     * The SDK settles an interrupted managed fiber here and emits nothing: report it, with the fiber as the SDK
     * records it afterwards, so the console closes the run and its incident with what the agent decided.
     */
    override async resolveFiber(fiberId: string, result: FiberRecoveryResult): Promise<boolean> {
      const resolved = await super.resolveFiber(fiberId, result);
      if (resolved) {
        try {
          const f = await this.inspectFiber(fiberId);
          if (f)
            this.telemetry.fiberResolved(fiberId, {
              name: f.name,
              status: f.status,
              ...(f.error ? { error: f.error } : {}),
              ...(f.settledAt !== undefined ? { settledAt: f.settledAt } : {}),
            });
        } catch {
          /* telemetry never fails the agent */
        }
      }
      return resolved;
    }

    override runFiber<T>(name: string, fn: (ctx: FiberContext) => Promise<T>): Promise<T> {
      return super.runFiber(name, (ctx) => currentFiber.run({ id: ctx.id, name }, () => fn(this.#observeStash(ctx, name))));
    }

    // Managed fibers checkpoint through the same context; without this their stashes would never ship.
    override startFiber(name: string, fn: (ctx: FiberContext) => Promise<void>, options?: StartFiberOptions): Promise<StartFiberResult> {
      return super.startFiber(name, (ctx) => currentFiber.run({ id: ctx.id, name }, () => fn(this.#observeStash(ctx, name))), options);
    }

    override stash(data: unknown): void {
      super.stash(data);
      const fiber = currentFiber.getStore();
      if (fiber) this.#recordStash(fiber.id, fiber.name, data);
    }

    #observeStash(ctx: FiberContext, name: string): FiberContext {
      return {
        ...ctx,
        stash: (data: unknown) => {
          ctx.stash(data);
          this.#recordStash(ctx.id, name, data);
        },
      };
    }

    #recordStash(fiberId: string, fiberName: string, data: unknown): void {
      try {
        this.telemetry.stashed(fiberId, fiberName, data);
      } catch {
        /* telemetry never fails the agent */
      }
    }

    /**
     * Runs before the user's onFiberRecovered with the recovered checkpoint, so
     * the console's last-known snapshot survives even a stash whose event was
     * lost with the evicted isolate. (An SDK-internal hook; guarded.)
     */
    protected override async _handleInternalFiberRecovery(ctx: FiberRecoveryContext): Promise<boolean> {
      // A chat turn's snapshot names the user turn it runs for: known before anything of its recovery is reported.
      if (ctx.snapshot !== null && ctx.snapshot !== undefined) this.telemetry.chatRecovered(ctx.snapshot);
      if (ctx.snapshot !== null && ctx.snapshot !== undefined) this.#recordStash(ctx.id, ctx.name, ctx.snapshot);
      this.#reportInterruption(ctx);
      return super._handleInternalFiberRecovery(ctx);
    }

    /**
     * The SDK reports `fiber:run:interrupted` before it recovers a runFiber, but Think and AIChatAgent replay an
     * evicted chat turn's Task and call this hook directly, reporting nothing: the turn would stay "running" in
     * the console forever. This hook is the one place that sees the turn's name (with its request id) for that
     * replay, so the interruption is reported here, in the SDK's own shape, unless the SDK already did.
     */
    #reportInterruption(ctx: FiberRecoveryContext): void {
      try {
        if (this.#interruptionReported.delete(ctx.id)) return;
        const elapsedMs = typeof ctx.createdAt === "number" ? Math.max(0, Date.now() - ctx.createdAt) : undefined;
        this.telemetry.emitSdk({
          type: "fiber:run:interrupted",
          payload: { fiberId: ctx.id, fiberName: ctx.name, recoveryReason: ctx.recoveryReason, elapsedMs },
          timestamp: Date.now(),
        });
      } catch {
        /* telemetry never fails the agent */
      }
    }
  }
  // An explicit type keeps stacked mixins cheap for the type checker.
  return WithTelemetry as unknown as WithTelemetryClass<TBase>;
}
