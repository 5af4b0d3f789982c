import { maskSecrets, type TelemetryEvent } from "@agent-oncall/telemetry";

/**
 * Per-field caps and masking at ingest, for what the contract leaves unbounded.
 *
 * Free text (previews, error messages, reasons, details, names shown to
 * people) is capped with a marker, not refused: the event's fact (a failure,
 * an exhaustion) is what on-call needs, and an over-long message must not hide
 * it in dead letters. Capping is a pure function of the event, so the same
 * event always gives the same row, in any order. Identity and keys (agent
 * class/name, correlation ids, backup handle/tenant/environment/session, op
 * kind) are never cut: the contract bounds them and refuses longer ones,
 * because two different ids cut to one would merge rows that are not the same.
 *
 * The same free text is masked again (defence in depth: the agent masks it
 * already, but an older package, another producer, or a pattern added since
 * may not have).
 */

/** Characters kept of each kind of free text. */
export const FIELD_CAPS = {
  /** A preview (snapshot, partial output, terminal message, unmodelled SDK data): the console shows up to 4,000. */
  preview: 4000,
  /** An error message or a detail. */
  text: 4000,
  /** A reason: a short code in practice (grouped in "top reasons"), an operator's words in admin events (the contract allows 2,000). */
  reason: 2000,
  /** A name shown to people (fiber name, recovery status, tool call id). */
  name: 200,
  /** The JSON of an admin event's before / after (the admin client caps these at 8,000 too). */
  json: 8000,
} as const;

const TEXT_KEYS: Record<string, keyof typeof FIELD_CAPS> = {
  error: "text",
  detail: "text",
  reason: "reason",
  fiberName: "name",
  status: "name",
};

/** Cuts text to `chars` with a marker saying how much was cut. */
function cut(s: string, chars: number): string {
  return s.length <= chars ? s : `${s.slice(0, chars)}… [cut at ingest: ${s.length - chars} more chars]`;
}

/** Masks, then cuts. */
const capText = (s: string, chars: number): string => cut(maskSecrets(s), chars);

/** A before / after value: masked as JSON text (key = value pairs included), then capped to a stand-in. */
function capJson(v: unknown): unknown {
  if (v === undefined || v === null) return v;
  const text = JSON.stringify(v);
  const masked = maskSecrets(text);
  if (masked.length > FIELD_CAPS.json) return { cut: true, chars: masked.length, preview: cut(masked, FIELD_CAPS.json) };
  if (masked === text) return v;
  try {
    return JSON.parse(masked);
  } catch {
    return masked; // a marker never breaks JSON; if it ever did, the masked text is kept as a string
  }
}

/** True for a Preview ({ preview, bytes, truncated }). */
function isPreview(v: unknown): v is { preview: string; bytes: number; truncated: boolean } {
  return typeof v === "object" && v !== null && typeof (v as { preview?: unknown }).preview === "string";
}

function capPreview(p: { preview: string; bytes: number; truncated: boolean }) {
  const masked = maskSecrets(p.preview);
  const preview = cut(masked, FIELD_CAPS.preview);
  return preview === p.preview ? p : { ...p, preview, truncated: p.truncated || preview !== masked };
}

/** The event with its free-text payload fields masked and capped. Returns the same object when nothing changed. */
export function capEventFields(event: TelemetryEvent): TelemetryEvent {
  const payload = event.payload as Record<string, unknown>;
  let out: Record<string, unknown> | null = null;
  const set = (k: string, v: unknown) => {
    if (v === payload[k]) return;
    out ??= { ...payload };
    out[k] = v;
  };
  for (const [k, v] of Object.entries(payload)) {
    if (typeof v === "string" && TEXT_KEYS[k]) set(k, capText(v, FIELD_CAPS[TEXT_KEYS[k]]));
    else if (isPreview(v)) set(k, capPreview(v));
    else if (k === "before" || k === "after") set(k, capJson(v));
    else if (k === "toolCallIds" && Array.isArray(v)) {
      const ids = v.map((x) => (typeof x === "string" ? capText(x, FIELD_CAPS.name) : x));
      if (ids.some((x, i) => x !== v[i])) set(k, ids);
    }
  }
  return out ? ({ ...event, payload: out } as TelemetryEvent) : event;
}
