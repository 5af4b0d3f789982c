import { CHAT_RECOVERY_TASK_NAME, CHAT_TURN_NAME } from "./facts.js";
/**
 * Facts about the agents SDK (0.32) that admin RPC relies on and that the SDK
 * does not export as public API (or exports only with the AI SDK). Every one is
 * pinned by test/admin-rpc/sdk-layout.test.ts against the installed SDK, so an
 * upgrade that moves one fails there, not in an operator's hands.
 */

/**
 * Rows of a query on one of the SDK's own tables; none when the agent never created the table (it never used that
 * feature). A missing column is not tolerated: that is an SDK whose layout we do not know, and the read fails
 * (unavailable) rather than answering "none". The one place admin RPC tolerates a missing SDK table.
 */
export function sdkRows<T extends Record<string, SqlStorageValue>>(sql: SqlStorage, query: string, ...binds: unknown[]): T[] {
  try {
    return sql.exec<T>(query, ...binds).toArray();
  } catch (e) {
    if (e instanceof Error && /no such table/i.test(e.message)) return [];
    throw e;
  }
}

/** A field of one of the SDK's loosely typed records (KV values, Tasks metadata), when it is a string; else null. */
export const textOf = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** The chat-recovery incident records in KV, each with the incident id it belongs to (chatIncidentIdOf). */
export async function chatRecoveryRecords(
  storage: DurableObjectStorage,
): Promise<{ key: string; incidentId: string; record: Record<string, unknown> | undefined }[]> {
  const listed = await storage.list<Record<string, unknown> | undefined>({ prefix: CHAT_RECOVERY_INCIDENT_KEY_PREFIX });
  return [...listed].map(([key, record]) => ({ key, incidentId: chatIncidentIdOf(key, record), record }));
}

/**
 * Statuses of a chat-recovery record whose incident the SDK is still recovering (`agents/chat`
 * listActiveChatRecoveryIncidents). Any other (exhausted, failed, completed, skipped) is an incident the SDK has
 * already closed: its record stays in KV for up to an hour (its stale-incident sweep), so it is not live work.
 */
export const CHAT_RECOVERY_LIVE_STATUSES: ReadonlySet<string> = new Set(["detected", "scheduled", "attempting"]);

/** KV key prefix of chat-recovery incident records (`agents/chat` exports the same constant). */
export const CHAT_RECOVERY_INCIDENT_KEY_PREFIX = "cf:chat-recovery:incident:";

/**
 * The incident id of a chat-recovery record: the record's own `incidentId`, else the key's tail
 * (the SDK keys records by `encodeURIComponent(incidentId)`). It is the id the SDK's chat:recovery:*
 * events carry, hence the one the console's incidents use.
 */
export function chatIncidentIdOf(key: string, record: unknown): string {
  const own = (record as { incidentId?: unknown } | null)?.incidentId;
  if (typeof own === "string" && own) return own;
  const tail = key.slice(CHAT_RECOVERY_INCIDENT_KEY_PREFIX.length);
  try {
    return decodeURIComponent(tail);
  } catch {
    return tail;
  }
}

/**
 * Task definition of a chat turn (Think / AIChatAgent `CHAT_FIBER_NAME`); its run's metadata carries `{ requestId }`.
 * The telemetry owns the name (src/telemetry/sdk-names.ts): events and admin reads must agree on it.
 */
export const CHAT_TURN_TASK = CHAT_TURN_NAME;
/**
 * Task definition of a chat recovery's transport (agents/chat `CHAT_RECOVERY_TASK_NAME`): one short run per recovery
 * attempt, its metadata `{ callback, incidentId, recoveredRequestId? }`. It serves the turn its incident recovers.
 */
export const CHAT_RECOVERY_TASK = CHAT_RECOVERY_TASK_NAME;
/** A chat turn run as a plain fiber (sub-agents) is named `${CHAT_TURN_TASK}:${requestId}`. */
export const CHAT_TURN_FIBER_PREFIX = `${CHAT_TURN_TASK}:`;

/** The request id of a chat turn run as a fiber, from its name; null for any other fiber. */
export function chatTurnRequestIdOf(fiberName: string): string | null {
  return fiberName.startsWith(CHAT_TURN_FIBER_PREFIX) ? fiberName.slice(CHAT_TURN_FIBER_PREFIX.length) || null : null;
}

/** Tasks run states that are final (`cf_agents_task_runs.state`). Anything else is live work. */
export const TASK_TERMINAL_STATES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);
/** Managed-fiber statuses that are final or parked (`FiberStatus`); anything else is live work. */
export const FIBER_DONE_STATUSES: ReadonlySet<string> = new Set(["completed", "aborted", "error", "interrupted"]);

/**
 * Ids of the runFiber callbacks running in this instance right now (managed fibers included). The SDK
 * keeps them in the private `_runFiberActiveFibers` set and offers no public view; it is the only way
 * to tell a callback still running in memory from a row left behind by an eviction. `null` when the
 * field is missing (another SDK version): callers then treat every row as possibly running.
 */
