/** The agent registry read model: who has ever reported, and when. */

export type AgentRow = { agentClass: string; agentName: string; firstSeen: number; lastSeen: number };

/** One registered agent, or null when it never reported. */
export async function findAgent(db: D1Database, agentClass: string, agentName: string): Promise<AgentRow | null> {
  return db
    .prepare("SELECT agent_class AS agentClass, agent_name AS agentName, first_seen AS firstSeen, last_seen AS lastSeen FROM agents WHERE agent_class = ? AND agent_name = ?")
    .bind(agentClass, agentName)
    .first<AgentRow>();
}
