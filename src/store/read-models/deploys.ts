import { deploys, incidents } from "../schema";
import { names } from "../sql-names";
import { rowsReadOf, SCAN_BUDGET } from "./paging";

/**
 * Deploys: the Worker versions agents reported (envelope `ver`), each with the time its first event happened, and
 * what each version's incidents came to. An incident belongs to the version it opened under (incidents.version,
 * the version of its earliest versioned event), so every figure here is a count over incidents_version.
 */

const D = names(deploys);
const I = names(incidents);

/** One Worker version and when its first event happened. */
export type Deploy = { version: string; firstSeen: number };

/** Deploys listed at most. */
export const MAX_DEPLOYS = 50;

/** Incidents of one version counted at most (per figure); past it a figure says it is capped. */
export const VERSION_SCAN_CAP = 5 * SCAN_BUDGET;

/** Deploys first seen in [since, until] (both optional), newest first, at most `limit`. Reads O(limit) index rows. */
export async function listDeploys(db: D1Database, opts: { since?: number; until?: number; limit?: number } = {}): Promise<Deploy[]> {
  const limit = Math.max(1, Math.min(opts.limit ?? MAX_DEPLOYS, MAX_DEPLOYS));
  const r = await db
    .prepare(
      `SELECT ${D.version} AS version, ${D.firstSeen} AS firstSeen FROM ${D.$table} INDEXED BY deploys_first_seen
       WHERE ${D.firstSeen} >= ? AND ${D.firstSeen} <= ? ORDER BY ${D.firstSeen} DESC, ${D.version} DESC LIMIT ?`,
    )
    .bind(opts.since ?? 0, opts.until ?? Number.MAX_SAFE_INTEGER, limit)
    .all<Deploy>();
  return r.results;
}

/** The deploy first seen just before `deploy` (ties broken by version, as listDeploys orders), or null for the first. */
export async function previousDeploy(db: D1Database, deploy: Deploy): Promise<Deploy | null> {
  return db
    .prepare(
      `SELECT ${D.version} AS version, ${D.firstSeen} AS firstSeen FROM ${D.$table} INDEXED BY deploys_first_seen
       WHERE ${D.firstSeen} < ?1 OR (${D.firstSeen} = ?1 AND ${D.version} < ?2) ORDER BY ${D.firstSeen} DESC, ${D.version} DESC LIMIT 1`,
    )
    .bind(deploy.firstSeen, deploy.version)
    .first<Deploy>();
}

/** What one version's incidents came to: opened, exhausted, and the tokens their recoveries re-spent. */
export type VersionFigures = {
  version: string;
  incidents: number;
  exhausted: number;
  respentTokens: number;
  /** The version has more than VERSION_SCAN_CAP incidents: the figures count its newest ones only. */
  capped: boolean;
};

/**
 * The incident figures of each version, from the incidents that opened under it (newest VERSION_SCAN_CAP each).
 * One statement per version in one batch; each reads its version's range of incidents_version plus its rows.
 */
export async function versionFigures(db: D1Database, versions: string[]): Promise<{ figures: VersionFigures[]; rowsRead: number }> {
  if (!versions.length) return { figures: [], rowsRead: 0 };
  const sql = `SELECT COUNT(*) AS n, COALESCE(SUM(${I.status} = 'exhausted'), 0) AS exhausted,
      COALESCE(SUM(${I.respentInputTokens} + ${I.respentOutputTokens}), 0) AS tokens
    FROM (SELECT ${I.status}, ${I.respentInputTokens}, ${I.respentOutputTokens} FROM ${I.$table} INDEXED BY incidents_version
          WHERE ${I.version} = ? ORDER BY ${I.firstSeen} DESC LIMIT ${VERSION_SCAN_CAP + 1})`;
  const results = await db.batch<{ n: number; exhausted: number; tokens: number }>(versions.map((v) => db.prepare(sql).bind(v)));
  const figures = versions.map((version, i) => {
    const row = results[i]!.results[0] ?? { n: 0, exhausted: 0, tokens: 0 };
    const n = Number(row.n);
    return {
      version,
      incidents: Math.min(n, VERSION_SCAN_CAP),
      exhausted: Number(row.exhausted),
      respentTokens: Number(row.tokens),
      capped: n > VERSION_SCAN_CAP,
    };
  });
  return { figures, rowsRead: rowsReadOf(...results) };
}

/** Incidents that opened under `version` and were first seen in [from, to): a range of incidents_version, capped. */
export async function incidentsOpenedIn(
  db: D1Database,
  version: string,
  from: number,
  to: number,
): Promise<{ n: number; top: { agentClass: string; agentName: string } | null }> {
  return openedOf(await incidentsOpenedByAgent(db, version, from, to));
}

/** Per agent, the incidents that opened under `version` in [from, to) (the newest VERSION_SCAN_CAP at most), most first. */
export async function incidentsOpenedByAgent(db: D1Database, version: string, from: number, to: number): Promise<OpenedByAgent[]> {
  const r = await db
    .prepare(
      `SELECT ${I.agentClass} AS agentClass, ${I.agentName} AS agentName, COUNT(*) AS n FROM (
         SELECT ${I.agentClass}, ${I.agentName} FROM ${I.$table} INDEXED BY incidents_version
         WHERE ${I.version} = ? AND ${I.firstSeen} >= ? AND ${I.firstSeen} < ? LIMIT ${VERSION_SCAN_CAP}
       ) GROUP BY 1, 2 ORDER BY n DESC, 1, 2`,
    )
    .bind(version, from, to)
    .all<OpenedByAgent>();
  return r.results.map((x) => ({ ...x, n: Number(x.n) }));
}

