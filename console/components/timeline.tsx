import { type EventRow, eventToneOf, type TimelinePage } from "../../src/store/read-models";
import type { TimelineSources } from "../../src/store/read-models/events";
import { pageLimit } from "../../src/store/read-models/paging";
import { bytes, count, gap } from "../format";
import { agentHref, detailHref, listHref } from "../links";
import { HistoryReadSpan, historyReadAttrs } from "./from-history";
import { JsonView, parsePreview } from "./json-view";
import { Pager } from "./pager";
import { Time } from "./time";

/**
 * An event's tone, as its registry entry declares it (eventToneOf); a managed fiber's recovery "handled" is only good
 * news when the SDK records it completed. The tone key is the CSS class.
 */
function toneOf(type: string, fiberStatus: string | null): string {
  if (type === "fiber.recovery.handled" && fiberStatus !== null && fiberStatus !== "completed") return "warn";
  return eventToneOf(type) ?? "";
}

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
    // A failed Tasks run's message (its event's `error` is the error's name): the message says more.
    error: text(p.errorMessage) ?? text(p.error),
    fiberStatus: text(p.fiberStatus),
    state: text(p.state),
    statusMessage: text(p.statusMessage),
    detail: text(p.detail),
    status: text(p.status),
    step: text(p.step),
    wakeAt: typeof p.wakeAt === "number" ? p.wakeAt : null,
    finding: text(p.finding),
    notStopped: p.stopped === false,
    chatTurn: p.kind === "chat_turn",
    rootRequestId: text(p.rootRequestId),
    partialText: preview(p.partialText),
    terminalMessage: preview(p.terminalMessage),
    snapshot: preview(p.snapshot),
    tokens:
      typeof p.inputTokens === "number" && typeof p.outputTokens === "number" ? { input: p.inputTokens, output: p.outputTokens, model: text(p.model) } : null,
  };
}

/**
 * Every event of an incident, run or session, in page order: when, to the millisecond, and how long after
 * the event before it on the page; what happened, the attempt and reason, the redacted partial output, the
 * op, run and trace ids. Everything is text; nothing from an event is ever interpreted as markup.
 */