export function activeFiberIds(agent: object): ReadonlySet<string> | null {
  const s = (agent as { _runFiberActiveFibers?: unknown })._runFiberActiveFibers;
  return s instanceof Set ? (s as Set<string>) : null;
}

/**
 * The step a Tasks run is at: its newest unfinished step in `cf_agents_task_steps`, else its newest
 * finished one. The public Tasks API shows only `statusMessage`, which a handler may never set.
 */
export function taskCurrentStep(sql: SqlStorage, runId: string): string | null {
  const row = taskStepAt(sql, runId);
  return row ? (row.state === "completed" ? `${row.name} (done)` : `${row.name} (${row.state})`) : null;
}

/**
 * The step a Tasks run is at, by name, with its state (`running`, `waiting`, `failed`, `completed`): its newest
 * unfinished step, else the one it last touched (for a failed run, the step that failed). Null without steps.
 */
export function taskStepAt(sql: SqlStorage, runId: string): { name: string; state: string } | null {
  return (
    sdkRows<{ name: string; state: string }>(
      sql,
      `SELECT step_name AS name, state FROM cf_agents_task_steps WHERE run_id = ?
     ORDER BY CASE WHEN state IN ('running', 'waiting') THEN 0 ELSE 1 END, updated_at DESC LIMIT 1`,
      runId,
    )[0] ?? null
  );
}

/**
 * KV key under which the SDK keeps the snapshot of the chat turn a carrier Tasks run executes
 * (`__cf_chat_turn_snapshot:<runId>`, agents/chat turn-task, agents 0.32). Its envelope names the turn's request id
 * and the user turn it runs for (`recoveryRootRequestId`): see chatTurnRootOf.
 */
export const CHAT_TURN_SNAPSHOT_KEY_PREFIX = "__cf_chat_turn_snapshot:";

/** The user turn a chat turn's snapshot says it runs for (`recoveryRootRequestId` in Think's / AIChatAgent's envelope), or null. */
export function chatTurnRootOf(snapshot: unknown): string | null {
  if (!snapshot || typeof snapshot !== "object") return null;
  for (const [key, inner] of Object.entries(snapshot as Record<string, unknown>)) {
    if (!key.endsWith("ChatFiberSnapshot") || !inner || typeof inner !== "object") continue;
    const root = (inner as { recoveryRootRequestId?: unknown }).recoveryRootRequestId;
    if (typeof root === "string" && root) return root;
  }
  return null;
}

/**
 * The job owners (`cf_agents_jobs.capability`) whose callbacks the SDK's alarm loop runs and awaits one by one:
 * `this.queue(...)` items and `this.schedule(...)` callbacks (Think runs its submissions as queued callbacks).
 * While one runs, an alarm started now waits for it, and re-dispatches it meanwhile (the loop takes every due
 * row, running or not, and only single-flight rows are skipped).
 */
export const ALARM_LOOP_JOB_OWNERS = { queue: "queued_callback", scheduler: "scheduled_callback" } as const;

/**
 * Queued and scheduled callbacks the SDK's alarm loop marked running (`cf_agents_jobs.running`,
 * `execution_started_at` in ms) at or after `since`: pass the instance's start, so a mark left by an instance
 * that died mid-callback (nothing runs it any more) does not count.
 */
export function runningAlarmJobs(sql: SqlStorage, since: number): { id: string; owner: keyof typeof ALARM_LOOP_JOB_OWNERS; fn: string; startedAt: number }[] {
  // Named in the query as the caller reads them: no reshaping in the agent.
  return sdkRows<{ id: string; owner: keyof typeof ALARM_LOOP_JOB_OWNERS; fn: string; startedAt: number }>(
    sql,
    `SELECT id, capability AS owner, fn, execution_started_at AS startedAt FROM cf_agents_jobs
     WHERE running = 1 AND capability IN ('queue', 'scheduler') AND execution_started_at >= ? ORDER BY execution_started_at, id LIMIT 50`,
    since,
  );
}

/** The id of the job row that carries the keepAlive heartbeat (`HOST_JOB_KEEP_ALIVE_ID`, agents 0.32). */
export const KEEP_ALIVE_JOB_ID = "cf:keep-alive";

/**
 * The agent's keepAlive holders: the SDK counts live `keepAlive()` refs in the private `_keepAliveRefs` and
 * offers no public view, nor any record of when each was taken. `holders` is null when the field is missing
 * (another SDK version); `intervalMs` is the heartbeat period (`static options.keepAliveIntervalMs`).
 */
export function keepAliveOf(agent: object): { holders: number | null; intervalMs: number | null; jobId: string } {
  const a = agent as { _keepAliveRefs?: unknown; _resolvedOptions?: { keepAliveIntervalMs?: unknown } };
  const interval = a._resolvedOptions?.keepAliveIntervalMs;
  return {
    holders: typeof a._keepAliveRefs === "number" ? a._keepAliveRefs : null,
    intervalMs: typeof interval === "number" ? interval : null,
    jobId: KEEP_ALIVE_JOB_ID,
  };
}
