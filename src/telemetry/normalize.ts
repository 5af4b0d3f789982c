import type { ObservabilityEvent } from "agents/observability";
import { RECOVERY_PAUSED_MARK, SCHEMA_VERSION } from "./constants.js";
import type { Correlation, Source, TelemetryEvent } from "./envelope.js";
import { fiberIncidentId, newEventId } from "./ids.js";
import type { EventType, RunKind } from "./payloads.js";
import { byteLength, capField, type Masker, maskSecrets, safeStringify, toPreview } from "./redact.js";
import type { SdkRecord } from "./sdk-reads.js";
import { agentKeyName, readParentPath } from "./sub-agents.js";

/**
 * The only place that knows the shape of agents-SDK observability events.
 * Maps them onto our versioned contract; anything unmodelled becomes `sdk.event`.
 */

/**
 * SDK event types that fire on every RPC, message, state change or task step
 * (measured: ~12 per chat turn). Not shipped: they would drown the signal.
 * Their failure and interruption siblings (stream:errored, task:attempt:interrupted, …) are shipped.
 *
 * Tasks: a run's own lifecycle is shipped (task.*); its steps are not. `task:step:*` fires for every step of
 * every attempt (and again on replay), while what a step tells an on-call person is already where it matters:
 * `task:attempt:interrupted` carries the step the attempt was cut off in, and the admin RPC shows a live run's
 * current step. `task:deleted` is retention housekeeping of a run that already settled (runs started with
 * `retain: false`, every chat turn among them, are deleted right after their terminal event): it says nothing
 * about how the run ended.
 *
 * Schedules: `schedule:execute` is shipped (`schedule.executed`, one per callback the alarm runs): it is how the
 * console sees an alarm that keeps firing with nothing to do. `schedule:create` is not (execute says it all).
 */
export const NOISY_SDK_TYPES: ReadonlySet<string> = new Set([
  "rpc",
  "state:update",
  "message:request",
  "message:response",
  "connect",
  "disconnect",
  "task:step:started",
  "task:step:completed",
  "task:step:retry",
  "task:deleted",
  "session:message:appended",
  "session:message:updated",
  "stream:opened",
  "stream:closed",
  "stream:deleted",
  "queue:create",
  "schedule:create",
]);

/**
 * The SDK's internal chat-turn name (Think / AIChatAgent `CHAT_FIBER_NAME`, agents 0.32). A chat turn runs as
 * a Tasks run of this definition (its runId is `chat_<nonce>`, not the request id), or, in a sub-agent, as a
 * runFiber named `__cf_internal_chat_turn:<requestId>`. When an evicted turn is replayed, the SDK hands the
 * recovery hook a context with that same name and the Task's runId, which is the only place the two meet.
 */
export const CHAT_TURN_NAME = "__cf_internal_chat_turn";

/** The prefix the SDK reserves for its own Tasks definitions and fiber names (agents 0.32, Think, AIChatAgent). */
const INTERNAL_SDK_PREFIX = "__cf_internal_";

/**
 * Whether a Tasks definition or fiber name is the SDK's own machinery (`__cf_internal_*`: chat-turn carriers, chat
 * recovery transports, messenger replies): never a run its user started.
 */
export function isInternalSdkName(name: string): boolean {
  return name.startsWith(INTERNAL_SDK_PREFIX);
}
const CHAT_TURN_PREFIX = `${CHAT_TURN_NAME}:`;

/**
 * What a fiber's name and `managed` flag say about the run it is: the SDK's internal chat-turn fiber is the
 * chat turn named by its request id; anything else is a fiber, managed when the SDK says so.
 */
export function fiberRunOf(fiberName: string, managed?: boolean): { kind?: RunKind; requestId?: string } {
  if (fiberName.startsWith(CHAT_TURN_PREFIX) && fiberName.length > CHAT_TURN_PREFIX.length) {
    return { kind: "chat_turn", requestId: fiberName.slice(CHAT_TURN_PREFIX.length, CHAT_TURN_PREFIX.length + 200) };
  }
  return managed === undefined ? {} : { kind: managed ? "managed_fiber" : "fiber" };
}

/**
 * The lifecycle events of a Task that only carries a chat turn and that its chat:turn:start|finish already say:
 * not shipped. Its interruptions, waits, failures and cancellations are (they are evidence the turn's own events lack).
 */
