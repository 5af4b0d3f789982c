import type { Store } from "../partitions";
import { type Respent, respentLastHour } from "./budget";

/**
 * The budget alert's read over a partitioned store (src/store/partitions.ts): an agent's figure is whole in its
 * partition, a class's sums. The other alert reads live with their SQL in src/store/alerts.ts.
 */

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
