import type { RunKind } from "./constants.js";
import { RECOVERY_PAUSED_MARK } from "./constants.js";
import type { Correlation, Source } from "./envelope.js";
import { fiberIncidentId } from "./ids.js";
import { byteLength, capField, type Masker, safeStringify, toPreview } from "./redact.js";
import { CHAT_TURN_NAME, fiberRunOf } from "./sdk-names.js";
import type { SdkRecord } from "./sdk-reads.js";

/**
 * How an agents-SDK event's payload becomes ours: the builders registry entries name (`fromSdk`). A family of SDK
 * types (fiber:run:*, task:*, …) shares one; a lone type's builder sits in its own entry.
 */

/** An SDK observability message as it arrives: `{ type, agent?, name?, payload, timestamp }`. */
export type Raw = { type: string; agent?: string; name?: string; payload?: Record<string, unknown>; timestamp?: number; parentPath?: unknown };

export type NormalizeOptions = {
  /**
   * Keep the lifecycle events of a Task that only carries a chat turn (CHAT_CARRIER_REDUNDANT). The telemetry
   * pipe keeps them for chat-turns.ts, which knows whether the agent's SDK reports the turn itself.
   */
  keepChatCarriers?: boolean;
};

/**
 * What a builder gets: our type for the SDK's, the SDK's payload, and what the agent side read with it. Types are
 * plain strings here (the registry's keys are the event types: naming them would make its type refer to itself).
 */
export type SdkInput = {
  type: string;
  raw: Raw;
  p: Record<string, unknown>;
  src: Source;
  mask: Masker;
  rec: SdkRecord;
  opts: NormalizeOptions;
};

/** The rest of a normalised event. */
export type Mapped = { type: string; payload: Record<string, unknown>; corr: Correlation };

/** Builds the rest of a normalised event; `null` means the SDK event is deliberately not shipped. */
export type FromSdk = (i: SdkInput) => Mapped | null;

/** A non-empty string field of an SDK payload, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? Math.max(0, Math.round(v)) : undefined);
export const bool = (v: unknown): boolean | undefined => (typeof v === "boolean" ? v : undefined);

/**
 * Drops undefined keys so the payload validates against strict optional fields. Copies instead of `delete`: a
 * deleted key turns the object into a slow dictionary, which every later read and the JSON.stringify pay for.
 */
export function compact<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

/** Free text of the SDK's, masked and capped (undefined when absent). */
export const capText = (v: unknown, mask: Masker, max?: number): string | undefined => (str(v) ? capField(str(v)!, max, mask) : undefined);

/**
 * The lifecycle events of a Task that only carries a chat turn and that its chat:turn:start|finish already say:
 * not shipped. Its interruptions, waits, failures and cancellations are (they are evidence the turn's own events lack).
 */
const CHAT_CARRIER_REDUNDANT: ReadonlySet<string> = new Set(["task:accepted", "task:attempt:started", "task:completed"]);

