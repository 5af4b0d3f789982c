/**
 * Links to detail pages. Ids are unique per agent, not across agents (projections are keyed by the reporting
 * agent), so every link names its agent: a detail page never has to guess which agent's row is meant.
 */
export type Owner = { agentClass: string; agentName: string };

/** `/fibers/:id`, `/incidents/:id`, `/sessions/:name` (and sub-paths), with the owning agent in the query. */
export function detailHref(kind: "fibers" | "incidents" | "sessions", id: string, owner?: Owner | null, suffix = ""): string {
  const path = `/${kind}/${encodeURIComponent(id)}${suffix}`;
  if (!owner) return path;
  return `${path}?${new URLSearchParams({ agentClass: owner.agentClass, agentName: owner.agentName })}`;
}
