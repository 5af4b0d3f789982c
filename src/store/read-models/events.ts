import { events } from "../schema";
import { names, selectList } from "../sql-names";
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
  traceId: string | null;
  spanId: string | null;
  payload: unknown;
};

const E = names(events);
const SELECT = selectList(events, [
  "id", "time", "type", "agentClass", "agentName", "fiberId", "incidentId",
  "requestId", "opId", "sessionName", "traceId", "spanId", "payload",
]);

function parsePayload(row: EventRow): EventRow {
  try {
    return { ...row, payload: JSON.parse(row.payload as string) };
  } catch {
    return row;
  }
}

/**
 * One page of the events whose `column` (a schema key) equals `value`, over
 * the index (`column`, time, id): at most limit + 1 rows read at any depth.
 */
export function eventsBy(
  db: D1Database,
  spec: { tag: string; column: "timelineId" | "fiberId" | "sessionName"; index: string; value: string; dir: "ASC" | "DESC" },
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
    where: [cond(`${E[spec.column]} = ?`, spec.value)],
    keyOf: (r) => [r.time, r.id],
    map: parsePayload,
  };
  return keysetPage(db, q, page);
}