const CHAT_CARRIER_REDUNDANT: ReadonlySet<string> = new Set(["task:accepted", "task:attempt:started", "task:completed"]);

type Raw = { type: string; agent?: string; name?: string; payload?: Record<string, unknown>; timestamp?: number; parentPath?: unknown };

/**
 * Our event type for each SDK type of a family that is shipped as its own type: the SDK's name with dots for
 * colons, `fiber:run:*` without its `run`, and a turn's start and finish in the past tense. Each family's SDK
 * types are listed: only those are mapped (the rest of the family is noise or unmodelled).
 */
function family(sdkPrefix: string, ourPrefix: string, names: string): Record<string, EventType> {
  const out: Record<string, string> = {};
  for (const n of names.split(" ")) out[sdkPrefix + n] = ourPrefix + n.replace(":", ".").replace(/^(start|finish)$/, "$1ed");
  return out as Record<string, EventType>;
}

const FIBER = {
  ...family("fiber:run:", "fiber.", "started completed failed interrupted"),
  ...family("fiber:recovery:", "fiber.recovery.", "detected attempt handled skipped failed"),
};
const CHAT_RECOVERY = family("chat:recovery:", "chat.recovery.", "detected scheduled attempt completed skipped exhausted failed");
const TASK = family("task:", "task.", "accepted attempt:started attempt:interrupted waiting completed failed cancelled");
const CHAT_TURN = family("chat:turn:", "chat.turn.", "start finish");

/** A non-empty string field of an SDK payload, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? Math.max(0, Math.round(v)) : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === "boolean" ? v : undefined);

/**
 * Drops undefined keys so the payload validates against strict optional fields. Copies instead of `delete`: a
 * deleted key turns the object into a slow dictionary, which every later read and the JSON.stringify pay for.
 */
function compact<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

function fiberPayload(type: EventType, p: Record<string, unknown>, mask: Masker, kind: RunKind | undefined, rec: SdkRecord): Record<string, unknown> {
  const base = compact({
    fiberName: str(p.fiberName) ?? "(unnamed)",
    managed: bool(p.managed),
    elapsedMs: num(p.elapsedMs),
    kind,
    // What the SDK records of a managed fiber right after this event (see sdk-reads.ts): its events do not say.
    fiberStatus: str(rec.fiberStatus)?.slice(0, 50),
    fiberError: str(rec.fiberError) ? capField(str(rec.fiberError)!, undefined, mask) : undefined,
  });
  switch (type) {
    case "fiber.failed":
      return { ...base, error: capField(str(p.error) ?? "unknown error", undefined, mask) };
    case "fiber.recovery.handled":
      return compact({ ...base, status: str(p.status) });
    case "fiber.recovery.skipped":
      return { ...base, reason: capField(str(p.reason) ?? "unspecified", undefined, mask) };
    case "fiber.recovery.failed":
      return compact({ ...base, error: capField(str(p.error) ?? "unknown error", undefined, mask), reason: str(p.reason) });
    default:
      return base;
  }
}

function chatRecoveryPayload(type: EventType, p: Record<string, unknown>, mask: Masker): Record<string, unknown> {
  const kind = p.recoveryKind === "continue" ? "continue" : "retry";
  // The SDK names the user's turn only on exhaustion (`recoveryRootRequestId`); chat-turns.ts stamps the others.
  const root = str(p.recoveryRootRequestId)?.slice(0, 200);
  const base: Record<string, unknown> = compact({
    attempt: num(p.attempt) ?? 0,
    maxAttempts: num(p.maxAttempts) ?? 0,
    recoveryKind: kind,
    rootRequestId: root,
  });
  if (type === "chat.recovery.exhausted") {
    // The runtime payload carries more than its declared type: partial output and the terminal message. Never ship them raw.
    const parts = Array.isArray(p.partialParts) ? p.partialParts : undefined;
    return compact({
      ...base,
      reason: str(p.reason) ?? "unknown",
      partialText: p.partialText !== undefined ? toPreview(p.partialText, undefined, mask) : undefined,
      partialParts: parts ? { count: parts.length, bytes: byteLength(safeStringify(parts)) } : undefined,
      terminalMessage: p.terminalMessage !== undefined ? toPreview(p.terminalMessage, undefined, mask) : undefined,
    });
  }
  if (type === "chat.recovery.skipped" || type === "chat.recovery.failed") {
    return compact({ ...base, reason: str(p.reason) ? capField(str(p.reason)!, undefined, mask) : undefined });
  }
  return base;
}

