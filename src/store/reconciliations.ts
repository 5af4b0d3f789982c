import { reconciliations } from "./schema";
import { names } from "./sql-names";

/** Reconciliation's log of asks: written by the console's reconciler, read by the open-work and blocked-agents read models. */

const R = names(reconciliations);
const UPSERT = `INSERT INTO ${R.$table} (${R.agentClass}, ${R.agentName}, ${R.askedAt}, ${R.findings}, ${R.error}, ${R.nextAlarmAt}, ${R.pipeline}) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (${R.agentClass}, ${R.agentName}) DO UPDATE SET ${R.askedAt} = excluded.${R.askedAt}, ${R.findings} = excluded.${R.findings}, ${R.error} = excluded.${R.error},
    ${R.nextAlarmAt} = excluded.${R.nextAlarmAt},
    ${R.pipeline} = CASE WHEN excluded.${R.error} IS NULL THEN excluded.${R.pipeline} ELSE ${R.$table}.${R.pipeline} END
  WHERE excluded.${R.askedAt} >= ${R.$table}.${R.askedAt}`;

/** A pipeline state the store keeps: the agent's events cannot reach the console (src/admin-rpc/pipeline-state.ts). */
export type BlockedPipeline = NonNullable<typeof reconciliations.$inferSelect.pipeline>;

/**
 * Records that an agent was asked at `askedAt`, with how many findings, or why it could not answer, and the
 * next alarm it reported then (stuck detection's "alarm overdue"; null when it has none or did not answer).
 * `pipeline`: the agent's answer said its events cannot reach the console (null: they can, or it did not say).
 * An ask the agent could not answer keeps the pipeline state it gave before.
 */
export async function recordReconciliation(
  db: D1Database,
  r: {
    agentClass: string;
    agentName: string;
    askedAt: number;
    findings: number;
    error: string | null;
    nextAlarmAt?: number | null;
    pipeline?: BlockedPipeline | null;
  },
): Promise<void> {
  const alarm = r.error === null && typeof r.nextAlarmAt === "number" && Number.isFinite(r.nextAlarmAt) ? r.nextAlarmAt : null;
  await db
    .prepare(UPSERT)
    .bind(
      r.agentClass,
      r.agentName,
      r.askedAt,
      r.findings,
      r.error === null ? null : r.error.slice(0, 500),
      alarm,
      r.error === null ? (r.pipeline ?? null) : null,
    )
    .run();
}
