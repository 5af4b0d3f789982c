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

const SELECT = `id, time, type, agent_class AS agentClass, agent_name AS agentName, fiber_id AS fiberId, incident_id AS incidentId,
  request_id AS requestId, op_id AS opId, session_name AS sessionName, trace_id AS traceId, span_id AS spanId, payload`;

function parsePayload(row: EventRow): EventRow {
  try {
    return { ...row, payload: JSON.parse(row.payload as string) };
  } catch {
    return row;
  }
}

/**
 * One page of the events whose `column` equals `value`, over the index
 * (`column`, time, id): at most limit + 1 rows read at any depth.
 */
export function eventsBy(
  db: D1Database,
  spec: { tag: string; column: "timeline_id" | "fiber_id" | "session_name"; index: string; value: string; dir: "ASC" | "DESC" },
  page: PageOptions = {},
): Promise<Page<EventRow>> {
  const q: ListQuery<EventRow> = {
    tag: spec.tag,
    table: "events",
    index: spec.index,
    select: SELECT,
    order: ["time", "id"],
    types: ["number", "string"],
    dir: spec.dir,
    where: [cond(`${spec.column} = ?`, spec.value)],
    keyOf: (r) => [r.time, r.id],
    map: parsePayload,
  };
  return keysetPage(db, q, page);
}