function taskPayload(type: EventType, p: Record<string, unknown>, mask: Masker, definition: string, rec: SdkRecord): Record<string, unknown> {
  const base = compact({
    definition: definition.slice(0, 200),
    attempt: num(p.attempt),
    kind: definition === CHAT_TURN_NAME ? ("chat_turn" as const) : undefined,
    // The SDK's step on task:attempt:interrupted, else the step the agent side saw the run at (sdk-reads.ts).
    step: (str(p.step) ?? str(rec.step))?.slice(0, 200),
    statusMessage: str(rec.statusMessage) ? capField(str(rec.statusMessage)!, 500, mask) : undefined,
  });
  switch (type) {
    case "task.waiting":
      return compact({ ...base, reason: str(p.reason)?.slice(0, 500), wakeAt: num(p.wakeAt) });
    case "task.failed":
      // agents 0.32 reports the error's name here; its message is in the run's record (tasks.get), read by the agent side.
      return compact({
        ...base,
        error: capField(str(p.error) ?? "unknown error", undefined, mask),
        errorMessage: str(rec.errorMessage) ? capField(str(rec.errorMessage)!, undefined, mask) : undefined,
      });
    case "task.cancelled":
      return compact({ ...base, reason: str(p.reason) ? capField(str(p.reason)!, undefined, mask) : undefined });
    default:
      return base;
  }
}

function chatTurnPayload(type: EventType, p: Record<string, unknown>, mask: Masker): Record<string, unknown> {
  const base = compact({
    trigger: str(p.trigger)?.slice(0, 100),
    admission: str(p.admission)?.slice(0, 100),
    continuation: bool(p.continuation),
    generation: num(p.generation),
  });
  if (type !== "chat.turn.finished") return base;
  return compact({
    ...base,
    status: str(p.status)?.slice(0, 100) ?? "unknown",
    durationMs: num(p.durationMs),
    error: str(p.error) ? capField(str(p.error)!, undefined, mask) : undefined,
  });
}

