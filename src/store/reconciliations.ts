import { reconciliations } from "./schema";
import { names } from "./sql-names";

/** Reconciliation's log of asks: written by the console's reconciler, read by the open-work read model. */

const R = names(reconciliations);
const UPSERT = `INSERT INTO ${R.$table} (${R.agentClass}, ${R.agentName}, ${R.askedAt}, ${R.findings}, ${R.error}) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (${R.agentClass}, ${R.agentName}) DO UPDATE SET ${R.askedAt} = excluded.${R.askedAt}, ${R.findings} = excluded.${R.findings}, ${R.error} = excluded.${R.error}
  WHERE excluded.${R.askedAt} >= ${R.$table}.${R.askedAt}`;

/** Records that an agent was asked at `askedAt`, with how many findings, or why it could not answer. */
export async function recordReconciliation(db: D1Database, r: { agentClass: string; agentName: string; askedAt: number; findings: number; error: string | null }): Promise<void> {
  await db.prepare(UPSERT).bind(r.agentClass, r.agentName, r.askedAt, r.findings, r.error === null ? null : r.error.slice(0, 500)).run();
}
