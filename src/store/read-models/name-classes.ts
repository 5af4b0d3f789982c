import { agents } from "../schema";
import { names } from "../sql-names";
import { MAX_ARMS } from "./paging";

/**
 * Classes one agent name may be merged over in one list page (one compound SELECT); a name under more is a bounded
 * scan of the newest rows instead. Each arm binds its own values (the class, the name, a cursor, since / until, the
 * residual filters: at most 11), well inside D1's 100 bound parameters per statement.
 */
export const MAX_NAME_CLASSES = MAX_ARMS;

const A = names(agents);

/**
 * The classes the agent registry has `agentName` under (agents_name), so a list filtered by a name alone can merge
 * its per-agent index over them instead of keeping an index by name (one more entry per row written). Every agent
 * that reported anything is in the registry (ingest upserts it with each of its events, retention keeps agents), so
 * no class means no row. `classes` is null when the name is under more than MAX_NAME_CLASSES.
 */
export async function classesOfName(db: D1Database, agentName: string): Promise<{ classes: string[] | null; rowsRead: number }> {
  const r = await db
    .prepare(`SELECT ${A.agentClass} AS c FROM ${A.$table} INDEXED BY agents_name WHERE ${A.agentName} = ? LIMIT ?`)
    .bind(agentName, MAX_NAME_CLASSES + 1)
    .all<{ c: string }>();
  const classes = r.results.map((x) => x.c);
  return { classes: classes.length > MAX_NAME_CLASSES ? null : classes, rowsRead: r.meta.rows_read ?? 0 };
}

/** SQL true when a row's class is one the registry has `agentName` under: a name alone, unordered (counts). */
export function classOfNameSql(classColumn: string): string {
  return `${classColumn} IN (SELECT ${A.agentClass} FROM ${A.$table} INDEXED BY agents_name WHERE ${A.agentName} = ?)`;
}
