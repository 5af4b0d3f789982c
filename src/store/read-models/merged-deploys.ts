import type { Store } from "../partitions";
import { type Deploy, listDeploys, MAX_DEPLOYS, VERSION_SCAN_CAP, type VersionFigures, versionFigures } from "./deploys";
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
