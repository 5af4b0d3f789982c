import { z } from "zod";
import { HEARD_FROM_STEP_MS } from "../heard-from";
import { agents } from "../schema";
import { names, selectList } from "../sql-names";
import { flag, parseFilters, text } from "./filters";
import { cond, keysetPage, type ListOrder, type Page, type PageOptions } from "./paging";

/** Agents: last activity to the minute, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const AGENT_ORDER: ListOrder<AgentRow> = { tag: "agents", keyOf: (r) => [r.listedAt, r.agentClass, r.agentName] };
/** One class's agents: the same, within the class. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const AGENT_IN_CLASS_ORDER: ListOrder<AgentRow> = { tag: "agents:class", keyOf: (r) => [r.listedAt, r.agentName] };

/** The agent registry read model: who has ever reported, and when. */

/** How coarse an agent's lastSeen is (src/store/heard-from.ts): pages say so beside it. */
export { HEARD_FROM_STEP_MS };

export type AgentRow = {
  agentClass: string;
  agentName: string;
  firstSeen: number;
  /**
   * When the console last recorded hearing from it: an event's time, stored at most once per HEARD_FROM_STEP_MS, so
   * the agent may have sent more in the step after it (src/store/heard-from.ts).
   */
  lastSeen: number;
  /** The highest event number the agent sent that arrived (src/telemetry/seq.ts); null: no numbered event yet. */
  seqMax: number | null;
  /** How many distinct numbered events arrived. What is missing: see eventGapOf (event-gaps.ts). */
  seqSeen: number;
  /** last_seen to the minute: the lists' order (src/store/listed-at.ts). */
  listedAt: number;
};

const A = names(agents);
/** The agents columns every agent read returns, as AgentRow's fields. */
export const AGENT_SELECT = selectList(agents, ["agentClass", "agentName", "firstSeen", "lastSeen", "seqMax", "seqSeen", "listedAt"]);
const SELECT = AGENT_SELECT;

/** One registered agent, or null when it never reported. */
export async function findAgent(db: D1Database, agentClass: string, agentName: string): Promise<AgentRow | null> {
  return db.prepare(`SELECT ${SELECT} FROM ${A.$table} WHERE ${A.agentClass} = ? AND ${A.agentName} = ?`).bind(agentClass, agentName).first<AgentRow>();
}

export const agentFilters = z.object({ agentClass: text("agentClass") });
export type AgentFilters = z.output<typeof agentFilters>;

/**
 * The /agents list's filters: one class; gaps=true for only the agents with events missing (event-gaps.ts),
 * blocked=true for only the agents whose events cannot reach the console (blocked-agents.ts).
 */
export const agentListFilters = agentFilters
  .extend({ gaps: flag("gaps"), blocked: flag("blocked") })
  .refine((f) => !(f.gaps && f.blocked), { error: "gaps=true and blocked=true are two different lists: choose one." });

/**
 * Lists agents, most recently seen first, to the minute (listed_at, see src/store/listed-at.ts). All agents:
 * listed_at DESC then (class, name) DESC over agents_listed; one class: listed_at DESC, name DESC over
 * agents_class_listed. Either way O(page) rows read.
 */
export async function listAgents(db: D1Database, filters: { agentClass?: unknown }, page: PageOptions = {}): Promise<Page<AgentRow>> {
  const f = parseFilters(agentFilters, filters);
  if (f.agentClass === undefined) {
    return keysetPage<AgentRow>(
      db,
      {
        ...AGENT_ORDER,
        table: A.$table,
        index: "agents_listed",
        select: SELECT,
        order: [A.listedAt, A.agentClass, A.agentName],
        types: ["number", "string", "string"],
        dir: "DESC",
        where: [],
      },
      page,
    );
  }
  return keysetPage<AgentRow>(
    db,
    {
      ...AGENT_IN_CLASS_ORDER,
      table: A.$table,
      index: "agents_class_listed",
      select: SELECT,
      order: [A.listedAt, A.agentName],
      types: ["number", "string"],
      dir: "DESC",
      where: [cond(`${A.agentClass} = ?`, f.agentClass)],
    },
    page,
  );
}
