import type { SilentWake, TailObject } from "@agent-oncall/telemetry/tail";
import { silentWakes, tailObjects } from "../../src/store/schema";
import { names } from "../../src/store/sql-names";

const O = names(tailObjects);
const W = names(silentWakes);

/** Renames only when the object names another agent: seeing a known object again writes no row. */
const OBJECT_SQL = `INSERT INTO ${O.$table} (${O.worker}, ${O.objectId}, ${O.agentClass}, ${O.agentName}, ${O.seenAt})
SELECT j ->> '$.worker', j ->> '$.objectId', j ->> '$.agentClass', j ->> '$.agentName', ?2 FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT (${O.worker}, ${O.objectId}) DO UPDATE SET ${O.agentClass} = excluded.${O.agentClass}, ${O.agentName} = excluded.${O.agentName}, ${O.seenAt} = excluded.${O.seenAt}
WHERE ${O.agentClass} IS NOT excluded.${O.agentClass} OR ${O.agentName} IS NOT excluded.${O.agentName}`;

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
 * SDK messages name it), and its alarm invocations that published nothing (what keepAlive() heartbeats look like).
 * Empty when there is nothing new.
 */
export function tailObjectStatements(db: D1Database, objects: readonly TailObject[], wakes: readonly SilentWake[], now: number): D1PreparedStatement[] {
  const fresh = objects.filter((o) => !recorded.has(`${o.worker}\0${o.objectId}\0${o.agentClass}\0${o.agentName}`));
  const out: D1PreparedStatement[] = [];
  if (fresh.length) out.push(db.prepare(OBJECT_SQL).bind(JSON.stringify(fresh), now));
  if (wakes.length) out.push(db.prepare(WAKE_SQL).bind(JSON.stringify(wakes)));
  return out;
}

/** Remembers objects once their statement ran, so later invocations skip them. */
export function markRecorded(objects: readonly TailObject[]): void {
  if (recorded.size + objects.length > RECORDED_MAX) recorded.clear();
  for (const o of objects) recorded.add(`${o.worker}\0${o.objectId}\0${o.agentClass}\0${o.agentName}`);
}
