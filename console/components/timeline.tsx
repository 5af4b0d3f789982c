import type { EventRow } from "../../src/store/read-models";
import { iso } from "../format";
import { JsonView } from "./json-view";

const TONE: Record<string, string> = {
  "chat.recovery.exhausted": "bad", "session.error": "bad", "fiber.failed": "bad", "fiber.recovery.failed": "bad", "chat.recovery.failed": "bad", "op.ambiguous": "bad",
  "chat.recovery.completed": "ok", "fiber.recovery.handled": "ok", "fiber.completed": "ok", "op.completed": "ok", "op.resolved": "ok",
  "chat.recovery.attempt": "warn", "fiber.recovery.attempt": "warn", "session.status_rescheduled": "warn", "chat.stream.stalled": "warn",
};

type Payload = Record<string, unknown> & {
  attempt?: number; maxAttempts?: number; reason?: string; error?: string; detail?: string;
  partialText?: { preview: string; bytes: number; truncated: boolean };
  terminalMessage?: { preview: string; bytes: number; truncated: boolean };
  snapshot?: { preview: string; bytes: number; truncated: boolean };
};

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
        const p = (e.payload ?? {}) as Payload;
        return (
          <li class={TONE[e.type] ?? ""} data-type={e.type}>
            <div>
              <span class="mono">{iso(e.time)}</span> <strong>{e.type}</strong>
              {p.attempt !== undefined ? <span> · attempt {p.attempt}{p.maxAttempts ? ` of ${p.maxAttempts}` : ""}</span> : null}
              {p.reason ? <span> · reason <code>{p.reason}</code></span> : null}
            </div>
            {p.error ? <div class="warn">{p.error}</div> : null}
            {p.detail ? <div class="muted">{p.detail}</div> : null}
            {p.partialText ? (
              <div>
                partial output ({p.partialText.bytes} bytes{p.partialText.truncated ? ", truncated" : ""}): <q>{p.partialText.preview}</q>
              </div>
            ) : null}
            {p.terminalMessage ? <div>terminal message: <q>{p.terminalMessage.preview}</q></div> : null}
            {p.snapshot ? <JsonView value={safeParse(p.snapshot.preview)} rawText={p.snapshot.preview} size={p.snapshot.bytes} truncated={p.snapshot.truncated} /> : null}
            <div class="muted mono">
              {e.opId ? <span>op {e.opId} </span> : null}
              {e.fiberId ? <span>fiber <a href={`/fibers/${encodeURIComponent(e.fiberId)}`}>{e.fiberId}</a> </span> : null}
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

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}
