import type { AnyColumnSet } from "./components/columns";
import { INCIDENT_COLUMN_SET } from "./components/incident-table";
import { OP_COLUMN_SET } from "./components/ops-table";
import type { ListName } from "./links";
import { AGENT_COLUMN_SET, agentColumnSetFor } from "./pages/agents";
import { ALERT_COLUMN_SET } from "./pages/alerts";
import { AUDIT_COLUMN_SET, BACKUP_COLUMN_SET } from "./pages/lists";
import { RUN_COLUMN_SET } from "./pages/runs";
import { SESSION_COLUMN_SET } from "./pages/sessions";
import { STUCK_COLUMN_SET } from "./pages/stuck";

/**
 * The lists with a column choice (`cols=`), by name: each list's one declaration, which its page, its phone cards
 * and its download share. The events list is a timeline, not a table: it has none.
 */
export const LIST_COLUMNS: Partial<Record<ListName, AnyColumnSet>> = {
  incidents: INCIDENT_COLUMN_SET,
  runs: RUN_COLUMN_SET,
  sessions: SESSION_COLUMN_SET,
  ops: OP_COLUMN_SET,
  backups: BACKUP_COLUMN_SET,
  audit: AUDIT_COLUMN_SET,
  agents: AGENT_COLUMN_SET,
  stuck: STUCK_COLUMN_SET,
  alerts: ALERT_COLUMN_SET,
};

/**
 * The column declaration of `list` as filtered: the list's own, except where a filter lists other rows (the agents
 * whose events cannot reach the console). The export's `cols=` and its empty file's header follow it.
 */
export function listColumnsFor(list: ListName, filters: Record<string, string | undefined>): AnyColumnSet | undefined {
  return list === "agents" ? agentColumnSetFor(filters) : LIST_COLUMNS[list];
}
