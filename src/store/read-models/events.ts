import { events } from "../schema";
import { names, selectList } from "../sql-names";
import type { AgentRef } from "./owner";
import { type ListQuery, type Page, type PageOptions, cond, keysetPage } from "./paging";

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
