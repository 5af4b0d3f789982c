/**
 * What one row of each table weighs, estimated from its stored values: where local D1 does not answer dbstat, the
 * store's measured growth is split between the tables by these weights, not by row counts (a run or a timeline
 * segment weighs far more than an ambiguous op, and an even split made small tables look large).
 *
 * A row weighs its values (a record header byte each, text by its UTF-8 bytes, integers by their width) and a few
 * bytes of cell overhead; a rowid table adds the rowid, and a composite key on one its automatic index; each
 * index entry weighs its columns plus the row's key (the primary key's columns, or the rowid), and a partial
 * index counts only the rows its WHERE holds. Page fill and free pages are left out: the split keeps the measured
 * total, so only the tables' proportions come from here.
 */

import { is } from "drizzle-orm";
import { getTableConfig, SQLiteSyncDialect, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../../src/store/schema";

/** Cell pointer and payload header of one b-tree entry, roughly. */
const CELL = 4;
const ROWID = 8;

/** The bytes one value takes in a record: its header byte and its body. */
const valueBytes = (c: string) =>
  `(CASE typeof(${c}) WHEN 'null' THEN 1 WHEN 'integer' THEN (CASE WHEN abs(${c}) < 128 THEN 2 WHEN abs(${c}) < 32768 THEN 3 WHEN abs(${c}) < 2147483648 THEN 5 ELSE 7 END) WHEN 'real' THEN 9 ELSE 1 + length(CAST(${c} AS BLOB)) END)`;

const sumOf = (cols: string[]) => (cols.length ? cols.map(valueBytes).join(" + ") : "0");

/** The SQL that sums one table's estimated bytes (its rows and index entries), and its name. */
function weightSql(table: SQLiteTable): { name: string; sql: string } {
  const cfg = getTableConfig(table);
  const columns = cfg.columns.map((c) => `"${c.name}"`);
  const composite = cfg.primaryKeys[0]?.columns.map((c) => `"${c.name}"`);
  const key = composite ?? cfg.columns.filter((c) => c.primary).map((c) => `"${c.name}"`);
  const withoutRowid = (schema.withoutRowid as readonly SQLiteTable[]).includes(table);
  const dialect = new SQLiteSyncDialect();
  const parts = [`${sumOf(columns)} + ${CELL + (withoutRowid ? 0 : ROWID)}`];
  // A rowid table's composite key has an index of its own (sqlite_autoindex): the key and the rowid.
  if (!withoutRowid && composite) parts.push(`${sumOf(composite)} + ${ROWID + CELL}`);
  for (const ix of cfg.indexes) {
    const cols = ix.config.columns.flatMap((c) => ("name" in c && typeof c.name === "string" ? [`"${c.name}"`] : []));
    // Each entry ends with the row's key: the primary key's columns not already in it, or the rowid.
    const tail = withoutRowid ? `${sumOf(key.filter((k) => !cols.includes(k)))} + ${CELL}` : `${ROWID + CELL}`;
    const entry = `${sumOf(cols)} + ${tail}`;
    const where = ix.config.where ? dialect.sqlToQuery(ix.config.where).sql : null;
    parts.push(where ? `(CASE WHEN ${where} THEN ${entry} ELSE 0 END)` : entry);
  }
  return { name: cfg.name, sql: `SELECT COUNT(*) AS n, COALESCE(SUM(${parts.join(" + ")}), 0) AS b FROM "${cfg.name}"` };
}

/** Every table of the schema. */
const TABLES: SQLiteTable[] = (Object.values(schema) as unknown[]).filter((v): v is SQLiteTable => is(v, SQLiteTable));

/** Estimated bytes per row (row and index entries) of each table that has rows, from what it holds now. */
export async function rowWeights(db: D1Database): Promise<Record<string, number>> {
  const queries = TABLES.map(weightSql);
  const results = await db.batch<{ n: number; b: number }>(queries.map((q) => db.prepare(q.sql)));
  const out: Record<string, number> = {};
  queries.forEach((q, i) => {
    const r = results[i]?.results[0];
    if (r && r.n > 0) out[q.name] = Number(r.b) / Number(r.n);
  });
  return out;
}
