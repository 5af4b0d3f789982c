import type { Store } from "../partitions";
import { agents, tailObjects } from "../schema";
import { names } from "../sql-names";

const A = names(agents);
const O = names(tailObjects);

/**
 * How many agents of each class (per store partition) the tail tries as a facet's parent: the newest by last event.
 * It bounds the work per new facet (one SHA-256 and one idFromName per candidate) and the rows read.
 */
export const PARENT_CANDIDATES_PER_CLASS = 200;

/**
 * The newest agents of each class, as candidate parents of a facet: `agents_class_listed` read backwards, at most
 * `perClass` rows per class and partition. Key names, as the registry keeps them (a sub-agent's holds its ancestry).
 */
export async function newestAgentsOf(
  store: Store,
  classes: readonly string[],
  perClass = PARENT_CANDIDATES_PER_CLASS,
): Promise<{ agentClass: string; agentName: string }[]> {
  if (!classes.length) return [];
  const sql = `SELECT ${A.agentClass} AS agentClass, ${A.agentName} AS agentName FROM ${A.$table} INDEXED BY agents_class_listed
    WHERE ${A.agentClass} = ? ORDER BY ${A.listedAt} DESC LIMIT ?`;
  const pages = await Promise.all(
    store.parts.map((db) => db.batch<{ agentClass: string; agentName: string }>(classes.map((c) => db.prepare(sql).bind(c, perClass)))),
  );
  return pages.flat().flatMap((r) => r.results);
}

/** What the tail recorded of an object's parent (worker/ingest/facet-parents.ts). */
export type StoredFacetParent = {
  worker: string;
  objectId: string;
  agentClass: string;
  agentName: string;
  parentPath: string | null;
  parentUnknown: string | null;
  seenAt: number;
};

/** The rows of `tail_objects` for these objects (home database), by primary key. */
export async function storedFacetParents(home: D1Database, objects: readonly { worker: string; objectId: string }[]): Promise<StoredFacetParent[]> {
  if (!objects.length) return [];
  const { results } = await home
    .prepare(
      `SELECT o.${O.worker} AS worker, o.${O.objectId} AS objectId, o.${O.agentClass} AS agentClass, o.${O.agentName} AS agentName,
        o.${O.parentPath} AS parentPath, o.${O.parentUnknown} AS parentUnknown, o.${O.seenAt} AS seenAt
      FROM json_each(?1) j JOIN ${O.$table} o ON o.${O.worker} = j.value ->> '$.worker' AND o.${O.objectId} = j.value ->> '$.objectId'`,
    )
    .bind(JSON.stringify(objects.map((o) => ({ worker: o.worker, objectId: o.objectId }))))
    .all<StoredFacetParent>();
  return results;
}

/** A facet named like this agent whose parent the console could not match: why, and when it last tried. */
export type UnknownParent = { objectId: string; why: string; checkedAt: number };

/** How many facets of one name the agent page lists as of unknown parent. */
export const UNKNOWN_PARENTS_SHOWN = 5;

/**
 * Facets keyed by this agent's own name because the console found no parent for them (its page says so): read by
 * `tail_objects_agent`, at most UNKNOWN_PARENTS_SHOWN rows.
 */
export async function unknownParentsOf(home: D1Database, agentClass: string, agentName: string): Promise<UnknownParent[]> {
  const { results } = await home
    .prepare(
      `SELECT ${O.objectId} AS objectId, ${O.parentUnknown} AS why, ${O.seenAt} AS checkedAt FROM ${O.$table}
      WHERE ${O.agentClass} = ? AND ${O.agentName} = ? AND ${O.parentUnknown} IS NOT NULL LIMIT ${UNKNOWN_PARENTS_SHOWN}`,
    )
    .bind(agentClass, agentName)
    .all<UnknownParent>();
  return results;
}

/**
 * The objects behind an agent keyed apart by its Worker (`Class@worker`, src/telemetry/workers.ts): of this class and
 * name, in that Worker, or (the item named none) whose id starts with `objectPrefix`. Read by `tail_objects_agent`,
 * at most UNKNOWN_PARENTS_SHOWN rows; `why` is what the parent search tried, when it ran.
 */
export async function otherWorkerObjectsOf(
  home: D1Database,
  agentClass: string,
  agentName: string,
  where: { worker: string | null; objectPrefix: string | null },
): Promise<UnknownParent[]> {
  const { results } = await home
    .prepare(
      `SELECT ${O.objectId} AS objectId, coalesce(${O.parentUnknown}, '') AS why, ${O.seenAt} AS checkedAt FROM ${O.$table}
      WHERE ${O.agentClass} = ?1 AND ${O.agentName} = ?2 AND ${O.worker} = ?3 AND substr(${O.objectId}, 1, length(?4)) = ?4
      ORDER BY ${O.seenAt} DESC LIMIT ${UNKNOWN_PARENTS_SHOWN}`,
    )
    .bind(agentClass, agentName, where.worker ?? "", where.worker ? "" : (where.objectPrefix ?? ""))
    .all<UnknownParent>();
  return results;
}
