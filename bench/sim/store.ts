import { getTableName, is } from "drizzle-orm";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../../src/store/schema";

/**
 * What the store holds, read without knowing its tables: every table src/store/schema.ts declares (so a table
 * added, renamed or dropped by another change is counted as it is), and the database's size in bytes.
 */

/** The SQL names of every table the schema declares. */
export const schemaTables = (): string[] => (Object.values(schema) as unknown[]).flatMap((v) => (is(v, SQLiteTable) ? [getTableName(v)] : []));

/** Rows per schema table. */
export async function tableRows(db: D1Database): Promise<Record<string, number>> {
  const tables = schemaTables();
  const rs = await db.batch<{ n: number }>(tables.map((t) => db.prepare(`SELECT COUNT(*) AS n FROM "${t}"`)));
  return Object.fromEntries(tables.map((t, i) => [t, Number(rs[i]!.results[0]?.n ?? 0)]));
}

export const totalRows = (rows: Record<string, number>) => Object.values(rows).reduce((a, b) => a + b, 0);

/**
 * The database's size in bytes: page_count × page_size (local D1 answers these PRAGMAs), else the size D1
 * reports after a statement (`meta.size_after`, what Cloudflare bills as storage).
 */
export async function dbBytes(db: D1Database): Promise<{ bytes: number; how: string }> {
  try {
    const [count, size] = await db.batch<Record<string, number>>([db.prepare("PRAGMA page_count"), db.prepare("PRAGMA page_size")]);
    const pages = Number(Object.values(count!.results[0] ?? {})[0]);
    const pageSize = Number(Object.values(size!.results[0] ?? {})[0]);
    if (pages > 0 && pageSize > 0) return { bytes: pages * pageSize, how: "PRAGMA page_count*page_size" };
  } catch {
    // Not allowed here: fall back to meta.
  }
  const r = await db.prepare("SELECT 1").run();
  return { bytes: Number(r.meta.size_after ?? Number.NaN), how: "meta.size_after" };
}
