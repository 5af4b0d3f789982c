import { type Correlation, type EventType, type PayloadOf, type Source, Telemetry } from "@agent-oncall/telemetry";
import { consoleConfig } from "./config";
import type { Env } from "./env";

/** One event the console records on an agent's behalf (an admin action's consequence, a reconciliation finding). */
export type ConsoleEvent<T extends EventType = EventType> = T extends EventType ? { type: T; payload: PayloadOf<T>; corr?: Correlation } : never;

/**
 * Sends events about an agent through the telemetry Queue, the one path into
 * the projections, with the agent as source. Signed with the shared secret when
 * the console has one, or ingest would dead-letter the console's own events.
 */
export async function emitForAgent(env: Env, source: Source, events: readonly ConsoleEvent[]): Promise<void> {
  if (!events.length) return;
  const telemetry = new Telemetry({ source, queue: env.TELEMETRY_QUEUE, signingSecret: consoleConfig(env).ingest.signingSecret });
  for (const e of events) telemetry.record(e.type, e.payload as never, e.corr ?? {});
  await telemetry.settle();
}
