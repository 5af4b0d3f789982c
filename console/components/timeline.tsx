import type { EventRow } from "../../src/store/read-models";
import { bytes, iso } from "../format";
import { JsonView, parsePreview } from "./json-view";
import { detailHref } from "../links";

const TONE: Record<string, string> = {
  "chat.recovery.exhausted": "bad", "session.error": "bad", "fiber.failed": "bad", "fiber.recovery.failed": "bad", "chat.recovery.failed": "bad", "op.ambiguous": "bad",
  "chat.recovery.completed": "ok", "fiber.recovery.handled": "ok", "fiber.completed": "ok", "op.completed": "ok", "op.resolved": "ok",
  "chat.recovery.attempt": "warn", "fiber.recovery.attempt": "warn", "session.status_rescheduled": "warn", "chat.stream.stalled": "warn",
};

type Preview = { preview: string; bytes: number | null; truncated: boolean };

/** A payload field as text, when it is text or a number; anything else (an old or odd payload) is left out. */
function text(v: unknown): string | null {
  if (typeof v === "string") return v || null;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  return null;
}

/** A `{ preview, bytes, truncated }` payload field, when it has that shape. */
function preview(v: unknown): Preview | null {
  if (!v || typeof v !== "object") return null;
  const p = v as Record<string, unknown>;
  if (typeof p.preview !== "string") return null;
  return { preview: p.preview, bytes: typeof p.bytes === "number" ? p.bytes : null, truncated: p.truncated === true };
}

/** The fields the timeline shows, read defensively: a stored payload may be any JSON at all. */
function fieldsOf(payload: unknown) {
  const p = (payload && typeof payload === "object" && !Array.isArray(payload) ? payload : {}) as Record<string, unknown>;
  return {
    attempt: text(p.attempt),
    maxAttempts: text(p.maxAttempts),
    reason: text(p.reason),
    error: text(p.error),
    detail: text(p.detail),
    partialText: preview(p.partialText),
    terminalMessage: preview(p.terminalMessage),
    snapshot: preview(p.snapshot),
  };
}

/**
 * Every event of an incident, fiber or session, oldest first: what happened,
 * the attempt and reason, the redacted partial output, the op and trace ids.
 * Everything is text; nothing from an event is ever interpreted as markup.
 */
export function Timeline(props: { events: EventRow[]; traceUrl: string | null }) {
  if (!props.events.length) return <p class="muted">No events on this page.</p>;
  return (
    <ol class="timeline">
      {props.events.map((e) => {
        const p = fieldsOf(e.payload);
        const snap = p.snapshot ? parsePreview(p.snapshot.preview) : null;
        return (
          <li class={Object.hasOwn(TONE, e.type) ? TONE[e.type] : ""} data-type={e.type}>
            <div>
              <span class="mono">{iso(e.time)}</span> <strong>{e.type}</strong>
              {p.attempt !== null ? <span> · attempt {p.attempt}{p.maxAttempts ? ` of ${p.maxAttempts}` : ""}</span> : null}
              {p.reason ? <span> · reason <code>{p.reason}</code></span> : null}
            </div>
            {p.error ? <div class="warn">{p.error}</div> : null}
            {p.detail ? <div class="muted">{p.detail}</div> : null}
            {p.partialText ? (
              <div>
                partial output ({bytes(p.partialText.bytes)}{p.partialText.truncated ? ", truncated" : ""}): <q>{p.partialText.preview}</q>
              </div>
            ) : null}
            {p.terminalMessage ? <div>terminal message: <q>{p.terminalMessage.preview}</q></div> : null}
            {p.snapshot && snap ? <JsonView value={snap.value} rawText={snap.rawText} size={p.snapshot.bytes} truncated={p.snapshot.truncated} /> : null}
            <div class="muted mono">
              {e.opId ? <span>op {e.opId} </span> : null}
              {e.fiberId ? <span>fiber <a href={detailHref("fibers", e.fiberId, e)}>{e.fiberId}</a> </span> : null}
              {e.requestId ? <span>request {e.requestId} </span> : null}
              {e.traceId ? (
                props.traceUrl ? <span>trace <a href={props.traceUrl.replace("{traceId}", encodeURIComponent(e.traceId))} rel="noopener noreferrer" target="_blank">{e.traceId}</a></span> : <span>trace {e.traceId}</span>
              ) : null}
            </div>
          </li>
        );
      })}
    </ol>
  );
}
