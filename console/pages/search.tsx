import { SEARCH_KINDS, type SearchKind, type SearchMatch, type SearchResult } from "../../src/store/read-models";
import { ExportLinks } from "../components/export-links";
import { Layout, type PageContext } from "../layout";
import { agentHref, searchMatchHref } from "../links";

import { searchMatchLabel, searchViaWords } from "../words";

const KIND_TITLE: Record<SearchKind, string> = { incident: "Incidents", run: "Runs", op: "Ambiguous ops", session: "Sessions", agent: "Agents" };

/**
 * Several matches, grouped by kind, or a plain "nothing matched" with what was searched. (Exactly one match
 * never renders: the route redirects to it.)
 */
export function SearchPage(props: { ctx: PageContext; result: SearchResult }) {
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

function MatchItem(props: { m: SearchMatch }) {
  const m = props.m;
  return (
    <li data-kind={m.kind} data-via-field={m.via.field} data-via-by={m.via.by}>
      <a class="mono" href={searchMatchHref(m)}>
        {m.kind === "agent" ? `${m.agentClass}/${m.agentName}` : m.id}
      </a>{" "}
      <span>{searchMatchLabel(m)}</span>{" "}
      {m.kind !== "agent" ? (
        <span class="muted">
          · agent{" "}
          <a href={agentHref(m)}>
            {m.agentClass} · {m.agentName}
          </a>
        </span>
      ) : null}{" "}
      <span class="muted">· matched by {searchViaWords(m.via)}</span>
    </li>
  );
}
