import { MAX_EVENT_BYTES, SCHEMA_VERSION } from "./constants.js";
import type { Source, TelemetryEvent } from "./envelope.js";
import { newEventId } from "./ids.js";
import { utf8Length } from "./pack.js";
import { type Masker, maskSecrets, safeStringify, toPreview } from "./redact.js";

/**
 * An event too large to ship is never dropped silently: it is replaced by a
 * small `event.too_large` placeholder that keeps its id, time, source and
 * correlation ids, so the console records that it happened, where, and how big
 * it was. Counted by the caller (`stats().tooLarge`).
 */

/** Room left at emit for what is added later: trace/span ids and the signature. */
const EMIT_LIMIT = MAX_EVENT_BYTES - 1024;
/**
 * Room left at send for what the sender adds after this check: the event number (`,"seq":…`, at most 23
 * bytes) and the signature (`,"sig":"hmac-sha256=…"`, about 70 bytes).
 */
const SEND_LIMIT = MAX_EVENT_BYTES - 256;
/** Characters of the original payload kept, masked, in the placeholder. */
const PLACEHOLDER_PREVIEW_CHARS = 500;

/** The placeholder for `event`, whose JSON is `bytes` long. */
export function tooLargePlaceholder(
  event: Pick<TelemetryEvent, "id" | "time" | "type" | "source" | "corr" | "ver">,
  bytes: number,
  payloadText: string,
  mask: Masker = maskSecrets,
): TelemetryEvent<"event.too_large"> {
  return {
    v: SCHEMA_VERSION,
    id: event.id,
    time: event.time,
    type: "event.too_large",
    source: event.source,
    corr: event.corr,
    payload: { originalType: event.type, bytes, limit: MAX_EVENT_BYTES, preview: toPreview(payloadText, PLACEHOLDER_PREVIEW_CHARS, mask) },
    // The placeholder keeps the version too: an oversized event still counts for its deploy.
    ...(event.ver ? { ver: event.ver } : {}),
  };
}

/** `event` itself when it fits the Queue, else its placeholder. Serialises once; cheap for the usual small event. */
export function fitEvent(event: TelemetryEvent, mask: Masker = maskSecrets): TelemetryEvent {
  return fitEventText(event, mask).event;
}

/** fitEvent, with the JSON text of what it returns (so the caller does not serialise the event again). */
export function fitEventText(event: TelemetryEvent, mask: Masker = maskSecrets): { event: TelemetryEvent; text: string } {
  const text = safeStringify(event);
  // A character is at most 3 UTF-8 bytes (a surrogate pair is 2 characters for 4 bytes): exact count only when it can matter.
  if (text.length * 3 <= EMIT_LIMIT) return { event, text };
  const bytes = utf8Length(text);
  if (bytes <= EMIT_LIMIT) return { event, text };
  const placeholder = tooLargePlaceholder(event, bytes, safeStringify(event.payload), mask);
  return { event: placeholder, text: JSON.stringify(placeholder) };
}

/**
 * The same check at send time, on an event's stored JSON text (an outbox row
 * written by an older version may exceed the limit). Unparseable text, which
 * our own outbox never holds, becomes a placeholder under `source`.
 */
export function fitText(text: string, source: Source, mask: Masker = maskSecrets): string {
  if (text.length * 3 <= SEND_LIMIT) return text;
  const bytes = utf8Length(text);
  if (bytes <= SEND_LIMIT) return text;
  let original: Pick<TelemetryEvent, "id" | "time" | "type" | "source" | "corr" | "ver"> & { payload?: unknown };
  try {
    original = JSON.parse(text);
  } catch {
    const time = Date.now();
    original = { id: newEventId(time), time, type: "(unparseable outbox row)" as TelemetryEvent["type"], source, corr: {}, payload: text };
  }
  return JSON.stringify(tooLargePlaceholder(original, bytes, safeStringify(original.payload), mask));
}
