/**
 * Agents of a Worker the console cannot act on. One console may tail several Workers, and two of them may host a
 * class of the same name with same-named agents. The SDK's messages name only the class and the agent; the trace
 * item adds the Worker (`scriptName`, null in local dev) and the Durable Object id. The console's own binding of a
 * class is the oracle of "the Worker I act on": an id that is not its name's top-level id there, nor a sub-agent id
 * of a parent the console knows, belongs to some other Durable Object (worker/ingest/facet-parents.ts decides).
 *
 * Such an agent is keyed apart by its class: `ChatAgent@other-worker` when the item names its Worker, and
 * `ChatAgent@?1a2b3c4d5e6f` (the first OBJECT_MARK_CHARS of its object id) when it does not. The key lives in the
 * class, not the name, so every table keyed by (class, name) keeps it apart as it is, and no binding is ever looked
 * up under it: the admin client refuses it (`other_worker`) without calling anything.
 */

/** Between an agent's class and the Worker it runs in, in the class key of an agent the console cannot act on. */
export const WORKER_SEPARATOR = "@";
/** After WORKER_SEPARATOR when the trace item named no Worker (local dev): the object id's first characters follow. */
export const UNNAMED_WORKER_MARK = "?";
/** How much of the object id stands in for an unnamed Worker: one console agent per Durable Object. */
export const OBJECT_MARK_CHARS = 12;

/** A class key that says which Worker, or which object, an agent is in. */
export function workerClassKey(agentClass: string, worker: string | null, objectId: string): string {
  return `${agentClass}${WORKER_SEPARATOR}${worker || `${UNNAMED_WORKER_MARK}${objectId.slice(0, OBJECT_MARK_CHARS)}`}`;
}

/**
 * Reads a class key back: the class, and the Worker (null when the item named none, then the object id's start),
 * or null for a plain class (the Worker the console acts on, or one it cannot tell).
 */
export function parseWorkerClassKey(key: string): { agentClass: string; worker: string | null; objectPrefix: string | null } | null {
  const m = /^([A-Za-z_$][\w$]{0,199})@(.+)$/.exec(key);
  if (!m) return null;
  const rest = m[2]!;
  return rest.startsWith(UNNAMED_WORKER_MARK)
    ? { agentClass: m[1]!, worker: null, objectPrefix: rest.slice(UNNAMED_WORKER_MARK.length) || null }
    : { agentClass: m[1]!, worker: rest, objectPrefix: null };
}
