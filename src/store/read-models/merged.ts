/**
 * Read models over a partitioned store (src/store/partitions.ts). Each read model keeps its (db, …) signature and
 * reads one database; the wrappers here give the console one answer for the whole store: agent-scoped reads go to
 * the agent's partition, keyset lists read the same page from every partition and merge by their sort key, counts
 * sum. With one partition each wrapper is exactly the read model on it (same rows, same rows read).
 */

/**
 * The reads that do not merge partitions yet. While this is not empty, worker/config.ts refuses STORE_PARTITIONS
 * above 1 and names them: no page may silently show one partition of the store.
 */
export const UNMERGED_READS: readonly string[] = [
  "overview (/)",
  "agents (/agents, /agents/:class/:name)",
  "runs (/runs, /runs/:id)",
  "incidents (/incidents, /incidents/:id)",
  "sessions (/sessions, /sessions/:name)",
  "ops (/ops)",
  "backups (/backups)",
  "events (/events)",
  "stuck (/stuck)",
  "awake (/awake)",
  "deploys (/deploys)",
  "budget (/budget)",
  "search (/search)",
  "bulk selections (/bulk)",
  "exports (/export/:list)",
  "alerts and reconciliation reading the store",
];
