import { parseAgentKeyName, workerClassKey } from "@agent-oncall/telemetry";
import type { ClassKeys, FacetParents, TailItem, TailObject } from "@agent-oncall/telemetry/tail";
import { unannouncedObjects } from "@agent-oncall/telemetry/tail";
import { type FacetPathStep, isTopLevelId, matchFacetParent, type NamespaceOf } from "../../src/admin-rpc/facet-ids";
import type { Store } from "../../src/store/partitions";
import { newestAgentsOf, PARENT_CANDIDATES_PER_CLASS, storedFacetParents } from "../../src/store/read-models/facet-parents";

/**
 * Which parent a sub-agent runs under, for Workers without the admin mixin (which publishes the ancestry itself).
 * The SDK's messages name a sub-agent by its own class and name only; the trace item carries the facet's own
 * Durable Object id, which the SDK derives from the whole path (src/admin-rpc/facet-ids.ts). So the console tries
 * the parents it knows: agents of the classes it binds, the newest PARENT_CANDIDATES_PER_CLASS of each class by
 * last event (store read), plus the top-level agents named in the same tail batch. An object whose id is its
 * name's top-level id in its class's binding is a top-level agent and is not looked at further.
 *
 * Each finding is kept in `tail_objects` with the object (computed once per facet) and in this isolate's memory
 * (no read per later event). A facet with no match is keyed as below, and the finding says what was tried; a known
 * facet is tried again after UNKNOWN_RETRY_MS, since its parent may report its first event later.
 *
 * The same finding says which objects are not the agents of the Worker the console acts on (identity across
 * Workers, src/telemetry/workers.ts): an object of a bound class whose id is neither its name's top-level id nor a
 * known parent's sub-agent id is some other Durable Object (another Worker's agent, or a sub-agent whose parent is
 * unknown), so its agent is keyed apart, `Class@worker` (or `Class@?<object id>` where the item names no Worker), and
 * never merges with the bound agent of the same name. An object of an unbound class that matched no parent is keyed
 * by its Worker when the item names one; locally (no Worker named, no binding to compare with) it keeps its own key.
 */

/** What the console knows of an object's parent. `top`: a top-level agent (its id is its name's). */
export type FacetFinding = { parentPath: FacetPathStep[] } | { unknown: string } | { top: true };

/** How long a facet of unknown parent stays unknown before the tail tries again (its parent may appear). */
export const UNKNOWN_RETRY_MS = 10 * 60_000;

/** Findings by object and name, in this isolate: found and top-level for good, unknown with when it was found. */
const memory = new Map<string, { finding: FacetFinding; at: number }>();
const MEMORY_MAX = 10_000;

const selfOf = (o: TailObject): FacetPathStep => ({ className: o.agentClass, name: o.agentName });
const keyOf = (o: { worker: string; objectId: string; agentClass: string; agentName: string }) => `${o.worker}\0${o.objectId}\0${o.agentClass}\0${o.agentName}`;

/** What the tail handler hands capture and the tail_objects statement. */
export type FacetParentLookup = {
  /** For captureFromTail: the parent path of a facet whose parent was found. */
  parents: FacetParents;
  /** The finding to store with an object (null: nothing to store, a top-level agent or an announced ancestry). */
  stored(o: TailObject): { parentPath: string | null; parentUnknown: string | null };
  /** For captureFromTail: the class key of an object's agent that is not the bound Worker's (src/telemetry/workers.ts). */
  classKeys: ClassKeys;
  /** Candidate parents tried this call (0 when every finding came from memory or the store): for the bench and tests. */
  tried: number;
};

/**
 * No parent found for anything: what the tail uses when the store could not be asked. The bindings still say which
 * objects are not the bound Worker's agents (CPU only), so those are still keyed apart, sub-agents of bound classes
 * among them, rather than merged with a bound agent.
 */
export function noFacetParents(namespaceOf: NamespaceOf): FacetParentLookup {
  return {
    parents: () => undefined,
    stored: () => ({ parentPath: null, parentUnknown: null }),
    classKeys: (worker, objectId, agentClass, agentName) => {
      const top = isTopLevelId(objectId, { className: agentClass, name: agentName }, namespaceOf);
      return top ? undefined : classKeyOf(worker, objectId, agentClass, top === false);
    },
    tried: 0,
  };
}

/**
 * The class key of an object that is neither a bound agent nor a sub-agent of a known parent. `bound`: its class is
 * bound, so it is certainly not the bound Worker's agent of that name, and is keyed apart even when the item names
 * no Worker (by its object id). Else it is keyed by its Worker where the item names one, and left as it is locally.
 */
function classKeyOf(worker: string, objectId: string, agentClass: string, bound: boolean): string | undefined {
  return bound || worker ? workerClassKey(agentClass, worker || null, objectId) : undefined;
}

/** Forgets the isolate's findings (tests that replay one object under several stores). */
export function forgetFacetFindings(): void {
  memory.clear();
}

/**
 * Finds the parents of the facets in these items. `classes` are the agent classes the console binds (AGENT_CLASSES)
 * and `namespaceOf` their bindings. Reads the store only for objects not in memory, and the registry only when one
 * of them is neither top-level nor already matched.
 */
