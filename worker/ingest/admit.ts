import { parseEvent, type TelemetryEvent, utf8Length } from "@agent-oncall/telemetry";
import { binaryReason, bodyType, isBinary, thousands } from "./body-text";
import type { IngestBounds } from "./bounds";
import { capEventFields } from "./field-caps";
import { jsonShapeProblem } from "./json-shape";
import { signatureProblem } from "./signature";
import { timeOutsideWindow } from "./time-window";

/**
 * The verdict on one event of a message: accepted (validated, free text
 * capped and masked) or refused with a reason a person can act on. Checks run
 * cheapest and most fundamental first; each refusal names what to fix.
 */

export type Verdict = { ok: true; event: TelemetryEvent } | { ok: false; reason: string; eventType: string | null };

export type AdmitOptions = {
  /** When the console received the message: the time window is relative to it. */
  receivedAt: number;
  bounds: IngestBounds;
  /** Set in signed mode: every event must carry a valid signature. */
  signingKey: CryptoKey | null;
};

const refuse = (reason: string, item: unknown): Verdict => ({ ok: false, reason, eventType: bodyType(item) });

/** Judges one item of a message (`fitsInMessage`: the whole message is within the size limit). Never throws. */
export async function admit(item: unknown, opts: AdmitOptions, fitsInMessage = false): Promise<Verdict> {
  const { bounds } = opts;
  if (isBinary(item)) return refuse(binaryReason(item), item);
  // Shape before size: serialising a structure 100,000 levels deep is what the shape check avoids.
  const shape = jsonShapeProblem(item, bounds.maxDepth);
  if (shape) return refuse(`invalid event: ${shape}`, item);
  // Items of a text message no larger than the limit fit it too (the usual packed message): no need to measure each.
  const bytes = fitsInMessage ? 0 : utf8Length(JSON.stringify(item));
  if (bytes > bounds.maxEventBytes) {
    return refuse(
      `event too large: ${thousands(bytes)} bytes; the console accepts at most ${thousands(bounds.maxEventBytes)} bytes per event (the telemetry sender replaces larger ones with event.too_large)`,
      item,
    );
  }
  if (opts.signingKey && typeof item === "object" && item !== null && !Array.isArray(item)) {
    const bad = await signatureProblem(item as Record<string, unknown>, opts.signingKey);
    if (bad) return refuse(bad, item);
  }
  const time = (item as { time?: unknown } | null)?.time;
  if (typeof time === "number") {
    const outside = timeOutsideWindow(time, opts.receivedAt, bounds);
    if (outside) return refuse(outside, item);
  }
  const r = parseEvent(item);
  if (!r.ok) return refuse(`invalid event: ${r.reason}`, item);
  return { ok: true, event: capEventFields(r.event) };
}
