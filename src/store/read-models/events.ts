import { z } from "zod";
import { EVENT_TYPES, type EventType } from "../../telemetry/payloads";
import { events } from "../schema";
import { names, selectList } from "../sql-names";
import { flag, instant, parseFilters, sinceBeforeUntil, text } from "./filters";
import type { AgentRef } from "./owner";
import { type ListQuery, type Page, type PageOptions, cond, encodeCursor, keysetPage, pageLimit } from "./paging";

/** Stored events as the console shows them: the envelope, correlation ids and the parsed payload. */

export type EventRow = {
  id: string;
  time: number;
  type: string;
  agentClass: string;
  agentName: string;
  fiberId: string | null;
  incidentId: string | null;
  requestId: string | null;
  opId: string | null;
  sessionName: string | null;
  taskId: string | null;
  traceId: string | null;
  spanId: string | null;
  payload: unknown;
};

const E = names(events);
const SELECT = selectList(events, [
  "id", "time", "type", "agentClass", "agentName", "fiberId", "incidentId",
  "requestId", "opId", "sessionName", "taskId", "traceId", "spanId", "payload",
]);

function parsePayload(row: EventRow): EventRow {
  try {
    return { ...row, payload: JSON.parse(row.payload as string) };
  } catch {
    return row;
  }
}

/**
 * One page of the events of one agent whose `column` (a schema key) equals
 * `value`, over the index (`column`, agent class, agent name, time, id): at
 * most limit + 1 rows read at any depth. Scoped to the agent because ids are
 * only unique per agent: another producer's events under the same id are not
 * part of this agent's timeline.
 */
export function eventsBy(
  db: D1Database,
  spec: { tag: string; column: "timelineId" | "fiberId" | "sessionName" | "taskId" | "requestId"; index: string; value: string; owner: AgentRef; dir: "ASC" | "DESC" },
  page: PageOptions = {},
): Promise<Page<EventRow>> {
  const q: ListQuery<EventRow> = {
    tag: spec.tag,
    table: E.$table,
    index: spec.index,
    select: SELECT,
    order: [E.time, E.id],
    types: ["number", "string"],
    dir: spec.dir,
    where: [cond(`${E[spec.column]} = ? AND ${E.agentClass} = ? AND ${E.agentName} = ?`, spec.value, spec.owner.agentClass, spec.owner.agentName)],
    keyOf: (r) => [r.time, r.id],
    map: parsePayload,
  };
  return keysetPage(db, q, page);
}

/** Event types one events list may name at most. */
export const MAX_TYPES = 10;

/**
 * The events list's filters: one or more event types (a comma list from a URL), a time window on the event's own
 * time (since / until, inclusive), an agent, and `withIncident` (only events that carried an incident id: what
 * recovery re-spent, for model.usage). It lists exactly the events the overview's rollup figures count.
 */
export const eventListFilters = z
  .object({
    type: z.preprocess(
      (v) => (v === undefined || v === null || v === "" ? undefined : typeof v === "string" ? v.split(",").map((s) => s.trim()).filter(Boolean) : v),
      z
        .array(z.enum(EVENT_TYPES as [EventType, ...EventType[]], { error: (iss) => `type must be event types such as chat.recovery.exhausted (got ${JSON.stringify(iss.input)})` }), { error: (iss) => (iss.input === undefined ? "type is required: name one or more event types, e.g. type=chat.recovery.exhausted" : "type must be a list of event types") })
        .min(1, { error: "type must name at least one event type" })
        .max(MAX_TYPES, { error: `type may name at most ${MAX_TYPES} event types` }),
    ),
    agentClass: text("agentClass"),
    agentName: text("agentName"),
    withIncident: flag("withIncident"),
    since: instant("since"),
    until: instant("until"),
  })
  .superRefine(sinceBeforeUntil)
  .superRefine((f, ctx) => {
    if ((f.agentName === undefined) !== (f.agentClass === undefined)) ctx.addIssue({ code: "custom", message: "agentClass and agentName go together (an agent is its class and name)" });
    if (f.withIncident !== undefined && f.type.length > 1 && f.agentClass === undefined) ctx.addIssue({ code: "custom", message: "withIncident works with one event type at a time (or with an agent)" });
  });
export type EventListInput = { [K in keyof z.input<typeof eventListFilters>]?: unknown };

/**
 * Events of the given types, newest first (time DESC, id DESC), one keyset page at a time. One type is one range
 * of events_type_time (limit + 1 rows read; `withIncident` makes it a bounded scan). Several types are one range
 * each, merged: at most types × (limit + 1) rows. With an agent, one range of events_agent_time, the types tested
 * per row (a bounded scan, SCAN_BUDGET).
 */
export async function listEvents(db: D1Database, filters: EventListInput, page: PageOptions = {}): Promise<Page<EventRow>> {
  const f = parseFilters(eventListFilters, filters);
  const base = {
    tag: "events",
    table: E.$table,
    select: SELECT,
    order: [E.time, E.id],
    types: ["number", "string"] as ("number" | "string")[],
    dir: "DESC" as const,
    range: { min: f.since, max: f.until },
    keyOf: (r: EventRow) => [r.time, r.id],
    map: parsePayload,
  };
  const withIncident = f.withIncident === undefined ? [] : [cond(f.withIncident ? `${E.incidentId} IS NOT NULL` : `${E.incidentId} IS NULL`)];
  if (f.agentClass !== undefined) {
    const owner = [cond(`${E.agentClass} = ? AND ${E.agentName} = ?`, f.agentClass, f.agentName)];
    const types = cond(`${E.type} IN (${f.type.map(() => "?").join(", ")})`, ...f.type);
    return keysetPage<EventRow>(db, { ...base, index: "events_agent_time", where: owner, residual: [types, ...withIncident] }, page);
  }
  if (f.type.length === 1) return keysetPage<EventRow>(db, { ...base, index: "events_type_time", where: [cond(`${E.type} = ?`, f.type[0])], residual: withIncident }, page);
  // Several types: one keyset range each, merged by (time, id). Any row a range did not return is older than the
  // limit + 1 rows it did, so the newest `limit` of the union are all here.
  const pages = await Promise.all(f.type.map((t) => keysetPage<EventRow>(db, { ...base, index: "events_type_time", where: [cond(`${E.type} = ?`, t)] }, page)));
  const limit = pageLimit(page.limit);
  const all = pages.flatMap((p) => p.items).sort((a, b) => b.time - a.time || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0));
  const more = all.length > limit || pages.some((p) => p.next !== null);
  const items = all.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next: more && last ? encodeCursor("events", [last.time, last.id]) : null, rowsRead: pages.reduce((n, p) => n + p.rowsRead, 0) };
}