/** One agent's count of incidents opened under a version. */
export type OpenedByAgent = { agentClass: string; agentName: string; n: number };

/** The count and the agent with the most, from per-agent counts in their order (most first, then class and name). */
export function openedOf(rows: OpenedByAgent[]): { n: number; top: { agentClass: string; agentName: string } | null } {
  const n = rows.reduce((s, x) => s + x.n, 0);
  const top = rows[0];
  return { n, top: top ? { agentClass: top.agentClass, agentName: top.agentName } : null };
}

/**
 * The storm rule's settings (worker/config.ts DEPLOY_STORM_*). `closedKeptMs`: how long the hot store keeps
 * incidents that are not open (HOT_WINDOW_HOURS; retention deletes them after it), so older windows undercount.
 */
export type DeployStormConfig = { windowMs: number; factor: number; minIncidents: number; closedKeptMs?: number };

/** A version whose incident rate in its first window exceeds its predecessor's by the configured factor. */
export type DeployStorm = {
  deploy: Deploy;
  previous: Deploy;
  /** Incidents opened under the version in its window so far, and that window's length (ms). */
  incidents: number;
  windowMs: number;
  /**
   * The same for the previous version's first window (cut short where the new version arrived), or, when that
   * window is older than what the hot store keeps of closed incidents, its last window before the new version
   * (`previousFrom` says where it starts).
   */
  previousIncidents: number;
  previousFrom: number;
  previousWindowMs: number;
  /** Incidents per hour in each window. */
  rate: number;
  previousRate: number;
  /** The agent with the most incidents of the version in its window: where to look first. */
  top: { agentClass: string; agentName: string } | null;
};

const HOUR_MS = 3_600_000;
/** The shortest window a rate is taken over: one incident in the first second is not a rate of 3600 an hour. */
const MIN_RATE_WINDOW_MS = 60_000;

/**
 * Recovery storms after a deploy, as of `now`: for each version first seen within the last two windows, its
 * incident rate over its first `windowMs` (so far) against the previous version's over the previous version's
 * first `windowMs` (cut at the new version's first event; its last `windowMs` before it when the first is older than
 * the hot store keeps closed incidents, `closedKeptMs`). A storm is at least `minIncidents` incidents and a rate
 * above `factor` × the previous rate. Reads the deploys in range, and each candidate's incidents in its window.
 */
export function deployStorms(db: D1Database, now: number, config: DeployStormConfig): Promise<DeployStorm[]> {
  return stormsOf(
    {
      listDeploys: (opts) => listDeploys(db, opts),
      incidentsOpenedIn: (version, from, to) => incidentsOpenedIn(db, version, from, to),
      previousDeploy: (deploy) => previousDeploy(db, deploy),
    },
    now,
    config,
  );
}

/** The reads the storm rule needs, on one database or merged over a partitioned store (merged-deploys.ts). */
export type StormReads = {
  listDeploys: (opts: { since: number; until: number }) => Promise<Deploy[]>;
  incidentsOpenedIn: (version: string, from: number, to: number) => Promise<{ n: number; top: { agentClass: string; agentName: string } | null }>;
  previousDeploy: (deploy: Deploy) => Promise<Deploy | null>;
};

/** The storm rule over its reads (see deployStorms). */
export async function stormsOf(read: StormReads, now: number, config: DeployStormConfig): Promise<DeployStorm[]> {
  const candidates = await read.listDeploys({ since: now - 2 * config.windowMs, until: now });
  const out: DeployStorm[] = [];
  for (const deploy of candidates) {
    const end = Math.min(deploy.firstSeen + config.windowMs, now);
    const windowMs = Math.max(end - deploy.firstSeen, MIN_RATE_WINDOW_MS);
    const mine = await read.incidentsOpenedIn(deploy.version, deploy.firstSeen, end + 1);
    if (mine.n < config.minIncidents) continue;
    // The first version the console ever saw has nothing to be compared with: no storm "after a deploy".
    const previous = await read.previousDeploy(deploy);
    if (!previous) continue;
    // Closed incidents older than the hot window are gone from D1: a previous first window older than that would
    // undercount (and raise false storms), so the previous version is judged on its last window before the deploy.
    const keptSince = config.closedKeptMs === undefined ? Number.NEGATIVE_INFINITY : now - config.closedKeptMs;
    const previousFrom = previous.firstSeen >= keptSince ? previous.firstSeen : Math.max(keptSince, deploy.firstSeen - config.windowMs);
    const pend = Math.max(previousFrom, Math.min(previousFrom + config.windowMs, deploy.firstSeen));
    const previousWindowMs = Math.max(pend - previousFrom, MIN_RATE_WINDOW_MS);
    const previousIncidents = (await read.incidentsOpenedIn(previous.version, previousFrom, pend)).n;
    const rate = (mine.n * HOUR_MS) / windowMs;
    const previousRate = (previousIncidents * HOUR_MS) / previousWindowMs;
    if (rate > config.factor * previousRate)
      out.push({ deploy, previous, incidents: mine.n, windowMs, previousIncidents, previousFrom, previousWindowMs, rate, previousRate, top: mine.top });
  }
  return out;
}
