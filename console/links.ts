/**
 * Links to detail pages. Ids are unique per agent, not across agents (projections are keyed by the reporting
 * agent), so every link names its agent: a detail page never has to guess which agent's row is meant.
 */
export type Owner = { agentClass: string; agentName: string };

/** `/runs/:id`, `/incidents/:id`, `/sessions/:name` (and sub-paths), with the owning agent in the query. */
export function detailHref(kind: "runs" | "incidents" | "sessions", id: string, owner?: Owner | null, suffix = ""): string {
  const path = `/${kind}/${encodeURIComponent(id)}${suffix}`;
  if (!owner) return path;
  return `${path}?${new URLSearchParams({ agentClass: owner.agentClass, agentName: owner.agentName })}`;
}

/** An agent's page. */
export function agentHref(owner: Owner): string {
  return `/agents/${encodeURIComponent(owner.agentClass)}/${encodeURIComponent(owner.agentName)}`;
}

/** What a search match links to (src/store/read-models/search.ts). */
export type SearchTarget = Owner & { kind: "incident" | "run" | "op" | "session" | "agent"; id: string; sessionName?: string | null };

/**
 * The page of a search match: incidents, runs and sessions at their detail pages (with their agent); an
 * ambiguous op at its session's page (where its ledger events are), else its agent's; an agent at its page.
 */
export function searchMatchHref(m: SearchTarget): string {
  switch (m.kind) {
    case "incident":
      return detailHref("incidents", m.id, m);
    case "run":
      return detailHref("runs", m.id, m);
    case "session":
      return detailHref("sessions", m.id, m);
    case "op":
      return m.sessionName ? detailHref("sessions", m.sessionName, m) : agentHref(m);
    case "agent":
      return agentHref(m);
  }
}
