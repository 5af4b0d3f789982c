import type { HistoryRead, LookupKind } from "../../src/store/history/read";
import { SEARCH_KINDS, type SearchKind, type SearchMatch, type SearchResult } from "../../src/store/read-models";
import { ExportLinks } from "../components/export-links";
import { Time } from "../components/time";
import { Layout, type PageContext } from "../layout";
import { agentHref, detailHref, searchMatchHref } from "../links";

import { historyStopWords, searchMatchLabel, searchViaWords } from "../words";

const KIND_TITLE: Record<SearchKind, string> = { incident: "Incidents", run: "Runs", op: "Ambiguous ops", session: "Sessions", agent: "Agents" };

/**
 * Several matches, grouped by kind, or a plain "nothing matched" with what was searched. (Exactly one match
 * never renders: the route redirects to it.)
 */
export function SearchPage(props: { ctx: PageContext; result: SearchResult; history?: HistoryFound | null }) {
  const r = props.result;
  const groups = SEARCH_KINDS.map((k) => [k, r.matches.filter((m) => m.kind === k)] as const).filter(([, ms]) => ms.length > 0);
  return (
    <Layout ctx={props.ctx} title={`Search: ${r.query}`} active="">
      {r.matches.length === 0 ? (
        <section data-testid="search-none" data-query={r.query} data-trace-window={r.traceWindow === null ? undefined : String(r.traceWindow)}>
          <p class="error-message">Nothing matches “{r.query}”.</p>
          <p>
            Searched incident ids, run ids (fiber ids, Tasks run ids, chat turns' request ids), ambiguous op ids, session names and agent names (also as{" "}
            <code>Class/name</code>), and the request, task, op and fiber ids events carry
            {r.traceWindow ? `; as a trace id, among the newest ${r.traceWindow} events only` : ""}. Ids are matched exactly
            {r.query.length >= 6 ? ", or by their beginning" : " (from 6 characters, by their beginning too)"}. An id may also have aged out of retention.
          </p>
          {props.history ? <HistoryFinds h={props.history} /> : null}
        </section>
      ) : (
        <>
          <ExportLinks list="search" query={{ q: r.query }} />
          <p data-testid="search-summary">
            {r.matches.length}
            {r.truncated ? "+" : ""} {r.prefix ? `ids start with “${r.query}”` : `things match “${r.query}”`}: pick one.
          </p>
          {groups.map(([kind, ms]) => (
            <section data-testid={`search-${kind}`} data-count={String(ms.length)}>
              <h2>
                {KIND_TITLE[kind]} ({ms.length})
              </h2>
              <ul class="search-results">
                {ms.map((m) => (
                  <MatchItem m={m} />
                ))}
              </ul>
            </section>
          ))}
        </>
      )}
    </Layout>
  );
}

/** "· agent <class · name>", linking the agent a match or an older event belongs to. */
function OwnerNote(props: { owner: { agentClass: string; agentName: string } }) {
  return (
    <span class="muted">
      · agent{" "}
      <a href={agentHref(props.owner)}>
        {props.owner.agentClass} · {props.owner.agentName}
      </a>
    </span>
  );
}

function MatchItem(props: { m: SearchMatch }) {
  const m = props.m;
  return (
    <li data-kind={m.kind} data-via-field={m.via.field} data-via-by={m.via.by}>
      <a class="mono" href={searchMatchHref(m)}>
        {m.kind === "agent" ? `${m.agentClass}/${m.agentName}` : m.id}
      </a>{" "}
      <span>{searchMatchLabel(m)}</span> {m.kind !== "agent" ? <OwnerNote owner={m} /> : null} <span class="muted">· matched by {searchViaWords(m.via)}</span>
    </li>
  );
}

/** What the R2 history held for an id the hot store did not have. */
export type HistoryFound = HistoryRead & { kind: LookupKind; id: string };

/** History events listed at most (a trace can have hundreds; JSON has them all). */
const SHOWN = 50;

/** The id fields an event can carry the query in, as the page names them. */
const ID_FIELDS = [
  ["traceId", "trace id"],
  ["requestId", "request id"],
  ["taskId", "task id"],
  ["opId", "op id"],
  ["fiberId", "fiber id"],
] as const;

/**
 * The history's answer for an id the hot store does not hold: the events carrying it, each with its agent and the
 * page that reads its older timeline, and how far the read looked (a bounded read can stop short: it says where).
 */
function HistoryFinds(props: { h: HistoryFound }) {
  const h = props.h;
  const looked =
    h.scan.coveredFrom === null ? (
      "nothing"
    ) : (
      <>
        from <Time t={h.scan.coveredFrom} /> to <Time t={h.scan.coveredTo} />
      </>
    );
  return (
    <section
      data-testid="search-history"
      data-count={String(h.events.length)}
      data-complete={String(h.scan.complete)}
      data-covered-from={h.scan.coveredFrom === null ? undefined : String(h.scan.coveredFrom)}
      data-covered-to={h.scan.coveredTo === null ? undefined : String(h.scan.coveredTo)}
    >
      <h2>In the history ({h.events.length})</h2>
      <p>
        {h.events.length ? "Older events carry it" : "Not in the history either"}: looked {looked} ({h.scan.hours} hours, {h.scan.objectsFetched} objects read)
        {h.scan.stop ? `; ${historyStopWords(h.scan.stop)}, so older events were not looked at` : ""}.
      </p>
      {h.events.length ? (
        <ul class="search-results">
          {h.events.slice(0, SHOWN).map((e) => {
            const run = e.fiberId ?? e.taskId ?? e.requestId;
            const field = ID_FIELDS.find(([k]) => e[k] === h.id);
            return (
              <li data-event-id={e.id} data-type={e.type} data-via-field={field?.[0]}>
                <Time t={e.time} /> <code>{e.type}</code> <OwnerNote owner={e} />
                {run ? (
                  <>
                    {" "}
                    · <a href={detailHref("runs", run, e)}>run {run}</a>
                  </>
                ) : null}
                {e.incidentId ? (
                  <>
                    {" "}
                    · <a href={detailHref("incidents", e.incidentId)}>incident</a>
                  </>
                ) : null}
                {field ? <span class="muted"> · as its {field[1]}</span> : null}
              </li>
            );
          })}
        </ul>
      ) : null}
      {h.events.length > SHOWN ? (
        <p data-testid="search-history-more">
          The first {SHOWN} of {h.events.length} are shown.
        </p>
      ) : null}
    </section>
  );
}
