import { type ConsoleStore, consoleStore } from "../src/store/console-store";
import { type HistoryTier, historyTier } from "../src/store/history/tier";
import type { Store } from "../src/store/partitions";
import { consoleConfig, partitionBindings } from "./config";

const stores = new WeakMap<object, Store>();

/**
 * The console's store from its bindings: DB is home and partition 0, DB_P1 … the others, as many as
 * STORE_PARTITIONS says (worker/config.ts has already refused a count whose bindings are missing). One per env.
 */
export function storeFromEnv(env: { DB: D1Database }): Store {
  let store = stores.get(env);
  if (!store) {
    const bindings = partitionBindings(consoleConfig(env).store.partitions);
    store = { home: env.DB, parts: bindings.map((b) => (env as unknown as Record<string, D1Database>)[b]!) };
    stores.set(env, store);
  }
  return store;
}

/**
 * Where read models read the R2 history from, when a bucket is bound (worker/config.ts: HISTORY_*, TIMELINE_SEGMENTS,
 * HOT_WINDOW_HOURS, the ingest clock skew); undefined without one.
 */
export function historyTierFromEnv(env: { HISTORY?: R2Bucket }, now = Date.now()): HistoryTier | undefined {
  const { history, retention, ingest } = consoleConfig(env);
  return historyTier(env.HISTORY, { ...history, hotWindowHours: retention.hotWindowHours, futureSkewMs: ingest.maxFutureSkewSeconds * 1000 }, now);
}

/**
 * The one store API (src/store/console-store.ts) from the bindings: the D1 partitions, the R2 history when bound,
 * and the settings its reads obey. Built per request (worker/routes/context.ts storeOf): `now` fixes the hot window.
 */
export function consoleStoreFromEnv(env: { DB: D1Database; HISTORY?: R2Bucket }, now = Date.now()): ConsoleStore {
  const { history, retention, ingest } = consoleConfig(env);
  return consoleStore({
    store: storeFromEnv(env),
    bucket: env.HISTORY,
    history,
    hotWindowHours: retention.hotWindowHours,
    futureSkewMs: ingest.maxFutureSkewSeconds * 1000,
    now,
  });
}
