/**
 * The store across D1 databases ("past one writer", docs/scale.md). One D1 database has one writer, and it saturates
 * below what 10,000 agents at the demo's mix send, so the console can split its per-agent rows (timelines,
 * runs, incidents, sessions, ops, rollups) across N databases by agent. `home` holds what is global (audit, saved
 * views, alerts, bulk batches, dead letters, the recorded partition count) and is also partition 0, so N = 1 is
 * exactly the single-database store.
 *
 * An agent's rows all live in one partition, chosen by a stable hash of its class and name: every agent-scoped
 * read goes to one database, and fleet-wide lists read each partition and merge (src/store/read-models/merged.ts).
 *
 * CHANGING N NEEDS A RE-SHARD: with another N most agents hash elsewhere, and their history would be split
 * across databases that no read model looks at together. So the home database records N on first use, and the
 * console refuses to ingest or serve with a different N (assertRecordedPartitions) until the store is re-sharded
 * (copy each agent's rows to partitionOf under the new N, then update the recorded row).
 */

/** The console's D1 databases: `home` is also `parts[0]`. */
export type Store = { home: D1Database; parts: D1Database[] };

/** A store of one database: the home database holds everything (the default). */
export const singleStore = (db: D1Database): Store => ({ home: db, parts: [db] });

/**
 * The partition (0 .. n-1) that holds an agent's rows: FNV-1a (32 bit) over `class NUL name`, modulo n. Stable
 * across isolates, runtimes and releases (it is part of where data lives: never change it without a re-shard).
 */
export function partitionOf(agentClass: string, agentName: string, n: number): number {
  if (n <= 1) return 0;
  let h = 0x811c9dc5;
  const key = `${agentClass}\u0000${agentName}`;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % n;
}

/** The database that holds one agent's rows. */
export const partitionFor = (store: Store, agentClass: string, agentName: string): D1Database =>
  store.parts[partitionOf(agentClass, agentName, store.parts.length)]!;

/** The key under which the home database records the partition count (table store_settings). */
export const PARTITIONS_KEY = "partitions";

/** The store holds data partitioned under another N than configured: refused until re-sharded. */
export class PartitionCountMismatch extends Error {
  constructor(
    readonly recorded: number,
    readonly configured: number,
  ) {
    super(
      `the store was partitioned across ${recorded} D1 database(s) but STORE_PARTITIONS is ${configured}: changing the count needs a re-shard ` +
        `(each agent's rows moved to its new partition), so the console refuses to ingest or serve until STORE_PARTITIONS is ${recorded} again or the store is re-sharded`,
    );
    this.name = "PartitionCountMismatch";
  }
}

const checked = new WeakMap<D1Database, number>();

/**
 * Records the partition count in the home database on first use, and throws PartitionCountMismatch when it
 * already records another one. Checked once per isolate and home database (one INSERT OR IGNORE and one read).
 */
export async function assertRecordedPartitions(store: Store): Promise<void> {
  const n = store.parts.length;
  if (checked.get(store.home) === n) return;
  const [, read] = await store.home.batch<{ value: string }>([
    store.home.prepare("INSERT OR IGNORE INTO store_settings (key, value) VALUES (?, ?)").bind(PARTITIONS_KEY, String(n)),
    store.home.prepare("SELECT value FROM store_settings WHERE key = ?").bind(PARTITIONS_KEY),
  ]);
  const recorded = Number(read!.results[0]?.value ?? n);
  if (recorded !== n) throw new PartitionCountMismatch(recorded, n);
  checked.set(store.home, n);
}
