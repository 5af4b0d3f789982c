import { maskSecrets } from "@agent-oncall/telemetry";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX } from "./sdk-layout.js";
import type { DerivedStatus, ListRunsOutput, RunDetail, StatusOutput } from "./contract.js";

/**
 * Read-only views of an agent's own storage, as the agents SDK (0.32) lays it
 * out: `cf_agents_runs` (live runFiber rows), `cf_agents_fibers` (managed
 * fibers), `cf_agents_jobs` (schedules) and the chat-recovery incident records
 * in KV. Each read tolerates a table the agent never created.
 */

/** Snapshots larger than this are returned as truncated text with an explicit marker. */
export const SNAPSHOT_CAP_BYTES = 64 * 1024;
const SCHEDULES_SHOWN = 20;
const FIBERS_SHOWN = 50;

type Sql = SqlStorage;

function rows<T extends Record<string, SqlStorageValue>>(sql: Sql, query: string, ...binds: unknown[]): T[] {
  try {
    return sql.exec<T>(query, ...binds).toArray();
  } catch (e) {
    if (e instanceof Error && /no such table/i.test(e.message)) return [];
    throw e;
  }
}

/** Live run rows and the managed-fiber ledger. */
export function readRuns(sql: Sql, now = Date.now()): ListRunsOutput {
  const runs = rows<{ id: string; name: string; created_at: number; bytes: number }>(
    sql,
    "SELECT id, name, created_at, COALESCE(length(CAST(snapshot AS BLOB)), 0) AS bytes FROM cf_agents_runs ORDER BY created_at, id",
  ).map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, ageMs: Math.max(0, now - r.created_at), snapshotBytes: r.bytes }));
  const managedFibers = rows<{ fiber_id: string; name: string; status: string; created_at: number; completed_at: number | null; bytes: number }>(
    sql,
    `SELECT fiber_id, name, status, created_at, completed_at, COALESCE(length(CAST(snapshot AS BLOB)), 0) AS bytes
     FROM cf_agents_fibers ORDER BY created_at DESC, fiber_id LIMIT ${FIBERS_SHOWN}`,
  ).map((r) => ({ fiberId: r.fiber_id, name: r.name, status: r.status, createdAt: r.created_at, completedAt: r.completed_at, snapshotBytes: r.bytes }));
  return { runs, managedFibers };
}

/** One run with its snapshot: parsed JSON when it fits under the cap, else truncated text. */
export function readRun(sql: Sql, id: string, now = Date.now()): RunDetail | null {
  const [r] = rows<{ id: string; name: string; created_at: number; snapshot: string | null }>(
    sql,
    "SELECT id, name, created_at, snapshot FROM cf_agents_runs WHERE id = ?",
    id,
  );
  if (!r) return null;
  const text = r.snapshot ?? null;
  const bytes = text ? new TextEncoder().encode(text).byteLength : 0;
  const base = { id: r.id, name: r.name, createdAt: r.created_at, ageMs: Math.max(0, now - r.created_at), snapshotBytes: bytes };
  if (text === null) return { ...base, snapshot: null, snapshotText: null, truncated: false };
  if (bytes > SNAPSHOT_CAP_BYTES) {
    // Masked before the cut, so a credential at the cut keeps none of its characters.
    const masked = maskSecrets(text.slice(0, 2 * SNAPSHOT_CAP_BYTES));
    return { ...base, snapshot: null, snapshotText: `${masked.slice(0, SNAPSHOT_CAP_BYTES)}… [truncated: ${bytes} bytes, showing the first ${SNAPSHOT_CAP_BYTES}]`, truncated: true };
  }
  try {
    return { ...base, snapshot: JSON.parse(text), snapshotText: text, truncated: false };
  } catch {
    return { ...base, snapshot: null, snapshotText: text, truncated: false };
  }
}

/** Everything `status()` reports. `derived` comes from the agent (hook) or the run rows. */
export async function readStatus(sql: Sql, storage: DurableObjectStorage, derived: DerivedStatus | null): Promise<StatusOutput> {
  const runCount = Number(rows<{ n: number }>(sql, "SELECT COUNT(*) AS n FROM cf_agents_runs")[0]?.n ?? 0);
  const schedules = rows<{ id: string; fn: string; time: number; running: number }>(
    sql,
    `SELECT id, fn, time, running FROM cf_agents_jobs ORDER BY time, id LIMIT ${SCHEDULES_SHOWN}`,
  ).map((j) => ({ id: j.id, callback: j.fn, time: j.time, running: j.running === 1 }));
  const pendingScheduleCount = Number(rows<{ n: number }>(sql, "SELECT COUNT(*) AS n FROM cf_agents_jobs")[0]?.n ?? 0);
  const incidents = await storage.list<Record<string, unknown>>({ prefix: CHAT_RECOVERY_INCIDENT_KEY_PREFIX });
  const chatRecoveryIncidents = [...incidents].map(([key, v]) => ({
    key,
    status: typeof v?.status === "string" ? v.status : "unknown",
    attempt: typeof v?.attempt === "number" ? v.attempt : null,
    reason: typeof v?.reason === "string" ? v.reason : null,
    requestId: typeof v?.requestId === "string" ? v.requestId : null,
  }));
  return {
    status: derived ?? (runCount > 0 ? "running" : "idle"),
    runCount,
    nextAlarm: await storage.getAlarm(),
    schedules,
    pendingScheduleCount,
    chatRecoveryIncidents,
  };
}