/** Builds the rest of a normalised event; `null` means the SDK event is deliberately not shipped. */
function mapPayload(
  raw: Raw,
  src: Source,
  mask: Masker,
  rec: SdkRecord,
  opts: NormalizeOptions,
): { type: EventType; payload: Record<string, unknown>; corr: Correlation } | null {
  const p = raw.payload ?? {};
  const fiberType = FIBER[raw.type];
  if (fiberType) {
    const fiberId = str(p.fiberId);
    const run = fiberRunOf(str(p.fiberName) ?? "", bool(p.managed));
    const corr: Correlation = compact({ fiberId, requestId: run.requestId });
    // A chat turn's fiber recovers as a chat incident (chat:recovery:*), not as a fiber incident of its own.
    if (fiberId && run.kind !== "chat_turn" && fiberType.startsWith("fiber.recovery."))
      corr.incidentId = fiberIncidentId(src.agentClass, src.agentName, fiberId);
    // A recovery the operator paused fails on purpose (the run row is kept for after the pause): not a failure.
    if (fiberType === "fiber.recovery.failed" && str(p.error)?.includes(RECOVERY_PAUSED_MARK)) {
      const payload = compact({ kind: run.kind ?? "fiber", fiberName: (str(p.fiberName) ?? "(unnamed)").slice(0, 200), decision: "held" });
      return { type: "recovery.skipped_paused", payload, corr };
    }
    return { type: fiberType, payload: fiberPayload(fiberType, p, mask, run.kind, rec), corr };
  }
  const taskType = TASK[raw.type];
  if (taskType) {
    const definition = str(p.definition) ?? "(unknown)";
    if (definition === CHAT_TURN_NAME && CHAT_CARRIER_REDUNDANT.has(raw.type) && !opts.keepChatCarriers) return null;
    return { type: taskType, payload: taskPayload(taskType, p, mask, definition, rec), corr: compact({ taskId: str(p.runId)?.slice(0, 200) }) };
  }
  const turnType = CHAT_TURN[raw.type];
  if (turnType) {
    return { type: turnType, payload: chatTurnPayload(turnType, p, mask), corr: compact({ requestId: str(p.requestId)?.slice(0, 200) }) };
  }
  const chatType = CHAT_RECOVERY[raw.type];
  if (chatType) {
    return {
      type: chatType,
      payload: chatRecoveryPayload(chatType, p, mask),
      corr: compact({ incidentId: str(p.incidentId), requestId: str(p.requestId) }),
    };
  }
  switch (raw.type) {
    case "chat:context:compacted":
      return {
        type: "chat.context.compacted",
        payload: compact({ mode: p.reason === "reactive" ? "reactive" : "proactive", shortened: p.shortened === true, attempt: num(p.attempt) }),
        corr: compact({ requestId: str(p.requestId) }),
      };
    case "chat:transcript:repaired":
      return {
        type: "chat.transcript.repaired",
        payload: compact({
          removedToolCalls: num(p.removedToolCalls) ?? 0,
          normalizedInputs: num(p.normalizedInputs) ?? 0,
          toolCallIds: Array.isArray(p.toolCallIds) ? p.toolCallIds.filter((x): x is string => typeof x === "string").slice(0, 100) : undefined,
        }),
        corr: compact({ requestId: str(p.requestId) }),
      };
    case "chat:stream:stalled":
      return { type: "chat.stream.stalled", payload: { timeoutMs: num(p.timeoutMs) ?? 0 }, corr: compact({ requestId: str(p.requestId) }) };
    case "schedule:execute":
      return {
        type: "schedule.executed",
        payload: {
          callback: (str(p.callback) ?? "(unknown)").slice(0, 200) || "(unknown)",
          scheduleId: (str(p.id) ?? "(unknown)").slice(0, 200) || "(unknown)",
        },
        corr: {},
      };
    case "alarm:memory_limit_reset":
      return {
        type: "alarm.memory_limit_reset",
        payload: { strikes: num(p.strikes) ?? 0, limit: num(p.limit) ?? 0, sealed: p.sealed === true, error: capField(str(p.error) ?? "", undefined, mask) },
        corr: {},
      };
  }
  if (NOISY_SDK_TYPES.has(raw.type)) return null;
  return {
    type: "sdk.event",
    payload: { sdkType: raw.type.slice(0, 200) || "(empty)", data: toPreview(p, undefined, mask) },
    corr: compact({ requestId: str(p.requestId) }),
  };
}

export type NormalizeOptions = {
  /**
   * Keep the lifecycle events of a Task that only carries a chat turn (CHAT_CARRIER_REDUNDANT). The telemetry
   * pipe keeps them for chat-turns.ts, which knows whether the agent's SDK reports the turn itself.
   */
  keepChatCarriers?: boolean;
};

/**
 * Normalises one agents-SDK observability event into our contract.
 * `fallback` names the emitting agent when the SDK event does not.
 * Returns null only for the known noisy types in NOISY_SDK_TYPES and (unless `opts.keepChatCarriers`) for the
 * lifecycle events of a Task that only carries a chat turn (CHAT_CARRIER_REDUNDANT). `mask` masks
 * free text before it is capped (default: the built-in credential shapes). `record` is what the agent side
 * read of the SDK's own records right after the event (sdk-reads.ts), for the facts the event does not carry.
 */
export function normalizeSdkEvent(
  event: ObservabilityEvent | Raw,
  fallback?: Partial<Source>,
  mask: Masker = maskSecrets,
  record: SdkRecord = {},
  opts: NormalizeOptions = {},
): TelemetryEvent | null {
  const raw = event as Raw;
  // A sub-agent's message may carry its ancestry (sub-agents.ts): its key name takes it in, so two parents'
  // same-named sub-agents stay two agents; a top-level agent's key is its name, as before.
  const parentPath = readParentPath(raw.parentPath);
  const name = str(raw.name) ?? fallback?.agentName ?? "unknown";
  const src: Source = {
    agentClass: str(raw.agent) ?? fallback?.agentClass ?? "unknown",
    agentName: agentKeyName(name, parentPath),
    ...(parentPath ? { parentPath } : {}),
  };
  const mapped = mapPayload(raw, src, mask, record, opts);
  if (!mapped) return null;
  const time = num(raw.timestamp) || Date.now();
  return { v: SCHEMA_VERSION, id: newEventId(time), time, type: mapped.type, source: src, corr: mapped.corr, payload: mapped.payload } as TelemetryEvent;
}
