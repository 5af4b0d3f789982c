import type { Store } from "../partitions";
import {
  type Deploy,
  type DeployStorm,
  type DeployStormConfig,
  deployStorms,
  incidentsOpenedByAgent,
  listDeploys,
  MAX_DEPLOYS,
  openedOf,
  previousDeploy,
  stormsOf,
  VERSION_SCAN_CAP,
  type VersionFigures,
  versionFigures,
} from "./deploys";
import { compareKey } from "./merged";

/**
 * Deploys over a partitioned store (src/store/partitions.ts). A Worker version's events reach every partition its
 * agents hash to, and each partition records when it saw the version first (deploys.first_seen): the store's
 * first_seen of a version is the earliest of them. Incidents belong to their agent's partition, so a version's
 * incident figures sum.
 */

/**
 * listDeploys over the store. A version's first event may reach several partitions (its agents are spread
 * across them), each recording when it saw the version first: the store's first_seen is the earliest of them. So
 * each partition's deploys in the window are candidates, each candidate's first_seen is read from every partition
 * by its key (N point reads each) and the earliest kept; a candidate first seen before `since` somewhere else is no
 * deploy of the window. Each partition is read to MAX_DEPLOYS whatever `limit` is (a partition's newest may be no
 * deploy of the store's: seen earlier elsewhere), so the list is exact unless a partition has MAX_DEPLOYS versions
 * first seen in the window; then versions older than that partition's last may be missing and the list stops there.
 * Reads at most N × MAX_DEPLOYS index rows and N point reads per candidate.
 */
export async function listDeploysIn(store: Store, opts: { since?: number; until?: number; limit?: number } = {}): Promise<Deploy[]> {
  if (store.parts.length === 1) return listDeploys(store.parts[0]!, opts);
  const limit = Math.max(1, Math.min(opts.limit ?? MAX_DEPLOYS, MAX_DEPLOYS));
  const since = opts.since ?? 0;
  const until = opts.until ?? Number.MAX_SAFE_INTEGER;
  const pages = await Promise.all(store.parts.map((db) => listDeploys(db, { since, until, limit: MAX_DEPLOYS })));
  const versions = [...new Set(pages.flat().map((d) => d.version))];
  if (!versions.length) return [];
  const firsts = await Promise.all(
    store.parts.map((db) =>
      db.batch<{ firstSeen: number }>(versions.map((v) => db.prepare("SELECT first_seen AS firstSeen FROM deploys WHERE version = ?").bind(v))),
    ),
  );
  const key = (d: Deploy) => [d.firstSeen, d.version];
  // Where a full page stopped: nothing older than that is known to be complete.
  let frontier: Deploy | null = null;
  for (const p of pages) if (p.length === MAX_DEPLOYS && (!frontier || compareKey(key(p.at(-1)!), key(frontier)) > 0)) frontier = p.at(-1)!;
  return versions
    .map((version, i) => ({ version, firstSeen: Math.min(...firsts.flatMap((f) => (f[i]!.results[0] ? [Number(f[i]!.results[0].firstSeen)] : []))) }))
    .filter((d) => d.firstSeen >= since && d.firstSeen <= until && (!frontier || compareKey(key(d), key(frontier)) >= 0))
    .sort((a, b) => -compareKey(key(a), key(b)))
    .slice(0, limit);
}

/**
 * versionFigures over the store: each version's incidents, exhausted ones and re-spent tokens summed over the
 * partitions. Exact while no partition is capped (more than VERSION_SCAN_CAP incidents of the version); past it,
 * `capped` says the figures count the newest of each partition. Reads N × what one partition reads.
 */
export async function versionFiguresIn(store: Store, versions: string[]): Promise<{ figures: VersionFigures[]; rowsRead: number }> {
  if (store.parts.length === 1) return versionFigures(store.parts[0]!, versions);
  const each = await Promise.all(store.parts.map((db) => versionFigures(db, versions)));
  const figures = versions.map((version, i) => {
    const of = each.map((e) => e.figures[i]!);
    const incidents = of.reduce((a, f) => a + f.incidents, 0);
    return {
      version,
      incidents: Math.min(incidents, VERSION_SCAN_CAP),
      exhausted: of.reduce((a, f) => a + f.exhausted, 0),
      respentTokens: of.reduce((a, f) => a + f.respentTokens, 0),
      capped: incidents > VERSION_SCAN_CAP || of.some((f) => f.capped),
    };
  });
  return { figures, rowsRead: each.reduce((a, e) => a + e.rowsRead, 0) };
}

const key = (d: Deploy) => [d.firstSeen, d.version];

/** A version's first_seen in the store: the earliest any partition recorded (N point reads by key). */
async function firstSeenIn(store: Store, version: string): Promise<number | null> {
  const seen = await Promise.all(
    store.parts.map((db) => db.prepare("SELECT first_seen AS firstSeen FROM deploys WHERE version = ?").bind(version).first<{ firstSeen: number }>()),
  );
  const times = seen.flatMap((r) => (r ? [Number(r.firstSeen)] : []));
  return times.length ? Math.min(...times) : null;
}

/** Versions one partition is walked back through at most when looking for the previous deploy. */
const PREVIOUS_WALK = 50;

/**
 * The deploy first seen just before `deploy` in the whole store (first_seen the earliest over partitions). Each
 * partition is walked back from `deploy` (its own first_seen of each version, newest first) while its versions may
 * still beat the best found: a version a partition saw late may have been seen earlier elsewhere, so its store-wide
 * first_seen is read, and the walk stops at the first version whose own first_seen is no later than the best.
 */
export async function previousDeployIn(store: Store, deploy: Deploy): Promise<Deploy | null> {
  if (store.parts.length === 1) return previousDeploy(store.parts[0]!, deploy);
  let best: Deploy | null = null;
  for (const db of store.parts) {
    let at = deploy;
    for (let i = 0; i < PREVIOUS_WALK; i++) {
      const local = await previousDeploy(db, at);
      if (!local || (best && compareKey(key(local), key(best)) <= 0)) break;
      const found: Deploy = { version: local.version, firstSeen: (await firstSeenIn(store, local.version)) ?? local.firstSeen };
      if (!best || compareKey(key(found), key(best)) > 0) best = found;
      at = local;
    }
  }
  return best;
}

/**
 * incidentsOpenedIn over the store: each agent's count is whole in its partition, so the counts sum (capped at
 * VERSION_SCAN_CAP, as one database counts) and the agent with the most is the largest of every partition's.
 */
export async function incidentsOpenedInStore(
  store: Store,
  version: string,
  from: number,
  to: number,
): Promise<{ n: number; top: { agentClass: string; agentName: string } | null }> {
  const rows = (await Promise.all(store.parts.map((db) => incidentsOpenedByAgent(db, version, from, to)))).flat();
  const merged = openedOf(rows.sort((a, b) => b.n - a.n || compareKey([a.agentClass, a.agentName], [b.agentClass, b.agentName])));
  return { ...merged, n: Math.min(merged.n, VERSION_SCAN_CAP) };
}

/** deployStorms over the store: the same rule over the merged deploys, counts and previous versions. */
export function deployStormsIn(store: Store, now: number, config: DeployStormConfig): Promise<DeployStorm[]> {
  if (store.parts.length === 1) return deployStorms(store.parts[0]!, now, config);
  return stormsOf(
    {
      listDeploys: (opts) => listDeploysIn(store, opts),
      incidentsOpenedIn: (version, from, to) => incidentsOpenedInStore(store, version, from, to),
      previousDeploy: (deploy) => previousDeployIn(store, deploy),
    },
    now,
    config,
  );
}
