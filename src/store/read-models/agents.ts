import { z } from "zod";
import { parseFilters, text } from "./filters";
import { type Page, type PageOptions, cond, keysetPage } from "./paging";

/** The agent registry read model: who has ever reported, and when. */

export type AgentRow = { agentClass: string; agentName: string; firstSeen: number; lastSeen: number };

const SELECT = "agent_class AS agentClass, agent_name AS agentName, first_seen AS firstSeen, last_seen AS lastSeen";

/** One registered agent, or null when it never reported. */
export async function findAgent(db: D1Database, agentClass: string, agentName: string): Promise<AgentRow | null> {
  return db.prepare(`SELECT ${SELECT} FROM agents WHERE agent_class = ? AND agent_name = ?`).bind(agentClass, agentName).first<AgentRow>();
}

export const agentFilters = z.object({ agentClass: text("agentClass") });
export type AgentFilters = z.output<typeof agentFilters>;

/**
 * Lists agents, most recently seen first. All agents: last_seen DESC then
 * (class, name) DESC over agents_last_seen; one class: last_seen DESC,
 * name DESC over agents_class_last_seen. Either way O(page) rows read.
 */
export async function listAgents(db: D1Database, filters: { agentClass?: unknown }, page: PageOptions = {}): Promise<Page<AgentRow>> {
  const f = parseFilters(agentFilters, filters);
  if (f.agentClass === undefined) {
    return keysetPage<AgentRow>(
      db,
      {
        tag: "agents",
        table: "agents",
        index: "agents_last_seen",
        select: SELECT,
        order: ["last_seen", "agent_class", "agent_name"],
        types: ["number", "string", "string"],
        dir: "DESC",
        where: [],
        keyOf: (r) => [r.lastSeen, r.agentClass, r.agentName],
      },
      page,
    );
  }
  return keysetPage<AgentRow>(
    db,
    {
      tag: "agents:class",
      table: "agents",
      index: "agents_class_last_seen",
      select: SELECT,
      order: ["last_seen", "agent_name"],
      types: ["number", "string"],
      dir: "DESC",
      where: [cond("agent_class = ?", f.agentClass)],
      keyOf: (r) => [r.lastSeen, r.agentName],
    },
    page,
  );
}
