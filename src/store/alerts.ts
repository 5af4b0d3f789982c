import { partitionFor, type Store } from "./partitions";
import { alertDeliveries, incidents, opAmbiguities } from "./schema";
import { names, selectList } from "./sql-names";

/**
 * The alert delivery log's writes: one row per alert and channel, written by the console's alerting
 * (worker/alerts) and read by the /alerts page (read-models/alerts.ts). The primary key deduplicates.
 */

export const ALERT_KINDS = [
  "exhausted",
  "ambiguous_op",
  "stuck",
  "deploy_storm",
  "exhaust_soon",
  "respent",
  "alarm_loop",
  "telemetry",
  "exhaustion_wave",
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/**
 * How urgent a kind is. Each priority has an hourly budget per channel of its own (worker/config.ts), so alerts of
 * one priority can never spend another's. `high`: alerts that stand for a whole wave, one per version, class, hour or
 * day (a deploy storm, an exhaustion wave, a class whose events cannot reach the console), which a flood of
 * per-incident alerts must not crowd out. `normal`: one alert per incident, op, agent or episode, which is what floods.
 */
export const ALERT_PRIORITIES = ["high", "normal"] as const;
export type AlertPriority = (typeof ALERT_PRIORITIES)[number];

/** Each kind's priority, declared once: a kind added to ALERT_KINDS without one fails the typecheck. */
export const ALERT_PRIORITY: Record<AlertKind, AlertPriority> = {
  deploy_storm: "high",
  exhaustion_wave: "high",
  telemetry: "high",
  exhausted: "normal",
  ambiguous_op: "normal",
  stuck: "normal",
  exhaust_soon: "normal",
  respent: "normal",
  alarm_loop: "normal",
};

/** The kinds that share a priority's budget. */
export const kindsOfPriority = (p: AlertPriority): AlertKind[] => ALERT_KINDS.filter((k) => ALERT_PRIORITY[k] === p);

export const ALERT_STATUSES = ["queued", "sent", "failed", "rate_limited"] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

/** One alert for one channel, as recorded. */
export type AlertRecord = {
  alertKey: string;
  channel: string;
  kind: AlertKind;
  agentClass: string;
  agentName: string;
  subjectId: string;
  summary: string;
};

/** Window of the per-channel, per-priority budgets. */
export const ALERT_WINDOW_MS = 3_600_000;

const A = names(alertDeliveries);
const COUNTED = "('queued', 'sent', 'failed')";

/**
 * Inserts the row unless the key exists (dedup). Its status is decided in the same statement: rate_limited when the
 * channel already has `limit` alerts of the same priority that were not themselves rate limited in the hour up to now, so
 * concurrent consumers cannot both slip under the budget. RETURNING yields a row only when one was inserted. The
 * kinds are constants of ours (ALERT_KINDS), never input.
 */
const insertFor = (
  p: AlertPriority,
) => `INSERT INTO ${A.$table} (${A.alertKey}, ${A.channel}, ${A.kind}, ${A.agentClass}, ${A.agentName}, ${A.subjectId}, ${A.summary},
    ${A.status}, ${A.attempts}, ${A.httpStatus}, ${A.lastError}, ${A.createdAt}, ${A.updatedAt})
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
    CASE WHEN (SELECT COUNT(*) FROM ${A.$table} INDEXED BY alert_deliveries_status
               WHERE ${A.status} IN ${COUNTED} AND ${A.createdAt} > ?8 AND ${A.createdAt} <= ?10 AND ${A.channel} = ?2
                 AND ${A.kind} IN (${kindsOfPriority(p)
                   .map((k) => `'${k}'`)
                   .join(", ")})) >= ?9 THEN 'rate_limited' ELSE 'queued' END,
    0, NULL, NULL, ?10, ?10
  WHERE true
  ON CONFLICT (${A.alertKey}, ${A.channel}) DO NOTHING
  RETURNING ${A.alertKey} AS alertKey, ${A.channel} AS channel, ${A.status} AS status`;
const INSERT = Object.fromEntries(ALERT_PRIORITIES.map((p) => [p, insertFor(p)])) as Record<AlertPriority, string>;

/** Alerts per channel in any hour, for each priority (worker/config.ts ALERT_RATE_LIMIT_PER_HOUR, ALERT_HIGH_RATE_LIMIT_PER_HOUR). */
export type AlertBudgets = Record<AlertPriority, number>;

/**
 * Records alerts, in order, each at most once per channel. Returns only the rows this call inserted, with the status
 * each got (queued: to be sent; rate_limited: over its priority's budget for its channel).
 */
export async function recordAlerts(
  db: D1Database,
  alerts: AlertRecord[],
  opts: { now: number; budgets: AlertBudgets },
): Promise<{ alertKey: string; channel: string; status: AlertStatus }[]> {
  if (!alerts.length) return [];
  const since = opts.now - ALERT_WINDOW_MS;
  const results = await db.batch<{ alertKey: string; channel: string; status: AlertStatus }>(
    alerts.map((a) => {
      const priority = ALERT_PRIORITY[a.kind];
      return db
        .prepare(INSERT[priority])
        .bind(a.alertKey, a.channel, a.kind, a.agentClass, a.agentName, a.subjectId, a.summary.slice(0, 1000), since, opts.budgets[priority], opts.now);
    }),
  );
  return results.flatMap((r) => r.results);
}

/** The outcome of a delivery attempt. `attempts` is the queue's count, so recording the same attempt twice is harmless. */
export type DeliveryUpdate = { status: AlertStatus; attempts: number; httpStatus: number | null; lastError: string | null; now: number };

const UPDATE = `UPDATE ${A.$table} SET ${A.status} = ?3, ${A.attempts} = MAX(${A.attempts}, ?4), ${A.httpStatus} = ?5, ${A.lastError} = COALESCE(?6, ${A.lastError}), ${A.updatedAt} = ?7
  WHERE ${A.alertKey} = ?1 AND ${A.channel} = ?2 AND ${A.status} <> 'sent'`;

/**
 * Records a delivery attempt's outcome. A row already sent stays sent (a duplicate queue delivery cannot undo it);
 * a success keeps the last error, so the log still shows why it took more than one attempt.
 */
export async function recordDelivery(db: D1Database, key: { alertKey: string; channel: string }, u: DeliveryUpdate): Promise<void> {
  await db
    .prepare(UPDATE)
    .bind(key.alertKey, key.channel, u.status, u.attempts, u.httpStatus, u.lastError === null ? null : u.lastError.slice(0, 500), u.now)
    .run();
}

/** An incident or op, by the key its projection has. */
export type SubjectKey = { id: string; agentClass: string; agentName: string };

const I = names(incidents);
const O = names(opAmbiguities);

export type ExhaustedIncident = {
  incidentId: string;
  kind: string;
  agentClass: string;
  agentName: string;
  attempts: number;
  maxAttempts: number | null;
  reason: string | null;
  statusAt: number;
};
export type OpenAmbiguousOp = {
  opId: string;
  agentClass: string;
  agentName: string;
  sessionName: string | null;
  opKind: string | null;
  detail: string | null;
  ambiguousAt: number | null;
};

/** Of these incidents, the ones whose projected status is exhausted now (one primary-key read each), in one database. */
async function exhaustedIncidents(db: D1Database, keys: SubjectKey[]): Promise<ExhaustedIncident[]> {
  if (!keys.length) return [];
  const sql = `SELECT ${selectList(incidents, ["incidentId", "kind", "agentClass", "agentName", "attempts", "maxAttempts", "reason", "statusAt"])}
    FROM ${I.$table} WHERE ${I.incidentId} = ? AND ${I.agentClass} = ? AND ${I.agentName} = ? AND ${I.status} = 'exhausted'`;
  const rs = await db.batch<ExhaustedIncident>(keys.map((k) => db.prepare(sql).bind(k.id, k.agentClass, k.agentName)));
  return rs.flatMap((r) => r.results);
}

/** Of these ops, the ones still ambiguous (reported ambiguous, no resolution yet), in one database. */
async function openAmbiguousOps(db: D1Database, keys: SubjectKey[]): Promise<OpenAmbiguousOp[]> {
  if (!keys.length) return [];
  const sql = `SELECT ${selectList(opAmbiguities, ["opId", "agentClass", "agentName", "sessionName", "opKind", "detail", "ambiguousAt"])}
    FROM ${O.$table} WHERE ${O.opId} = ? AND ${O.agentClass} = ? AND ${O.agentName} = ? AND ${O.ambiguousAt} IS NOT NULL AND ${O.resolutionAt} IS NULL`;
  const rs = await db.batch<OpenAmbiguousOp>(keys.map((k) => db.prepare(sql).bind(k.id, k.agentClass, k.agentName)));
  return rs.flatMap((r) => r.results);
}

/**
 * How many incidents of a class exhausted after `since`, counting at most `limit`: over incidents_class from
 * `firstSeenAfter` (an incident is first seen before it exhausts), so a read costs O(the class's incidents first seen
 * since then), and the caller checks the delivery log first, so a wave is counted until its alert is raised, not after.
 */
async function exhaustedSince(db: D1Database, q: { agentClass: string; since: number; firstSeenAfter: number; limit: number }): Promise<number> {
  const row = await db
    .prepare(
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${I.$table} INDEXED BY incidents_class
         WHERE ${I.agentClass} = ?1 AND ${I.firstSeen} > ?2 AND ${I.status} = 'exhausted' AND ${I.statusAt} > ?3 LIMIT ?4)`,
    )
    .bind(q.agentClass, q.firstSeenAfter, q.since, q.limit)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

// Over the store: each alert is about one agent, whose rows live in one partition, so each is read (and raised) once:
// point reads go to the subject's partition, and a class's count sums over the partitions.

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

/** Of these alert keys, the ones the delivery log holds (on any channel): one primary-key range read each. */
export async function recordedAlertKeys(db: D1Database, keys: string[]): Promise<Set<string>> {
  if (!keys.length) return new Set();
  const rs = await db.batch<{ k: string }>(keys.map((k) => db.prepare(`SELECT ${A.alertKey} AS k FROM ${A.$table} WHERE ${A.alertKey} = ? LIMIT 1`).bind(k)));
  return new Set(rs.flatMap((r) => r.results.map((x) => x.k)));
}
