import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";

/**
 * SQL names read off the drizzle schema, for the statements we write by hand (json_each ingest,
 * keyset pages, INDEXED BY). Spelling names through here makes a column renamed or removed in
 * schema.ts a type error at every use, instead of a "no such column" in production.
 */

/** A column's key in the schema (`agentClass`). */
export type ColumnKey<T extends Table> = keyof T["_"]["columns"] & string;

/** A column's SQL name (`agent_class`), as a literal type. */
export type ColumnName<T extends Table, K extends ColumnKey<T>> = T["_"]["columns"][K]["_"]["name"];

/** A table's SQL names: `$table`, and each column key mapped to its column's name. */
export type SqlNames<T extends Table> = { readonly $table: T["_"]["name"] } & { readonly [K in ColumnKey<T>]: ColumnName<T, K> };

/**
 * A row keyed by SQL column names, e.g. the JSON a statement reads with `j ->> '$.agent_class'`.
 * Any column may be null (a merge or a COALESCE default fills it).
 */
export type SqlRow<T extends Table, K extends ColumnKey<T> = ColumnKey<T>> = {
  [P in K as ColumnName<T, P>]: T["_"]["columns"][P]["_"]["data"] | null;
};

const cache = new WeakMap<Table, object>();

/** The SQL names of `table`: `names(agents).agentClass` is `"agent_class"`, `.$table` is `"agents"`. Cached per table. */
export function names<T extends Table>(table: T): SqlNames<T> {
  const cached = cache.get(table);
  if (cached) return cached as SqlNames<T>;
  const cols = Object.entries(getTableColumns(table)).map(([key, c]) => [key, c.name]);
  const n = Object.freeze({ ...Object.fromEntries(cols), $table: getTableName(table) });
  cache.set(table, n);
  return n as SqlNames<T>;
}

/**
 * A SELECT list that returns `keys` under their schema keys: `agent_class AS agentClass, kind`.
 * A column is aliased only when its name differs from its key, and always would be after a rename,
 * so rows keep their shape.
 */
export function selectList<T extends Table>(table: T, keys: readonly ColumnKey<T>[]): string {
  const n: Record<string, string> = names(table);
  return keys
    .map((k) => {
      if (n[k] === undefined) throw new Error(`${n.$table} has no column ${k}`);
      return n[k] === k ? k : `${n[k]} AS ${k}`;
    })
    .join(", ");
}

/** A table's primary key columns by SQL name, in key order. */
export function keyColumns(table: SQLiteTable): string[] {
  const c = getTableConfig(table);
  const composite = c.primaryKeys[0];
  const cols = composite ? composite.columns : c.columns.filter((col) => col.primary);
  if (!cols.length) throw new Error(`${c.name} has no primary key`);
  return cols.map((col) => col.name);
}
