import type { ObservabilityEvent } from "agents/observability";
import { SCHEMA_VERSION } from "./constants.js";
import type { Source, TelemetryEvent } from "./envelope.js";
import { newEventId } from "./ids.js";
import type { EventType } from "./payloads.js";
import { type Masker, maskSecrets } from "./redact.js";
import { EVENT_REGISTRY, type EventEntry, fromUnmodelled, NOISY_SDK_TYPES } from "./registry.js";
import { type FromSdk, type NormalizeOptions, num, type Raw, str } from "./sdk-payloads.js";
import type { SdkRecord } from "./sdk-reads.js";
import { agentKeyName, readParentPath } from "./sub-agents.js";

/**
 * Maps agents-SDK observability events onto our versioned contract, by the registry (registry.ts): each entry
 * names the SDK type it normalises and builds its payload; anything unmodelled becomes `sdk.event`.
 */

export { CHAT_TURN_NAME, fiberRunOf, isInternalSdkName } from "./sdk-names.js";
export { type NormalizeOptions, str } from "./sdk-payloads.js";
export { NOISY_SDK_TYPES };

/** Our event type and its builder, by the SDK's type: the registry's entries that name one. */
const BY_SDK_TYPE: ReadonlyMap<string, { type: EventType; fromSdk: FromSdk }> = new Map(
  (Object.entries(EVENT_REGISTRY) as [EventType, EventEntry][]).flatMap(([type, e]) => (e.sdk === null ? [] : [[e.sdk, { type, fromSdk: e.fromSdk }]])),
);

/**
 * Normalises one agents-SDK observability event into our contract.
 * `fallback` names the emitting agent when the SDK event does not.
 * Returns null only for the known noisy types in NOISY_SDK_TYPES and (unless `opts.keepChatCarriers`) for the
 * lifecycle events of a Task that only carries a chat turn (sdk-payloads.ts CHAT_CARRIER_REDUNDANT). `mask` masks
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
  const known = BY_SDK_TYPE.get(raw.type);
  if (!known && NOISY_SDK_TYPES.has(raw.type)) return null;
  const input = { type: known?.type ?? "sdk.event", raw, p: raw.payload ?? {}, src, mask, rec: record, opts } as const;
  const mapped = (known?.fromSdk ?? fromUnmodelled)(input);
  if (!mapped) return null;
  const time = num(raw.timestamp) || Date.now();
  return { v: SCHEMA_VERSION, id: newEventId(time), time, type: mapped.type, source: src, corr: mapped.corr, payload: mapped.payload } as TelemetryEvent;
}
