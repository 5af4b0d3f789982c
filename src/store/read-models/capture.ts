import { parseAgentKeyName, parseWorkerClassKey } from "@agent-oncall/telemetry";
import { tailObjects } from "../schema";
import { names } from "../sql-names";

const O = names(tailObjects);

/**
 * How an agent's events reach the console, as its own records say (issue 34, "the console knows how each agent's
 * events arrive"): its Worker's tail, when an object of it published an SDK message the tail read (`tail_objects`),
 * and its telemetry outbox, when numbered events of it arrived. Both may be true (each event is stored once).
 */
export type CapturePaths = {
  /** The last time the tail recorded an object of this agent (it records one again only when something changed), and the Worker named ('' locally). */
  tail: { worker: string; recordedAt: number } | null;
  /** Numbered events arrived: the opt-in outbox of `@agent-oncall/telemetry` sends them. */
  outbox: boolean;
};

/**
 * Whether the tail has recorded an object of this agent: one row of `tail_objects_agent`. The table keeps the class
 * and name the SDK published, so a key is read back to them: a sub-agent's key name holds its ancestry
 * (src/telemetry/sub-agents.ts) and an agent keyed apart by its Worker names it (src/telemetry/workers.ts).
 */
export async function tailRecordOf(home: D1Database, agent: { agentClass: string; agentName: string }): Promise<CapturePaths["tail"]> {
  const other = parseWorkerClassKey(agent.agentClass);
  const agentClass = other?.agentClass ?? agent.agentClass;
  const agentName = parseAgentKeyName(agent.agentName)?.name ?? agent.agentName;
  const where = other ? `AND ${O.worker} = ?3 AND substr(${O.objectId}, 1, length(?4)) = ?4` : "";
  const row = await home
    .prepare(
      `SELECT ${O.worker} AS worker, ${O.seenAt} AS recordedAt FROM ${O.$table} INDEXED BY tail_objects_agent
      WHERE ${O.agentClass} = ?1 AND ${O.agentName} = ?2 ${where} ORDER BY ${O.seenAt} DESC LIMIT 1`,
    )
    .bind(agentClass, agentName, ...(other ? [other.worker ?? "", other.worker ? "" : (other.objectPrefix ?? "")] : []))
    .first<{ worker: string; recordedAt: number }>();
  return row ?? null;
}
