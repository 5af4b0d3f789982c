import { reconciliations } from "./schema";
import { names } from "./sql-names";

/** Reconciliation's log of asks: written by the console's reconciler, read by the open-work read model. */

const R = names(reconciliations);
const UPSERT = `INSERT INTO ${R.$table} (${R.agentClass}, ${R.agentName}, ${R.askedAt}, ${R.findings}, ${R.error}, ${R.nextAlarmAt}) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (${R.agentClass}, ${R.agentName}) DO UPDATE SET ${R.askedAt} = excluded.${R.askedAt}, ${R.findings} = excluded.${R.findings}, ${R.error} = excluded.${R.error},
    ${R.nextAlarmAt} = excluded.${R.nextAlarmAt}
  WHERE excluded.${R.askedAt} >= ${R.$table}.${R.askedAt}`;

/**
 * Records that an agent was asked at `askedAt`, with how many findings, or why it could not answer, and the
 * next alarm it reported then (stuck detection's "alarm overdue"; null when it has none or did not answer).
 */
export async function recordReconciliation(
  db: D1Database,
  r: { agentClass: string; agentName: string; askedAt: number; findings: number; error: string | null; nextAlarmAt?: number | null },
): Promise<void> {
  const alarm = r.error === null && typeof r.nextAlarmAt === "number" && Number.isFinite(r.nextAlarmAt) ? r.nextAlarmAt : null;
  await db
    .prepare(UPSERT)
    .bind(r.agentClass, r.agentName, r.askedAt, r.findings, r.error === null ? null : r.error.slice(0, 500), alarm)
    .run();
}
