import { AlarmFirings } from "./alarm-firings.js";
import { ChatTurns, readTaskRun } from "./chat-turns.js";
import type { OtlpTarget } from "./config.js";
import { MAX_VERSION_CHARS, SCHEMA_VERSION } from "./constants.js";
import type { Correlation, Source, TelemetryEvent } from "./envelope.js";
import { fiberIncidentId, newEventId } from "./ids.js";
import { fiberRunOf, normalizeSdkEvent } from "./normalize.js";
import { MAX_UNSENT_CHARS, Outbox, type OutboxRow, type QueueLike, type SqlLike } from "./outbox.js";
import { sendPacked } from "./pack.js";
import type { EventType, PayloadOf } from "./payloads.js";
import { capField, createMasker, type Masker, type RedactPatterns, safeStringify, toPreview } from "./redact.js";
import type { SdkRecord } from "./sdk-reads.js";
import { isOwnEvent, stampSeq, withoutSeq } from "./seq.js";
import { signEventText, signingKey } from "./signing.js";
import type { SpanRecorder, TracingFactory } from "./spans.js";
import { fitEventText, fitText } from "./too-large.js";
import { RecoveryScope, readUsage, type UsageContext } from "./usage.js";

/** What telemetry counts about itself. Its own failures end up here, never in the agent. */
export type TelemetryStats = {
  /** When this instance's counters started (ms): every count below but `pending` is since then, not since the agent was created. */
  since: number;
  /** Whether a Queue was given: without one nothing is ever sent (events wait in the outbox, the newest MAX_UNSENT_CHARS of them). */
  queueBound: boolean;
  /** When the current run of failed sends began (ms); null while the last send went through. */
  failingSince: number | null;
  /** The last failed send's error message (`lastError` is the last of any stage). */
  lastSendError: string | null;
  emitted: number;
  sent: number;
  pending: number;
  sendErrors: number;
  storeErrors: number;
  spanErrors: number;
  /** Events dropped: failed to normalise or record, pushed out of memory (MEMORY_CAP), or deleted unsent by the outbox's bound. */
  dropped: number;
  /** Events too large to ship, sent as `event.too_large` placeholders instead. */
  tooLarge: number;
  /** Reads of the SDK's own records made to complete an event (sdk-reads.ts): one primary-key row each. */
  sdkReads: number;
  /** Alarm firings counted but not shipped yet (alarm-firings.ts): they ship with the callback's next event. */
  alarmFiringsHeld: number;
  lastError: string | null;
  /** Queue messages sent (each a packed JSON array of events, pack.ts): `sent / messages` is events per message. */
  messages: number;
  /** Durable Object SQLite rows the outbox wrote in this isolate (billed to the agent as rows written). */
  outboxRowsWritten: number;
  otlp: { exported: number; failed: number; dropped: number } | null;
};

