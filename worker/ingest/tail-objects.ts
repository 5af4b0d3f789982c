import type { SilentWake, TailObject } from "@agent-oncall/telemetry/tail";
import { silentWakes, tailObjects } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

const O = names(tailObjects);
const W = names(silentWakes);

/**
 * Renames only when the object names another agent, or its parent finding changed (facet-parents.ts): seeing a known
 * object again writes no row.
 */
const OBJECT_SQL = `INSERT INTO ${O.$table} (${O.worker}, ${O.objectId}, ${O.agentClass}, ${O.agentName}, ${O.seenAt}, ${O.parentPath}, ${O.parentUnknown})
SELECT j ->> '$.worker', j ->> '$.objectId', j ->> '$.agentClass', j ->> '$.agentName', ?2, j ->> '$.parentPath', j ->> '$.parentUnknown'
FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT (${O.worker}, ${O.objectId}) DO UPDATE SET ${O.agentClass} = excluded.${O.agentClass}, ${O.agentName} = excluded.${O.agentName}, ${O.seenAt} = excluded.${O.seenAt},
  ${O.parentPath} = excluded.${O.parentPath}, ${O.parentUnknown} = excluded.${O.parentUnknown}
WHERE ${O.agentClass} IS NOT excluded.${O.agentClass} OR ${O.agentName} IS NOT excluded.${O.agentName}
  OR ${O.parentPath} IS NOT excluded.${O.parentPath} OR ${O.parentUnknown} IS NOT excluded.${O.parentUnknown}`;

/** An object as the statement records it: the agent its messages named, and what the tail found of its parent. */
export type RecordedObject = TailObject & { parentPath: string | null; parentUnknown: string | null };

const recordKey = (o: RecordedObject) => `${o.worker}\0${o.objectId}\0${o.agentClass}\0${o.agentName}\0${o.parentPath ?? ""}\0${o.parentUnknown ?? ""}`;

/** One row per alarm invocation, keyed by its start: a redelivered trace item counts once. */
const WAKE_SQL = `INSERT INTO ${W.$table} (${W.worker}, ${W.objectId}, ${W.at}, ${W.agentClass})
SELECT j ->> '$.worker', j ->> '$.objectId', j ->> '$.at', j ->> '$.agentClass' FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT DO NOTHING`;

/**
 * Objects already recorded by this isolate under the name they published: skipped, so a busy agent costs no
 * statement per tail invocation. Cleared when large (a cleared entry costs one statement that writes nothing).
 */
const recorded = new Set<string>();
const RECORDED_MAX = 10_000;

/**
 * The statements that record what a tail invocation said about Durable Objects: which agent each object is (its
 * SDK messages name it, with its parent finding), and its alarm invocations that published nothing (what
 * keepAlive() heartbeats look like). Each null when there is nothing new.
 */
export function tailObjectStatements(
  db: D1Database,
  objects: readonly RecordedObject[],
  wakes: readonly SilentWake[],
  now: number,
): { objects: D1PreparedStatement | null; wakes: D1PreparedStatement | null } {
  const fresh = objects.filter((o) => !recorded.has(recordKey(o)));
  return {
    objects: fresh.length ? db.prepare(OBJECT_SQL).bind(JSON.stringify(fresh), now) : null,
    wakes: wakes.length ? db.prepare(WAKE_SQL).bind(JSON.stringify(wakes)) : null,
  };
}

/** Remembers objects once their statement ran, so later invocations skip them. */
export function markRecorded(objects: readonly RecordedObject[]): void {
  if (recorded.size + objects.length > RECORDED_MAX) recorded.clear();
  for (const o of objects) recorded.add(recordKey(o));
}
