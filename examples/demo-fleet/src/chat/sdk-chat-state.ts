import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX } from "agents/chat";

/**
 * Read-only views of chat state the SDK keeps in the agent's storage (agents
 * 0.32 / @cloudflare/think 0.23 layout). Used by drivers and tests to wait for
 * durable facts and to compare the SDK's own records with what telemetry shipped.
 */

/** The SDK's durable record of a chat-recovery incident (KV, key prefix `cf:chat-recovery:incident:`). */
export type SdkRecoveryIncident = {
  incidentId: string;
  requestId: string;
  recoveryRootRequestId?: string;
  recoveryKind: "retry" | "continue";
  attempt: number;
  maxAttempts: number;
  status: string;
  reason?: string;
  interruptedAttempts?: number;
  transientRetries?: number;
  progress?: number;
  workBaseline?: number;
};

/** Every recovery incident record the SDK still holds (completed ones are deleted by the SDK). */
export async function sdkRecoveryIncidents(storage: DurableObjectStorage): Promise<SdkRecoveryIncident[]> {
  const rows = await storage.list<SdkRecoveryIncident>({ prefix: CHAT_RECOVERY_INCIDENT_KEY_PREFIX });
  return [...rows.values()];
}

/** Number of stored stream blocks of chat streams still in the `streaming` state (flushed, so they survive eviction). */
export function durableStreamingBlocks(sql: SqlStorage): number {
  const exists = sql
    .exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('cf_agents_streams', 'cf_agents_stream_blocks')")
    .one().n;
  if (exists < 2) return 0;
  return sql
    .exec<{ n: number }>(
      "SELECT COUNT(*) AS n FROM cf_agents_stream_blocks b JOIN cf_agents_streams s ON s.stream_id = b.stream_id WHERE s.state = 'streaming'",
    )
    .one().n;
}