export type TelemetryOptions = {
  source: Source;
  /** The telemetry Queue producer. Without one, events stay in the outbox (the newest MAX_UNSENT_CHARS of them) or memory until one is given. */
  queue?: QueueLike | null;
  /** Durable Object SQL storage for the outbox; without it events are buffered in memory. */
  sql?: SqlLike | null;
  /** OTLP/HTTP traces endpoint, used by `tracing`. */
  otlp?: OtlpTarget | null;
  /**
   * Records events as OpenTelemetry spans: `otlpTracing` from `@agent-oncall/telemetry/otlp`. Without it no span
   * work is done (and the OpenTelemetry SDK is not bundled); an `otlp` target given without it is reported once.
   */
  tracing?: TracingFactory | null;
  serviceName?: string;
  /** Keeps background work alive (ctx.waitUntil). */
  keepAlive?: (p: Promise<unknown>) => void;
  /**
   * How long events gather before one Queue send (ms). Default 3000: the outbox holds them durably meanwhile, and
   * each message the console ingests costs it D1 rows and a Queue operation of its own, so more events per message
   * cost less per event (the simulated demo fleet: 7.35 events per message at 3 s, 3.53 at 1 s); the price is that
   * the console sees an event up to that much later.
   */
  flushDelayMs?: number;
  /**
   * When events are written to the durable outbox: "turn" (default: in the turn that produced them, about one
   * row written per turn that emits events, nothing lost at an eviction) or "flush" (what gathered over 100 ms in
   * one statement, about one row per 100 ms of activity; an eviction loses the events of the last 100 ms). See Outbox.
   */
  outboxWrites?: "turn" | "flush";
  /** Extra patterns masked in previews and free text, on top of the built-in credential shapes. */
  redact?: RedactPatterns;
  /** Shared secret: when set, every event is signed (HMAC-SHA256) in the background sender. See signing.ts. */
  signingSecret?: string | null;
  /**
   * The user turn a chat recovery under way continues (Think / AIChatAgent), read from the agent when a turn starts;
   * withTelemetry supplies it. Without it, recovery turns are still joined to their turn where the SDK's events,
   * snapshots and Tasks runs tell (chat-turns.ts).
   */
  activeChatRecoveryRoot?: () => string | null;
  /**
   * The Worker version every event carries (envelope `ver`): the `version_metadata` binding's id (withTelemetry
   * reads it), or a value of your own (a release tag). Null or blank: events carry none. Cut to MAX_VERSION_CHARS.
   */
  version?: string | null;
  /**
   * How often at most one callback's alarm firings ship (ms; default ALARM_COALESCE_MS, 5 minutes): the first at
   * once, the rest counted in memory and shipped as one `schedule.executed` with `count` (alarm-firings.ts).
   */
  alarmWindowMs?: number;
};

const MEMORY_CAP = 1000;
/** Default flushDelayMs. bench/mixes/demo.json's flushDelayMs follows it (the simulator packs per flush). */
export const FLUSH_DELAY_MS = 3000;
/** Characters of a snapshot kept as its preview. */
const SNAPSHOT_PREVIEW_CHARS = 1000;
const MAX_BACKOFF_MS = 30_000;
/**
 * Quiet time after a flush before the outbox marks its sent events as sent (one row written, Outbox.compact).
 * Longer than the gap between a busy agent's turns, whose next writes overwrite them for free; an isolate gone
 * before it only means its successor sends them again (ingest dedupes).
 */
const COMPACT_AFTER_MS = 10_000;

/** What the log says when the outbox deletes unsent events to stay bounded (Outbox, MAX_UNSENT_CHARS). */
const OUTBOX_FULL = `outbox full (${MAX_UNSENT_CHARS / (1024 * 1024)} Mi characters unsent): the oldest events are deleted, and the console counts them as missing`;

const warned = new Set<string>();
/** A configuration mistake, said once per isolate (not once per agent or event). */
export function warnOnce(msg: string): void {
  if (warned.has(msg)) return;
  warned.add(msg);
  console.warn(`[agents-telemetry] ${msg}`);
}

/**
 * The per-agent telemetry pipe: event → OTel span (event) → durable outbox → Queue.
 * Every public method is safe to call from agent code: none throws, none awaits
 * the network on the caller's path.
 */