export async function findFacetParents(
  items: readonly TailItem[],
  store: Store,
  classes: readonly string[],
  namespaceOf: NamespaceOf,
  now: number,
): Promise<FacetParentLookup> {
  const findings = new Map<string, FacetFinding>();
  let tried = 0;
  const subjects = unannouncedObjects(items);
  const open: TailObject[] = [];
  const tops: FacetPathStep[][] = [];
  for (const o of subjects) {
    const k = keyOf(o);
    const known = memory.get(k);
    const top = isTopLevelId(o.objectId, selfOf(o), namespaceOf);
    // A top-level agent of this batch is a candidate parent even before it reaches the registry (its own events
    // are still in the Queue), or when all it published is the SDK's noise, which the registry never sees.
    if (top) tops.push([selfOf(o)]);
    if (known && !retry(known.finding, known.at, top, now)) findings.set(k, known.finding);
    else if (top) settle(o, { top: true }, now);
    else open.push(o);
  }
  if (open.length) {
    // What an earlier call (any isolate) stored; an unknown finding younger than the retry age stands.
    const stored = new Map((await storedFacetParents(store.home, open)).map((r) => [keyOf(r), r]));
    const left: TailObject[] = [];
    for (const o of open) {
      const r = stored.get(keyOf(o));
      const path = r?.parentPath ? readPath(r.parentPath) : null;
      if (path) settle(o, { parentPath: path }, r!.seenAt);
      else if (r?.parentUnknown && !retry({ unknown: r.parentUnknown }, r.seenAt, isTopLevelId(o.objectId, selfOf(o), namespaceOf), now))
        settle(o, { unknown: r.parentUnknown }, r.seenAt);
      else left.push(o);
    }
    if (left.length) {
      const bound = classes.filter((c) => namespaceOf(c));
      const candidates = [...tops, ...(await newestAgentsOf(store, bound)).map(pathOf)];
      for (const o of left) {
        tried += candidates.length;
        const parent = await matchFacetParent(o.objectId, selfOf(o), candidates, namespaceOf);
        const facet = isTopLevelId(o.objectId, selfOf(o), namespaceOf) === false;
        settle(o, parent ? { parentPath: parent } : { unknown: unknownWhy(bound, candidates.length, facet) }, now);
      }
    }
  }
  function settle(o: TailObject, f: FacetFinding, at: number): void {
    findings.set(keyOf(o), f);
    remember(keyOf(o), f, at);
  }
  return {
    parents: (worker, objectId, agentClass, agentName) => {
      const f = findings.get(keyOf({ worker, objectId, agentClass, agentName }));
      return f && "parentPath" in f ? f.parentPath : undefined;
    },
    stored: (o) => {
      const f = findings.get(keyOf(o));
      if (f && "parentPath" in f) return { parentPath: JSON.stringify(f.parentPath), parentUnknown: null };
      if (f && "unknown" in f) return { parentPath: null, parentUnknown: f.unknown };
      return { parentPath: null, parentUnknown: null };
    },
    classKeys: (worker, objectId, agentClass, agentName) => {
      const f = findings.get(keyOf({ worker, objectId, agentClass, agentName }));
      if (!f || !("unknown" in f)) return undefined;
      return classKeyOf(worker, objectId, agentClass, namespaceOf(agentClass) !== null);
    },
    tried,
  };
}

/**
 * Whether an unknown finding is tried again: only for a known facet (its class bound, its id not its name's), and
 * only after UNKNOWN_RETRY_MS. An object whose class is not bound may be any top-level agent of that class: trying
 * each of those again would read the registry per agent every few minutes, so it is tried once.
 */
function retry(f: FacetFinding, at: number, top: boolean | null, now: number): boolean {
  return "unknown" in f && top === false && now - at >= UNKNOWN_RETRY_MS;
}

function remember(k: string, finding: FacetFinding, at: number): void {
  if (memory.size >= MEMORY_MAX) memory.clear();
  memory.set(k, { finding, at });
}

/** A registry key as a root-first path: a top-level agent is one step; a sub-agent's key holds its ancestors. */
function pathOf(a: { agentClass: string; agentName: string }): FacetPathStep[] {
  const sub = parseAgentKeyName(a.agentName);
  return sub ? [...sub.parentPath, { className: a.agentClass, name: sub.name }] : [{ className: a.agentClass, name: a.agentName }];
}

function readPath(text: string): FacetPathStep[] | null {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) && v.length && v.every((s) => s && typeof s.className === "string" && typeof s.name === "string") ? v : null;
  } catch {
    return null;
  }
}

/**
 * Why no parent was found, naming what was tried: stored with the object and shown on the agent's page. `facet`:
 * its class is bound and its id is not its name's top-level id, so it is a sub-agent; else the console cannot tell.
 */
/** Up to this many bound classes are named in a finding; past it they are counted. */
const NAMED_CLASSES = 6;

function unknownWhy(bound: readonly string[], candidates: number, facet: boolean): string {
  const what = facet
    ? "Its Durable Object id is not the top-level id of its name in this console's binding of its class, so it is a sub-agent (or an agent of another Worker)"
    : "Its class is not one the console binds, so the console cannot tell whether it is a sub-agent (a top-level id cannot be computed)";
  if (!bound.length) return `${what}; the console binds no agent class (AGENT_CLASSES), so it cannot compute any parent's sub-agent ids.`;
  // A few classes are named; a long list (a console binding dozens) is counted, so the page stays readable.
  const classes =
    bound.length <= NAMED_CLASSES
      ? `each class the console binds (${bound.join(", ")})`
      : `each of the ${bound.length} classes the console binds (AGENT_CLASSES)`;
  return `${what}; its id is the sub-agent id of none of the ${candidates} agents tried: the newest ${PARENT_CANDIDATES_PER_CLASS} by last event of ${classes}, and the top-level agents of the same tail batch. Its parent may be of a class the console does not bind or have reported no event of its own yet (tried again after ${UNKNOWN_RETRY_MS / 60_000} minutes), or the sub-agent was created before agents 0.32's path-scoped ids.`;
}
