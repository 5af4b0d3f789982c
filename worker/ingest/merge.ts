import type { Table } from "drizzle-orm";
import { type ColumnKey, type ColumnName, names } from "../../src/store/sql-names";

/**
 * Projection merge rules, declared once and interpreted twice: in JS (to fold
 * a batch's rows per key before writing) and in SQL (to fold them into what is
 * stored). Every rule is commutative and idempotent, so the same events in any
 * order, any batching, and any number of deliveries give the same rows.
 *
 * - `min` / `max`: the smallest / largest non-null value (strings compare too);
 * - a group name: the column takes its value from the row whose group stamp
 *   (columns `<group>At`, `<group>EventId` in the schema) is newest; a row that
 *   has no stamp for the group does not contribute to it.
 */
export type Rule<G extends string = string> = "min" | "max" | { latest: G };

/** The groups a table can stamp: each G for which it has both a `${G}At` and a `${G}EventId` column. */
export type StampGroup<T extends Table> = {
  [K in ColumnKey<T>]: K extends `${infer G}At` ? (`${G}EventId` extends ColumnKey<T> ? G : never) : never;
}[ColumnKey<T>];

/** The key of one of a group's stamp columns. */
type StampKey<T extends Table, G extends string, S extends "At" | "EventId"> = `${G}${S}` & ColumnKey<T>;

/** A projection as declared, in the schema's column keys, so a renamed or removed column fails typecheck. */
export type ProjectionDef<T extends Table> = {
  key: ColumnKey<T>[];
  /** Non-key columns and how they merge. Group stamp columns are added automatically. */
  columns: { [K in ColumnKey<T>]?: Rule<StampGroup<T>> };
  /** SQL defaults for NOT NULL columns a row may leave null. */
  defaults?: { [K in ColumnKey<T>]?: string };
};

/** A projection resolved to SQL names: what both interpreters run on. Rows are keyed by SQL column name. */
export type ProjectionSpec = {
  table: string;
  key: string[];
  columns: Record<string, Rule>;
  /** Each group's stamp columns: [time, event id]. */
  stamps: Record<string, readonly [at: string, eventId: string]>;
  defaults: Record<string, string>;
};

export type Row = Record<string, string | number | null>;

/** A group's stamp columns, as SQL names: [`<group>At`, `<group>EventId`]. */
export function stampColumns<T extends Table, G extends StampGroup<T>>(
  table: T,
  group: G,
): readonly [ColumnName<T, StampKey<T, G, "At">>, ColumnName<T, StampKey<T, G, "EventId">>] {
  const n = names(table);
  return [n[`${group}At` as StampKey<T, G, "At">], n[`${group}EventId` as StampKey<T, G, "EventId">]];
}

/** Declares how `table`'s projection merges, and resolves it to SQL names from the schema. */
export function projection<T extends Table>(table: T, def: ProjectionDef<T>): ProjectionSpec {
  const n = names(table);
  const bySqlName = <V>(o: { [K in ColumnKey<T>]?: V }) => Object.fromEntries(Object.entries(o).map(([k, v]) => [n[k as ColumnKey<T>], v])) as Record<string, V>;
  return {
    table: n.$table,
    key: def.key.map((k) => n[k]),
    columns: bySqlName(def.columns),
    stamps: Object.fromEntries(groups(def.columns).map((g) => [g, stampColumns(table, g)])),
    defaults: bySqlName(def.defaults ?? {}),
  };
}

const stampCols = (spec: ProjectionSpec, g: string) => spec.stamps[g]!;

function groups<G extends string>(columns: { [c: string]: Rule<G> | undefined }): G[] {
  return [...new Set(Object.values(columns).flatMap((r) => (typeof r === "object" ? [r.latest] : [])))];
}

/** All columns of a projection, in insert order. */
export function allColumns(spec: ProjectionSpec): string[] {
  return [...spec.key, ...Object.keys(spec.columns), ...groups(spec.columns).flatMap((g) => stampCols(spec, g))];
}

function isNewer(spec: ProjectionSpec, a: Row, b: Row, g: string): boolean {
  const [at, id] = stampCols(spec, g);
  const ta = a[at];
  if (ta === null || ta === undefined) return false;
  const tb = b[at];
  if (tb === null || tb === undefined) return true;
  return ta > tb || (ta === tb && String(a[id]) > String(b[id]));
}

/** Folds `incoming` into `stored` by the spec's rules (the JS interpreter). */
export function mergeRows(spec: ProjectionSpec, stored: Row, incoming: Row): Row {
  const out: Row = { ...stored };
  for (const [col, rule] of Object.entries(spec.columns)) {
    const a = stored[col] ?? null;
    const b = incoming[col] ?? null;
    if (rule === "min") out[col] = a === null ? b : b === null ? a : b < a ? b : a;
    else if (rule === "max") out[col] = a === null ? b : b === null ? a : b > a ? b : a;
  }
  for (const g of groups(spec.columns)) {
    if (!isNewer(spec, incoming, stored, g)) continue;
    for (const [col, rule] of Object.entries(spec.columns)) if (typeof rule === "object" && rule.latest === g) out[col] = incoming[col] ?? null;
    for (const c of stampCols(spec, g)) out[c] = incoming[c] ?? null;
  }
  return out;
}

/** Folds a batch's rows to one per key. */
export function foldRows(spec: ProjectionSpec, rows: Row[]): Row[] {
  const byKey = new Map<string, Row>();
  for (const r of rows) {
    const k = spec.key.map((c) => String(r[c])).join("\u0000");
    const prev = byKey.get(k);
    byKey.set(k, prev ? mergeRows(spec, prev, r) : r);
  }
  return [...byKey.values()];
}

/** The upsert statement (the SQL interpreter). Takes one parameter: a JSON array of rows. */
export function upsertSql(spec: ProjectionSpec): string {
  const t = spec.table;
  const cols = allColumns(spec);
  const select = cols.map((c) => {
    const v = `j ->> '$.${c}'`;
    return spec.defaults[c] ? `COALESCE(${v}, ${spec.defaults[c]})` : v;
  });
  const newer = (g: string) => {
    const [at, id] = stampCols(spec, g);
    return `(excluded.${at} IS NOT NULL AND (${t}.${at} IS NULL OR excluded.${at} > ${t}.${at} OR (excluded.${at} = ${t}.${at} AND excluded.${id} > ${t}.${id})))`;
  };
  const sets: string[] = [];
  for (const [c, rule] of Object.entries(spec.columns)) {
    if (rule === "min" || rule === "max") {
      const fn = rule.toUpperCase();
      sets.push(`${c} = CASE WHEN excluded.${c} IS NULL THEN ${t}.${c} WHEN ${t}.${c} IS NULL THEN excluded.${c} ELSE ${fn}(${t}.${c}, excluded.${c}) END`);
    } else sets.push(`${c} = CASE WHEN ${newer(rule.latest)} THEN excluded.${c} ELSE ${t}.${c} END`);
  }
  for (const g of groups(spec.columns)) for (const c of stampCols(spec, g)) sets.push(`${c} = CASE WHEN ${newer(g)} THEN excluded.${c} ELSE ${t}.${c} END`);
  return `INSERT INTO ${t} (${cols.join(", ")})
SELECT ${select.join(", ")} FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT(${spec.key.join(", ")}) DO UPDATE SET ${sets.join(", ")}`;
}