export class Telemetry {
  readonly source: Source;
  #queue: QueueLike | null;
  #outbox: Outbox | null;
  #memory: TelemetryEvent[] = [];
  #spans: SpanRecorder | null;
  #keepAlive: ((p: Promise<unknown>) => void) | undefined;
  #flushDelayMs: number;
  #mask: Masker;
  #flushing: Promise<void> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #backoffMs = 0;
  /** When the current run of failed sends began; null while the last send went through. */
  #failingSince: number | null = null;
  /** The last failed send's error (lastError may be a later one of another stage). */
  #lastSendError: string | null = null;
  /** Set when an event arrives while a flush is under way, so that flush is followed by another. */
  #dirty = false;
  #stats = {
    emitted: 0,
    sent: 0,
    messages: 0,
    sendErrors: 0,
    storeErrors: 0,
    spanErrors: 0,
    dropped: 0,
    tooLarge: 0,
    sdkReads: 0,
    lastError: null as string | null,
  };
  readonly #since = Date.now();
  /** The signing key (imported once, off the agent's path); null when events go unsigned. */
  #signingKey: Promise<CryptoKey> | null = null;
  /** The Worker version stamped on every event (`ver`); null when none is configured. */
  readonly #version: string | null;

  /** Which user turn each chat event belongs to (chat-turns.ts). */
  readonly #chat: ChatTurns;
  /** Alarm firings held back per callback (alarm-firings.ts). */
  readonly #alarms: AlarmFirings;

  constructor(opts: TelemetryOptions) {
    this.source = opts.source;
    const sql = opts.sql ?? null;
    const activeRoot = opts.activeChatRecoveryRoot;
    this.#chat = new ChatTurns({ activeRecoveryRoot: () => activeRoot?.() ?? null, taskRun: (id) => (sql ? readTaskRun(sql, id) : null) }, sql);
    this.#queue = opts.queue ? this.#counting(opts.queue) : null;
    this.#outbox = opts.sql
      ? new Outbox(opts.sql, opts.outboxWrites ?? "turn", {
          // One line per distinct message (#fail): a Queue gone for hours reports it once, not at every write.
          onDrop: () => this.#fail("outbox", new Error(OUTBOX_FULL)),
        })
      : null;
    this.#keepAlive = opts.keepAlive;
    this.#flushDelayMs = opts.flushDelayMs ?? FLUSH_DELAY_MS;
    this.#alarms = new AlarmFirings(opts.alarmWindowMs);
    this.#mask = createMasker(opts.redact);
    this.#version = opts.version?.trim().slice(0, MAX_VERSION_CHARS) || null;
    if (opts.signingSecret) {
      this.#signingKey = signingKey(opts.signingSecret);
      // A key that cannot be imported fails each send (counted in sendErrors), not the agent.
      this.#signingKey.catch(() => {});
    }
    this.#spans = opts.tracing
      ? opts.tracing({
          target: opts.otlp ?? null,
          serviceName: opts.serviceName ?? opts.source.agentClass,
          ...(opts.keepAlive ? { keepAlive: opts.keepAlive } : {}),
        })
      : null;
    if (!opts.tracing && opts.otlp?.url)
      warnOnce("an OTLP endpoint is set but no tracing is configured: pass { tracing: otlpTracing } from @agent-oncall/telemetry/otlp to export spans");
  }

  /** `queue`, counting the messages sent through it (stats().messages). */
  #counting(queue: QueueLike): QueueLike {
    return {
      sendBatch: async (messages) => {
        const list = [...messages];
        const r = await queue.sendBatch(list);
        this.#stats.messages += list.length;
        return r;
      },
    };
  }

  /** Latest checkpoint per fiber not yet shipped, with when it was taken. */
  #stashes = new Map<string, { fiberName: string; text: string; time: number }>();

  /**
   * Records a fiber checkpoint. Only the newest checkpoint per fiber per flush is shipped (when the flush
   * starts, or before that fiber's next lifecycle event), so a loop of checkpoints costs one event per flush,
   * not one per call. A pending checkpoint is not stored in the outbox until then: lost with an evicted
   * isolate, it is reported again from the SDK's own record when the fiber recovers (withTelemetry's recovery
   * hook), and it never took a number, so it is no gap (seq.ts).
   */
  stashed(fiberId: string, fiberName: string, data: unknown): void {
    try {
      // Serialised now (the caller may mutate the object later); masked and capped only if it ships.
      this.#stashes.set(fiberId, { fiberName, text: safeStringify(data), time: Date.now() });
      this.#schedule(this.#flushDelayMs);
    } catch (e) {
      this.#stats.dropped++;
      this.#fail("stash", e);
    }
  }

  #flushStashes(fiberId?: string): void {
    for (const [id, s] of this.#stashes) {
      if (fiberId && id !== fiberId) continue;
      this.#stashes.delete(id);
      // A chat turn's internal fiber checkpoints its turn: the stash belongs to that turn (corr.requestId).
      const run = fiberRunOf(s.fiberName);
      const payload = { fiberName: s.fiberName, snapshot: toPreview(s.text, SNAPSHOT_PREVIEW_CHARS, this.#mask), ...(run.kind ? { kind: run.kind } : {}) };
      this.record("fiber.stashed", payload, run.requestId ? { fiberId: id, requestId: run.requestId } : { fiberId: id }, s.time);
    }
  }

  /**
   * Normalises and ships one agents-SDK observability event. `record` adds what the agent side knows of the
   * SDK's records for it (sdk-reads.ts); `id` keeps an id reserved when the SDK emitted it (emitSdkAfter).
   */
  emitSdk(raw: unknown, record: SdkRecord = {}, id?: string): void {
    try {
      this.#noteChatFailure(raw);
      // A fiber's pending checkpoint goes out before its next lifecycle event (taking its id first, so it sorts first).
      const fiberId = (raw as { payload?: { fiberId?: unknown } } | null)?.payload?.fiberId;
      if (typeof fiberId === "string" && this.#stashes.has(fiberId)) this.#flushStashes(fiberId);
      let event = normalizeSdkEvent(raw as never, this.source, this.#mask, record, { keepChatCarriers: true });
      if (event && id) event.id = id;
      // An alarm that keeps firing ships its firings as counts, at most one event per callback and window.
      if (event?.type === "schedule.executed") event = this.#alarms.admit(event as TelemetryEvent<"schedule.executed">);
      // The same for events whose fiber only normalisation names.
      if (event?.corr.fiberId && this.#stashes.has(event.corr.fiberId)) this.#flushStashes(event.corr.fiberId);
      if (event) this.emit(event);
    } catch (e) {
      this.#stats.dropped++;
      this.#fail("normalize", e);
    }
  }

  /** Reads of the SDK's records still under way, each followed by its event (settle waits for them). */
  readonly #reading = new Set<Promise<void>>();

  /**
   * Ships an SDK event once `record` (a read of the SDK's own records, sdk-reads.ts) is in. Its id is taken
   * now, so it keeps its place among this isolate's events; the read is one primary-key row in the agent's
   * SQLite and resolves within microtasks. A read that fails ships the event as the SDK sent it. Never throws.
   */
  emitSdkAfter(raw: unknown, record: Promise<SdkRecord>): void {
    try {
      this.#stats.sdkReads++;
      const t = (raw as { timestamp?: unknown } | null)?.timestamp;
      const id = newEventId(typeof t === "number" && Number.isFinite(t) && t > 0 ? Math.round(t) : Date.now());
      const done: Promise<void> = record
        .then(
          (r) => this.emitSdk(raw, r, id),
          () => this.emitSdk(raw, {}, id),
        )
        .finally(() => this.#reading.delete(done));
      this.#reading.add(done);
      this.#keepAlive?.(done);
    } catch (e) {
      this.#stats.dropped++;
      this.#fail("normalize", e);
    }
  }

  /**
   * Reports that the agent settled an interrupted managed fiber (`resolveFiber`; the SDK emits nothing for it):
   * `fiber` is the fiber as `inspectFiber` answers after it. Its incident closes with the fiber's status.
   */
  fiberResolved(fiberId: string, fiber: { name: string; status: string; error?: string; settledAt?: number }): void {
    try {
      const payload: PayloadOf<"fiber.resolved"> = {
        fiberName: fiber.name.slice(0, 500) || "(unnamed)",
        managed: true,
        kind: "managed_fiber",
        status: fiber.status.slice(0, 50) || "unknown",
        ...(fiber.error ? { error: capField(fiber.error, undefined, this.#mask) } : {}),
        ...(typeof fiber.settledAt === "number" && Number.isInteger(fiber.settledAt) && fiber.settledAt >= 0 ? { settledAt: fiber.settledAt } : {}),
      };
      this.record("fiber.resolved", payload, { fiberId, incidentId: fiberIncidentId(this.source.agentClass, this.source.agentName, fiberId) });
    } catch (e) {
      this.#stats.dropped++;
      this.#fail("resolve", e);
    }
  }

  /** Builds and ships one of the runtime's own events (session.*, op.*, backup.*, admin.*). */
  record<T extends EventType>(type: T, payload: PayloadOf<T>, corr: Correlation = {}, time = Date.now()): TelemetryEvent<T> {
    const event = {
      v: SCHEMA_VERSION,
      id: newEventId(time),
      time,
      type,
      source: this.source,
      corr: { ...corr },
      payload,
      ...(this.#version ? { ver: this.#version } : {}),
    } as TelemetryEvent<T>;
    this.emit(event);
    return event;
  }

  /** Recoveries under way in this isolate, from the events shipped so far: which incident a model call re-spends for. */
  readonly #recoveries = new RecoveryScope();

  /**
   * Reports the tokens one model call spent, as a `model.usage` event. `usage` is an AI SDK usage object
   * (`{ inputTokens, outputTokens }`, the older `{ promptTokens, completionTokens }`) or OpenTelemetry span
   * attributes (`gen_ai.usage.input_tokens` / `output_tokens`); see readUsage. `ctx` says where the call ran
   * (request id, fiber id, session turn). When that request, fiber or turn is being recovered now (this agent
   * shipped the attempt's event and not yet its end), the event carries the incident's id and attempt, and the
   * console adds its tokens to what the recovery re-spent. Returns the event, or null for usage it cannot read
   * (nothing is sent then). Never throws.
   */
  usage(usage: unknown, ctx: UsageContext = {}): TelemetryEvent<"model.usage"> | null {
    try {
      const read = readUsage(usage);
      if (!read) return null;
      const open = ctx.incidentId ? { incidentId: ctx.incidentId } : this.#recoveries.lookup(ctx);
      const model = ctx.model?.trim().slice(0, 200) || read.model;
      const payload: PayloadOf<"model.usage"> = {
        inputTokens: read.inputTokens,
        outputTokens: read.outputTokens,
        ...(model ? { model } : {}),
        ...(open && "attempt" in open && open.attempt !== undefined ? { attempt: open.attempt } : {}),
        ...(typeof ctx.turnSeq === "number" && Number.isInteger(ctx.turnSeq) && ctx.turnSeq >= 0 ? { turnSeq: ctx.turnSeq } : {}),
      };
      const corr: Correlation = {};
      if (open) corr.incidentId = open.incidentId.slice(0, 200);
      if (ctx.requestId) corr.requestId = ctx.requestId.slice(0, 200);
      if (ctx.fiberId) corr.fiberId = ctx.fiberId.slice(0, 200);
      if (ctx.sessionName) corr.sessionName = ctx.sessionName.slice(0, 200);
      return this.record("model.usage", payload, corr);
    } catch (e) {
      this.#stats.dropped++;
      this.#fail("usage", e);
      return null;
    }
  }

  /** A chat request's failure, kept for its turn's finish (chat-turns.ts): masked and capped like any error we ship. */
  #noteChatFailure(raw: unknown): void {
    const r = raw as { type?: unknown; payload?: { requestId?: unknown; error?: unknown } };
    if (r?.type !== "chat:request:failed" || typeof r.payload?.requestId !== "string" || typeof r.payload.error !== "string") return;
    this.#chat.noteFailure(r.payload.requestId, capField(r.payload.error, undefined, this.#mask));
  }

  /** The recovery hook got a chat turn's snapshot (with-telemetry.ts): it names the user turn that turn runs for. */
  chatRecovered(snapshot: unknown): void {
    try {
      this.#chat.noteRecoveredTurn(snapshot);
    } catch (e) {
      this.#fail("chat turn", e);
    }
  }

  /**
   * A chat turn's result as the SDK hands it to `onChatResponse` ({ requestId, status, error }). For SDKs that report
   * no chat:turn:finish (AIChatAgent) it is shipped as one, in the SDK's shape; otherwise it says nothing new.
   */
  chatResponse(result: unknown): void {
    try {
      const payload = result && typeof result === "object" ? this.#chat.responseAsFinish(result as Record<string, unknown>) : null;
      if (payload) this.emitSdk({ type: "chat:turn:finish", payload, timestamp: Date.now() });
    } catch (e) {
      this.#fail("chat turn", e);
    }
  }

  /**
   * Ships an already-normalised event. Never throws. An event of this agent goes to the durable outbox, which
   * numbers it (`seq`, see seq.ts); one naming another agent (a shared pipe, subscribeAgentDiagnostics) ships
   * unnumbered from memory, so it never takes a number of this agent's sequence. A `seq` the caller set is
   * dropped: only the outbox gives numbers.
   */
  emit(event: TelemetryEvent): void {
    try {
      if (!this.#chat.annotate(event)) return;
    } catch (e) {
      this.#fail("chat turn", e);
    }
    this.#stats.emitted++;
    event = withoutSeq(event);
    // Stamped here, the one path every event takes, so no kind of event goes out without its deploy.
    if (this.#version && !event.ver) event = { ...event, ver: this.#version };
    try {
      this.#recoveries.observe(event);
    } catch (e) {
      this.#fail("recovery scope", e);
    }
    const fitted = fitEventText(event, this.#mask);
    if (fitted.event !== event) this.#stats.tooLarge++;
    event = fitted.event;
    // Serialised once, here; again only when a span adds its ids.
    let text = fitted.text;
    if (this.#spans) {
      try {
        const ids = this.#spans.record(event);
        if (ids) {
          event.corr = { ...event.corr, traceId: ids.traceId, spanId: ids.spanId };
          text = JSON.stringify(event);
        }
      } catch (e) {
        this.#stats.spanErrors++;
        this.#fail("span", e);
      }
    }
    if (this.#outbox && isOwnEvent(event, this.source)) this.#outbox.put(event, text, (e, events) => this.#storeFailed(e, events));
    else this.#remember(event);
    this.#schedule(this.#flushDelayMs);
  }

  /** Storage refused the outbox write: keep the events in memory instead, so they still go out. */
  #storeFailed(e: unknown, events: TelemetryEvent[]): void {
    this.#stats.storeErrors++;
    this.#fail("outbox", e);
    for (const ev of events) this.#remember(ev);
    this.#schedule(0);
  }

  #remember(event: TelemetryEvent): void {
    if (this.#memory.length >= MEMORY_CAP) {
      this.#memory.shift();
      this.#stats.dropped++;
    }
    this.#memory.push(event);
  }

  #schedule(delayMs: number): void {
    if (this.#flushing) this.#dirty = true;
    if (this.#timer || this.#flushing || !this.#queue) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      const p = this.flush();
      this.#keepAlive?.(p);
    }, delayMs);
  }

  /**
   * flush(), waiting for it at most `waitMs`: past that, the send goes on in the background and this resolves.
   * Never rejects.
   */
  async flushWithin(waitMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const send = this.flush();
    this.#keepAlive?.(send);
    await Promise.race([send, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  /** Sends everything pending to the Queue. Resolves (never rejects) when done or failed. */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    if (!this.#queue) return Promise.resolve();
    const queue = this.#queue;
    this.#dirty = false;
    if (this.#stashes.size) {
      // This flush's newest checkpoint per fiber joins the events it sends (the drain writes them to the outbox
      // in one statement first); the timer their emit set is not needed, this flush sends them.
      this.#flushStashes();
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#flushing = (async () => {
      try {
        if (this.#memory.length) {
          const batch = this.#memory.splice(0, 500);
          try {
            // Unnumbered: events kept in memory never had an outbox row (see emit).
            await sendPacked(queue, await this.#prepare(batch.map((e) => ({ body: JSON.stringify(e) }))));
            this.#stats.sent += batch.length;
          } catch (e) {
            this.#memory.unshift(...batch);
            throw e;
          }
        }
        if (this.#outbox) this.#stats.sent += await this.#outbox.drain(queue, (rows) => this.#prepare(rows));
        this.#backoffMs = 0;
        this.#failingSince = null;
      } catch (e) {
        this.#stats.sendErrors++;
        this.#fail("queue", e);
        this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs ? this.#backoffMs * 2 : 500);
        this.#failingSince ??= Date.now();
        this.#lastSendError = e instanceof Error ? e.message : String(e);
      } finally {
        this.#flushing = null;
      }
      if (this.#backoffMs) this.#schedule(this.#backoffMs);
      else if (this.#dirty || this.#memory.length) this.#schedule(0);
      else this.#compactLater();
    })();
    return this.#flushing;
  }

  /**
   * What goes on the Queue for stored event texts: each checked against the size limit again (outbox rows
   * from an older version may exceed it), then given its outbox number (after the size check, so a
   * placeholder keeps the number of the event it replaces), then signed when a secret is set (so the
   * signature covers the number). Runs in the background sender.
   */
  async #prepare(rows: (Pick<OutboxRow, "body"> & { seq?: number })[]): Promise<string[]> {
    const fitted = rows.map(({ body, seq }) => {
      const f = fitText(body, this.source, this.#mask);
      if (f !== body) this.#stats.tooLarge++;
      return seq === undefined ? f : stampSeq(f, seq);
    });
    if (!this.#signingKey) return fitted;
    const key = await this.#signingKey;
    return Promise.all(fitted.map((b) => signEventText(b, key)));
  }

  #compactTimer: ReturnType<typeof setTimeout> | null = null;

  /**
   * After a quiet spell, marks the outbox's sent events as sent (one row written), so a later wake does not send
   * them again. A busy agent never pays it: its next writes overwrite them anyway. Not kept alive: if the isolate
   * goes first, the next wake resends them and ingest dedupes.
   */
  #compactLater(): void {
    if (!this.#outbox || this.#compactTimer) return;
    this.#compactTimer = setTimeout(() => {
      this.#compactTimer = null;
      if (this.#flushing || this.#timer) return;
      try {
        this.#outbox?.compact();
      } catch (e) {
        this.#fail("outbox", e);
      }
    }, COMPACT_AFTER_MS);
  }

  /** Waits for pending Queue sends and OTLP exports. For tests, shutdown paths and benchmarks. */
  async settle(): Promise<void> {
    while (this.#reading.size) await Promise.all([...this.#reading]);
    this.#flushStashes();
    for (const held of this.#alarms.drain()) this.emit(held);
    await this.flush();
    await this.#spans?.forceFlush();
  }

  /** The highest event number this agent's outbox has handed to the Queue (Outbox.shippedThrough); null when unknown. Never throws. */
  shippedThrough(): number | null {
    try {
      return this.#outbox?.shippedThrough() ?? null;
    } catch {
      return null;
    }
  }

  stats(): TelemetryStats {
    let pending = this.#memory.length;
    try {
      pending += this.#outbox?.pending() ?? 0;
    } catch {
      /* storage unavailable: report memory only */
    }
    return {
      since: this.#since,
      queueBound: this.#queue !== null,
      failingSince: this.#failingSince,
      lastSendError: this.#lastSendError,
      ...this.#stats,
      dropped: this.#stats.dropped + (this.#outbox?.dropped ?? 0),
      pending,
      alarmFiringsHeld: this.#alarms.pending(),
      outboxRowsWritten: this.#outbox?.rowsWritten ?? 0,
      otlp: this.#spans?.stats() ?? null,
    };
  }

  #fail(stage: string, e: unknown): void {
    const msg = `${stage}: ${e instanceof Error ? e.message : String(e)}`;
    // Report once per distinct message, so a dead Queue does not flood the logs.
    if (msg !== this.#stats.lastError) console.warn(`[agents-telemetry] ${msg}`);
    this.#stats.lastError = msg;
  }
}
