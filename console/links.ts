/**
 * Every console URL is built here: pages, the worker (alerts' webhook and Slack links, redirects) and the CLI use
 * these functions, and scripts/check-rooms.ts refuses a console path literal anywhere else. The store returns ids;
 * this module turns them into links.
 *
 * Ids are unique per agent, not across agents (projections are keyed by the reporting agent), so every detail link
 * names its agent: a detail page never has to guess which agent's row is meant.
 */
export type Owner = { agentClass: string; agentName: string };

/** The console's list pages (and the overview), by name. Filters go in the query (listHref). */
export const LISTS = {
  overview: "/",
  agents: "/agents",
  runs: "/runs",
  incidents: "/incidents",
  stuck: "/stuck",
  awake: "/awake",
  sessions: "/sessions",
  ops: "/ops",
  events: "/events",
  alerts: "/alerts",
  audit: "/audit",
  bulk: "/bulk",
  search: "/search",
  backups: "/backups",
  deploys: "/deploys",
  views: "/views",
  deadLetters: "/dead-letters",
} as const;
export type ListName = keyof typeof LISTS;
export type ListPath = (typeof LISTS)[ListName];

/**
 * The lists whose filters can be saved as a view (and whose last view is remembered): the filtered lists, not the
 * overview, search (a query, not filters), bulk (a selection to act on) or the views list itself.
 */
export const VIEW_LISTS = [
  "incidents",
  "runs",
  "sessions",
  "ops",
  "events",
  "backups",
  "audit",
  "agents",
  "stuck",
  "alerts",
] as const satisfies readonly ListName[];
export type ViewList = (typeof VIEW_LISTS)[number];

/** The list a path is, when it is one views apply to (`/incidents` → "incidents"); null otherwise. */
export function viewListAt(path: string): ViewList | null {
  return VIEW_LISTS.find((l) => LISTS[l] === path) ?? null;
}

/**
 * `view=none`: a list shown plain, without restoring its last view (the filter form's Clear and the view marker's
 * clear lead there; a bare nav link still restores).
 */
export const NO_VIEW = "none";

/** A list with no filters and no restored view (`/incidents?view=none`); any other path as it is. */
export function plainHref(path: string): string {
  return viewListAt(path) ? href(path, { view: NO_VIEW }) : path;
}

/** A saved view's permanent address (`/views/:id`), which opens its list with its filters. */
export function viewHref(viewId: string): string {
  return `${LISTS.views}/${encodeURIComponent(viewId)}`;
}

/** Deleting a saved view (POST). */
export function viewDeleteHref(viewId: string): string {
  return `${viewHref(viewId)}/delete`;
}

/** The nav's views menu items (an htmx partial, loaded when the menu is first opened). */
export const VIEWS_MENU_HREF = "/partials/views";

/** Forgetting the last view of a list (POST), so the list opens unfiltered again. */
export const VIEW_FORGET_HREF = `${LISTS.views}/forget`;

/**
 * A list opened through a saved view: the list's path, the view's query, and `view=<id>` (which marks the page and
 * records it as the identity's last view of that list).
 */
export function viewTargetHref(view: { viewId: string; list: ViewList; query: string }): string {
  const q = new URLSearchParams(view.query);
  q.set("view", view.viewId);
  return `${LISTS[view.list]}?${q.toString()}`;
}

/** A query's values as filters carry them: unset, empty and null values are left out. */
export type Query = Record<string, string | number | boolean | null | undefined>;