function fiberPayload(type: string, p: Record<string, unknown>, mask: Masker, kind: RunKind | undefined, rec: SdkRecord): Record<string, unknown> {
  const base = compact({
    fiberName: str(p.fiberName) ?? "(unnamed)",
    managed: bool(p.managed),
    elapsedMs: num(p.elapsedMs),
    kind,
    // What the SDK records of a managed fiber right after this event (see sdk-reads.ts): its events do not say.
    fiberStatus: str(rec.fiberStatus)?.slice(0, 50),
    fiberError: capText(rec.fiberError, mask),
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

/** `fiber:run:*` and `fiber:recovery:*`. A chat turn's internal fiber is that turn (its request id). */
export const fromFiber: FromSdk = ({ type, p, src, mask, rec }) => {
  const fiberId = str(p.fiberId);
  const run = fiberRunOf(str(p.fiberName) ?? "", bool(p.managed));
  // A chat turn's fiber recovering says what the SDK's chat:recovery:detected|attempt of the same turn say: counted
  // once, there (the overview's recoveries started and attempts count event types). Its other events stay.
  if (run.kind === "chat_turn" && (type === "fiber.recovery.detected" || type === "fiber.recovery.attempt")) return null;
  const corr: Correlation = compact({ fiberId, requestId: run.requestId });
  // A chat turn's fiber recovers as a chat incident (chat:recovery:*), not as a fiber incident of its own.
  if (fiberId && run.kind !== "chat_turn" && type.startsWith("fiber.recovery.")) corr.incidentId = fiberIncidentId(src.agentClass, src.agentName, fiberId);
  // A recovery the operator paused fails on purpose (the run row is kept for after the pause): not a failure.
  if (type === "fiber.recovery.failed" && str(p.error)?.includes(RECOVERY_PAUSED_MARK)) {
    const payload = compact({ kind: run.kind ?? "fiber", fiberName: (str(p.fiberName) ?? "(unnamed)").slice(0, 200), decision: "held" });
    return { type: "recovery.skipped_paused", payload, corr };
  }
  return { type, payload: fiberPayload(type, p, mask, run.kind, rec), corr };
};

/** `chat:recovery:*` (AIChatAgent / Think). */
export const fromChatRecovery: FromSdk = ({ type, p, mask }) => {
  const kind = p.recoveryKind === "continue" ? "continue" : "retry";
  // The SDK names the user's turn only on exhaustion (`recoveryRootRequestId`); chat-turns.ts stamps the others.
  const root = str(p.recoveryRootRequestId)?.slice(0, 200);
  const base: Record<string, unknown> = compact({
    attempt: num(p.attempt) ?? 0,
    maxAttempts: num(p.maxAttempts) ?? 0,
    recoveryKind: kind,
    rootRequestId: root,
  });
  let payload = base;
  if (type === "chat.recovery.exhausted") {
    // The runtime payload carries more than its declared type: partial output and the terminal message. Never ship them raw.
    const parts = Array.isArray(p.partialParts) ? p.partialParts : undefined;
    payload = compact({
      ...base,
      reason: str(p.reason) ?? "unknown",
      partialText: p.partialText !== undefined ? toPreview(p.partialText, undefined, mask) : undefined,
      partialParts: parts ? { count: parts.length, bytes: byteLength(safeStringify(parts)) } : undefined,
      terminalMessage: p.terminalMessage !== undefined ? toPreview(p.terminalMessage, undefined, mask) : undefined,
    });
  } else if (type === "chat.recovery.skipped" || type === "chat.recovery.failed") {
    payload = compact({ ...base, reason: capText(p.reason, mask) });
  }
  return { type, payload, corr: compact({ incidentId: str(p.incidentId), requestId: str(p.requestId) }) };
};

/** `task:*` lifecycle (agents 0.32 `this.tasks`). */
export const fromTask: FromSdk = ({ type, raw, p, mask, rec, opts }) => {
  const definition = str(p.definition) ?? "(unknown)";
  if (definition === CHAT_TURN_NAME && CHAT_CARRIER_REDUNDANT.has(raw.type) && !opts.keepChatCarriers) return null;
  const base = compact({
    definition: definition.slice(0, 200),
    attempt: num(p.attempt),
    kind: definition === CHAT_TURN_NAME ? ("chat_turn" as const) : undefined,
    // The SDK's step on task:attempt:interrupted, else the step the agent side saw the run at (sdk-reads.ts).
    step: (str(p.step) ?? str(rec.step))?.slice(0, 200),
    statusMessage: capText(rec.statusMessage, mask, 500),
  });
  let payload: Record<string, unknown> = base;
  if (type === "task.waiting") payload = compact({ ...base, reason: str(p.reason)?.slice(0, 500), wakeAt: num(p.wakeAt) });
  else if (type === "task.failed")
    // agents 0.32 reports the error's name here; its message is in the run's record (tasks.get), read by the agent side.
    payload = compact({ ...base, error: capField(str(p.error) ?? "unknown error", undefined, mask), errorMessage: capText(rec.errorMessage, mask) });
  else if (type === "task.cancelled") payload = compact({ ...base, reason: capText(p.reason, mask) });
  return { type, payload, corr: compact({ taskId: str(p.runId)?.slice(0, 200) }) };
};

/** `chat:turn:start|finish` (AIChatAgent / Think); the turn is keyed by its request id. */
export const fromChatTurn: FromSdk = ({ type, p, mask }) => {
  const base = compact({
    trigger: str(p.trigger)?.slice(0, 100),
    admission: str(p.admission)?.slice(0, 100),
    continuation: bool(p.continuation),
    generation: num(p.generation),
  });
  const payload =
    type !== "chat.turn.finished"
      ? base
      : compact({ ...base, status: str(p.status)?.slice(0, 100) ?? "unknown", durationMs: num(p.durationMs), error: capText(p.error, mask) });
  return { type, payload, corr: compact({ requestId: str(p.requestId)?.slice(0, 200) }) };
};

/** Correlation of a lone chat event: its request id. */
export const byRequest = (p: Record<string, unknown>): Correlation => compact({ requestId: str(p.requestId) });