export function Timeline(props: {
  events: EventRow[];
  traceUrl: string | null /** Events of many agents (the events list): name each one's agent and incident. */;
  showAgent?: boolean;
}) {
  if (!props.events.length) return <p class="muted">No events on this page.</p>;
  return (
    <ol class="timeline">
      {props.events.map((e, i) => {
        const p = fieldsOf(e.payload);
        const snap = p.snapshot ? parsePreview(p.snapshot.preview) : null;
        const prev = i > 0 ? props.events[i - 1]! : null;
        return (
          <li class={toneOf(e.type, p.fiberStatus)} data-type={e.type}>
            <div>
              <Time t={e.time} ms class="mono" testId="event-time" />{" "}
              {prev ? (
                <span class="mono muted" data-testid="event-gap" title="time since the event above">
                  {gap(e.time - prev.time)}
                </span>
              ) : null}{" "}
              <strong>{e.type}</strong>
              {p.attempt !== null ? (
                <span>
                  {" "}
                  · attempt {p.attempt}
                  {p.maxAttempts ? ` of ${p.maxAttempts}` : ""}
                </span>
              ) : null}
              {p.status ? (
                <span>
                  {" "}
                  · status <code>{p.status}</code>
                </span>
              ) : null}
              {p.fiberStatus ? (
                <span data-testid="event-fiber-status">
                  {" "}
                  · the SDK records the fiber <code>{p.fiberStatus}</code>
                </span>
              ) : null}
              {p.state ? (
                <span>
                  {" "}
                  · the agent records <code>{p.state}</code>
                </span>
              ) : null}
              {p.finding ? (
                <span>
                  {" "}
                  · finding <code>{p.finding}</code>
                </span>
              ) : null}
              {p.reason ? (
                <span>
                  {" "}
                  · reason <code>{p.reason}</code>
                </span>
              ) : null}
              {p.step ? (
                <span>
                  {" "}
                  · step <code>{p.step}</code>
                </span>
              ) : null}
              {p.statusMessage ? <span> · “{p.statusMessage}”</span> : null}
              {p.wakeAt !== null ? (
                <span>
                  {" "}
                  · wakes <Time t={p.wakeAt} ms />
                </span>
              ) : null}
              {p.tokens ? (
                <span
                  data-testid="event-tokens"
                  data-input={String(p.tokens.input)}
                  data-output={String(p.tokens.output)}
                  data-model={p.tokens.model ?? undefined}
                >
                  {" "}
                  · {count(p.tokens.input)} input + {count(p.tokens.output)} output tokens
                  {p.tokens.model ? ` (${p.tokens.model})` : ""}
                </span>
              ) : null}
            </div>
            {p.notStopped ? <div class="warn">its in-memory work was not stopped: it runs until it returns or the agent is evicted</div> : null}
            {p.error ? <div class="warn">{p.error}</div> : null}
            {p.detail ? <div class="muted">{p.detail}</div> : null}
            {p.partialText ? (
              <div>
                partial output ({bytes(p.partialText.bytes)}
                {p.partialText.truncated ? ", truncated" : ""}): <q>{p.partialText.preview}</q>
              </div>
            ) : null}
            {p.terminalMessage ? (
              <div>
                terminal message: <q>{p.terminalMessage.preview}</q>
              </div>
            ) : null}
            {p.snapshot && snap ? <JsonView value={snap.value} rawText={snap.rawText} size={p.snapshot.bytes} truncated={p.snapshot.truncated} /> : null}
            <div class="muted mono">
              {props.showAgent ? (
                <span>
                  agent{" "}
                  <a href={agentHref(e)}>
                    {e.agentClass} · {e.agentName}
                  </a>{" "}
                </span>
              ) : null}
              {props.showAgent && e.incidentId ? (
                <span>
                  incident <a href={detailHref("incidents", e.incidentId, e)}>{e.incidentId}</a>{" "}
                </span>
              ) : null}
              {e.opId ? <span>op {e.opId} </span> : null}
              {/* A chat turn's internal fiber is shown as its turn: its fiber id has no run of its own. */}
              {e.fiberId && !(p.chatTurn && e.requestId) ? (
                <span>
                  fiber <a href={detailHref("runs", e.fiberId, e)}>{e.fiberId}</a>{" "}
                </span>
              ) : null}
              {e.taskId && !p.chatTurn ? (
                <span>
                  task <a href={detailHref("runs", e.taskId, e)}>{e.taskId}</a>{" "}
                </span>
              ) : null}
              <RequestIds event={e} chatTurn={p.chatTurn} rootRequestId={p.rootRequestId} />
              {e.traceId ? (
                props.traceUrl ? (
                  <span>
                    trace{" "}
                    <a href={props.traceUrl.replace("{traceId}", encodeURIComponent(e.traceId))} rel="noopener noreferrer" target="_blank">
                      {e.traceId}
                    </a>
                  </span>
                ) : (
                  <span>trace {e.traceId}</span>
                )
              ) : null}
            </div>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * An event's request id, and the chat turn it belongs to where the event says so. A chat turn's run is keyed by its
 * user turn's request id (a recovery turn names it as rootRequestId: src/store/run-rows.ts), so only events of the
 * turn itself (chat.turn.*, the turn's fiber or Task) or naming its root link to a run page. Any other request id (a
 * recovery turn's model.usage, an op's request) has no run of its own: it links to search, which finds the run,
 * incident or session that id belongs to, never to a run page that cannot exist.
 */
function RequestIds(props: { event: EventRow; chatTurn: boolean; rootRequestId: string | null }) {
  const e = props.event;
  if (!e.requestId) return null;
  const ofTurn = props.chatTurn || e.type.startsWith("chat.turn.");
  const turn = ofTurn ? (props.rootRequestId ?? e.requestId) : e.type.startsWith("chat.recovery.") ? props.rootRequestId : null;
  return (
    <>
      {turn !== e.requestId ? (
        <span>
          request{" "}
          <a href={listHref("search", { q: e.requestId })} data-testid="event-request" title="search for this request id">
            {e.requestId}
          </a>{" "}
        </span>
      ) : null}
      {turn ? (
        <span>
          chat turn{" "}
          <a href={detailHref("runs", turn, e)} data-testid="event-turn">
            {turn}
          </a>{" "}
        </span>
      ) : null}
    </>
  );
}

/**
 * A detail page's timeline with its keyset pager: the page's events, then the link to the next page (older or later
 * events), which says when this page stopped short of `limit` because a timeline's reading is bounded per page. When
 * the timeline is read from the R2 history, it says what that read looked at and where a limit stopped it, so a short
 * timeline is never mistaken for a whole one; and how many of the newest events R2 did not hold yet (they come from
 * the hot store), so a lag is said, not hidden.
 */
export function PagedTimeline(props: {
  page: TimelinePage;
  path: string;
  query: Record<string, string | undefined>;
  dir: "older" | "later";
  traceUrl: string | null;
}) {
  const h = props.page.history;
  return (
    <>
      <Timeline events={props.page.items} traceUrl={props.traceUrl} />
      {h ? <TimelineSourcesNote sources={h} /> : null}
      <Pager
        path={props.path}
        query={props.query}
        next={props.page.next}
        hasCursor={Boolean(props.query.cursor)}
        timeline={{ dir: props.dir, shown: props.page.items.length, limit: pageLimit(props.query.limit) }}
      />
    </>
  );
}

/**
 * Where a timeline page's events came from: what the R2 history read looked at (and where a limit stopped it), and
 * how many of the newest events R2 did not hold yet and the hot store listed instead.
 */
export function TimelineSourcesNote(props: { sources: TimelineSources }) {
  const h = props.sources;
  const scan = h.scan;
  return (
    <p
      class="muted"
      data-testid="timeline-history"
      data-from-history={String(h.fromHistory)}
      data-from-hot={String(h.fromHot)}
      {...(scan ? historyReadAttrs({ events: Array(h.fromHistory), scan, from: h.from, to: h.to }) : {})}
    >
      {scan ? (
        <>
          This timeline is read from the R2 history, <HistoryReadSpan found={{ events: [], scan, from: h.from, to: h.to }} />.
        </>
      ) : null}
      {h.fromHot > 0
        ? ` ${h.fromHot === 1 ? "1 event is" : `${h.fromHot} events are`} not in the R2 history yet and come from the hot store: each batch reaches R2 just after D1, and a failed R2 write is retried.`
        : ""}
    </p>
  );
}