/** `path` with `query` (unset, empty and null values left out), e.g. a pager's next page of the path it is on. */
export function href(path: string, query: Query = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A list page with its filters, e.g. `listHref("runs", { outcome: "running" })`. */
export function listHref(list: ListName, query: Query = {}): string {
  return href(LISTS[list], query);
}

/** `/runs/:id`, `/incidents/:id`, `/sessions/:name` (and sub-paths), with the owning agent in the query. */
export function detailHref(kind: "runs" | "incidents" | "sessions", id: string, owner?: Owner | null, suffix = "", query: Query = {}): string {
  const path = `/${kind}/${encodeURIComponent(id)}${suffix}`;
  return href(path, owner ? { agentClass: owner.agentClass, agentName: owner.agentName, ...query } : query);
}

/** A run's page (`/runs/:id`), with its agent. */
export const runHref = (id: string, owner?: Owner | null, query: Query = {}) => detailHref("runs", id, owner, "", query);
/** An incident's page (`/incidents/:id`), with its agent. */
export const incidentHref = (id: string, owner?: Owner | null, query: Query = {}) => detailHref("incidents", id, owner, "", query);
/** A session's page (`/sessions/:name`), with its agent. */
export const sessionHref = (name: string, owner?: Owner | null, query: Query = {}) => detailHref("sessions", name, owner, "", query);

/** The parts of an agent's page: its live partial, its history partial, one of its runs as the agent records it. */
export type AgentPart = "" | "/live" | "/history" | "/awake" | "/pause" | `/runs/${string}`;

/** An agent's page (or a part of it), with an optional `#fragment` (e.g. "admin-actions"). */
export function agentHref(owner: Owner, part: AgentPart = "", fragment?: string, query: Query = {}): string {
  const path = `/agents/${encodeURIComponent(owner.agentClass)}/${encodeURIComponent(owner.agentName)}${part}`;
  return `${href(path, query)}${fragment ? `#${fragment}` : ""}`;
}

/** A run of an agent as the agent itself records it (`/agents/:class/:name/runs/:runId`). */
export function agentRunHref(owner: Owner, runId: string): string {
  return agentHref(owner, `/runs/${encodeURIComponent(runId)}`);
}

/** A bulk batch's page, or its live progress partial. */
export function batchHref(batchId: string, part: "" | "/progress" = ""): string {
  return `/bulk/batches/${encodeURIComponent(batchId)}${part}`;
}

/** The query parameters of a page that are not its filters: where it is in the list, and how much it shows. */
const PAGE_PARAMS = new Set(["cursor", "limit"]);

/**
 * A list's download (`/export/:list?format=…`) with the page's filters: the same query, without the page's own
 * place in the list (a download starts at the top). `list` is the list's name, as in LISTS.
 */
export function exportHref(list: ListName, format: "csv" | "json", query: Query = {}): string {
  const filters = Object.fromEntries(Object.entries(query).filter(([k]) => !PAGE_PARAMS.has(k) && k !== "format"));
  return href(`/export/${encodeURIComponent(list)}`, { ...filters, format });
}

/**
 * Bulk actions on the agents an incident's filter selects (`/bulk?…`): its reason (open incidents only when the
 * incident is open) and its agent class, so the preview lists the agents hit by the same failure.
 */
export function bulkForIncidentHref(i: { agentClass: string; reason: string | null; open: boolean }): string {
  // Without a reason to match, the agents of its class with open incidents.
  if (!i.reason) return listHref("bulk", { agentClass: i.agentClass, status: i.open ? "open_incidents" : undefined });
  return listHref("bulk", { agentClass: i.agentClass, incidentReason: i.reason, openOnly: i.open ? "true" : undefined });
}

/** An admin action's endpoint (`/actions/:action`), which the forms post to. */
export function actionHref(action: string): string {
  return `/actions/${encodeURIComponent(action)}`;
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
      return incidentHref(m.id, m);
    case "run":
      return runHref(m.id, m);
    case "session":
      return sessionHref(m.id, m);
    case "op":
      return m.sessionName ? sessionHref(m.sessionName, m) : agentHref(m);
    case "agent":
      return agentHref(m);
  }
}

/** What a stuck finding is about (src/store/read-models/stuck.ts StuckEntry). */
export type StuckSubject = Owner & { subjectKind: "run" | "incident" | "agent" | "session"; subjectId: string };

/** The page of a stuck finding's subject: its run, incident or session page (with its agent), or the agent's page. */
export function stuckSubjectHref(s: StuckSubject): string {
  switch (s.subjectKind) {
    case "run":
      return runHref(s.subjectId, s);
    case "incident":
      return incidentHref(s.subjectId, s);
    case "session":
      return sessionHref(s.subjectId, s);
    case "agent":
      return agentHref(s);
  }
}
