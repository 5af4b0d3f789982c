import { type IncidentBudget, type IncidentRow, incidentBudget } from "../../src/store/console-store";
import { consoleAdminClient } from "../admin-client";
import type { ConsoleContext } from "./context";

/**
 * An open incident's recovery budget: its row, and the agent's own record of it read through admin RPC
 * (adminRecoveryBudget, read-only). Never throws: an agent that cannot answer leaves the figures its events carry.
 */
export async function budgetOf(c: ConsoleContext, incident: IncidentRow): Promise<IncidentBudget> {
  if (incident.kind !== "chat") return incidentBudget(incident, null, Date.now());
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const r = await admin.recoveryBudget({ agentClass: incident.agentClass, agentName: incident.agentName }, { incidentId: incident.incidentId });
  return incidentBudget(incident, r, r.ok ? r.value.now : Date.now());
}
