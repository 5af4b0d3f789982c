import { type ExhaustedIncident, exhaustedIncidents, exhaustedSince, type OpenAmbiguousOp, openAmbiguousOps, type SubjectKey } from "../alerts";
import { partitionFor, type Store } from "../partitions";
import { type Respent, respentLastHour } from "./budget";

/**
 * The alert jobs' reads over a partitioned store (src/store/partitions.ts). Each alert is about one agent, whose
 * rows live in one partition, so each is read (and raised) once: point reads go to the subject's partition, and
 * fleet-wide figures merge exactly (an agent's figure is whole in its partition; a class's sums).
 */

/** Point reads by subject, each in its agent's partition (one batch per partition); answers in the keys' order. */
async function bySubject<T extends { agentClass: string; agentName: string }>(
  store: Store,
  keys: SubjectKey[],
  read: (db: D1Database, keys: SubjectKey[]) => Promise<T[]>,
  idOf: (row: T) => string,
): Promise<T[]> {
  if (store.parts.length === 1) return read(store.parts[0]!, keys);
  const groups = new Map<D1Database, SubjectKey[]>();
  for (const k of keys) {
    const db = partitionFor(store, k.agentClass, k.agentName);
    groups.set(db, [...(groups.get(db) ?? []), k]);
  }
  const found = (await Promise.all([...groups].map(([db, ks]) => read(db, ks)))).flat();
  const at = new Map(keys.map((k, i) => [JSON.stringify([k.id, k.agentClass, k.agentName]), i]));
  const place = (r: T) => at.get(JSON.stringify([idOf(r), r.agentClass, r.agentName])) ?? 0;
  return found.sort((a, b) => place(a) - place(b));
}

/** exhaustedIncidents over the store: each incident read in its agent's partition. */
export const exhaustedIncidentsIn = (store: Store, keys: SubjectKey[]): Promise<ExhaustedIncident[]> =>
  bySubject(store, keys, exhaustedIncidents, (r) => r.incidentId);

/** exhaustedSince over the store: a class's agents may live in every partition, so each counts (up to the limit) and the sum is capped. */
export async function exhaustedSinceIn(store: Store, q: Parameters<typeof exhaustedSince>[1]): Promise<number> {
  const each = await Promise.all(store.parts.map((db) => exhaustedSince(db, q)));
  return Math.min(
    q.limit,
    each.reduce((a, n) => a + n, 0),
  );
}

/** openAmbiguousOps over the store: each op read in its agent's partition. */
export const openAmbiguousOpsIn = (store: Store, keys: SubjectKey[]): Promise<OpenAmbiguousOp[]> => bySubject(store, keys, openAmbiguousOps, (r) => r.opId);

/**
 * respentLastHour over the store: an agent's re-spent tokens are whole in its partition (listed as they are); a
 * class's sum over the partitions. Both largest first, ties by name so the order does not depend on partitions.
 */
export async function respentLastHourIn(store: Store, now: number): Promise<{ agents: Respent[]; classes: Respent[]; since: number; rowsRead: number }> {
  if (store.parts.length === 1) return respentLastHour(store.parts[0]!, now);
  const each = await Promise.all(store.parts.map((db) => respentLastHour(db, now)));
  const byClass = new Map<string, number>();
  for (const c of each.flatMap((e) => e.classes)) byClass.set(c.agentClass, (byClass.get(c.agentClass) ?? 0) + c.tokens);
  const order = (a: Respent, b: Respent) =>
    b.tokens - a.tokens || (a.agentClass < b.agentClass ? -1 : a.agentClass > b.agentClass ? 1 : 0) || ((a.agentName ?? "") < (b.agentName ?? "") ? -1 : 1);
  return {
    agents: each.flatMap((e) => e.agents).sort(order),
    classes: [...byClass].map(([agentClass, tokens]) => ({ agentClass, agentName: null, tokens })).sort(order),
    since: each[0]!.since,
    rowsRead: each.reduce((a, e) => a + e.rowsRead, 0),
  };
}
