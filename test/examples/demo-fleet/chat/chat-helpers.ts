import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { pollRows } from "../../../helpers";

/** A fresh ChatAgent stub with a unique name. */
export async function chatAgent(prefix = "chat") {
  const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  return { name, stub: await getAgentByName(env.ChatAgent, name) };
}

/** Re-resolves the stub after an eviction (the old one is broken). */
export function reconnect(name: string) {
  return getAgentByName(env.ChatAgent, name);
}

export type EventRow = { id: string; type: string; time: number; payload: string; incident_id: string | null; request_id: string | null };
export type IncidentRow = {
  incident_id: string;
  kind: string;
  agent_class: string;
  agent_name: string;
  status: string;
  reason: string | null;
  attempts: number;
  max_attempts: number | null;
  request_id: string | null;
};

/** Polls D1 until an event of `type` from agent `name` is stored, and returns all such events (oldest first). */
export async function eventsOfType(name: string, type: string, min = 1): Promise<EventRow[]> {
  return pollRows<EventRow>("SELECT * FROM events WHERE agent_name = ? AND type = ? ORDER BY time, id", [name, type], (r) => r.length >= min);
}

/** The chat-recovery events of one incident, oldest first, once `last` has arrived. */
export async function incidentEvents(incidentId: string, last: string): Promise<EventRow[]> {
  return pollRows<EventRow>("SELECT * FROM events WHERE incident_id = ? ORDER BY time, id", [incidentId], (r) => r.some((e) => e.type === last));
}

/** Polls the `incidents` projection until the row matches `check`. */
export async function incidentRow(incidentId: string, check: (r: IncidentRow) => boolean): Promise<IncidentRow> {
  const rows = await pollRows<IncidentRow>("SELECT * FROM incidents WHERE incident_id = ?", [incidentId], (r) => r.length === 1 && check(r[0]!));
  return rows[0]!;
}

/** An event's payload, parsed. */
export function payloadOf<T = Record<string, unknown>>(e: EventRow): T {
  return JSON.parse(e.payload) as T;
}

/** Step builders for scripts. */
export const text = (...chunks: string[]) => ({ kind: "text" as const, chunks });
export const stall = (...chunks: string[]) => ({ kind: "stall" as const, chunks });
export const fail = (message: string, statusCode: number, ...chunks: string[]) => ({ kind: "fail" as const, message, statusCode, chunks });

/** A first chunk that carries a credential, to check that partial output is masked before it leaves the agent. */
export const SECRET_CHUNK = "Your key is sk-test_ABCDEFGHIJKLMNOPQRST and";
export const SECRET_PREVIEW = "Your key is [masked: api key] and";
