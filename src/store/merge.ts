import type { Table } from "drizzle-orm";
import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { type ColumnKey, type ColumnName, names } from "./sql-names";

/**
 * Projection merge rules, declared once and interpreted twice: in JS (to fold
 * a batch's rows per key before writing) and in SQL (to fold them into what is
 * stored). Every rule but `coarse` is commutative and idempotent, so the same
 * events in any order, any batching, and any number of deliveries give the same
 * rows; a coarse column is idempotent, and within its step of that.
 *
 * - `min` / `max`: the smallest / largest non-null value (strings compare too);
 * - a group name: the column takes its value from the row whose group stamp
 *   (columns `<group>At`, `<group>EventId` in the schema) is newest; a row that
 *   has no stamp for the group does not contribute to it. A group may declare a
 *   rank (`ranks`): a value of one column that outranks time, so the row with the
 *   highest rank wins first and time decides among equals (still a total order,
 *   so still commutative and idempotent);
 * - `{ earliest: C }`: the column takes its value from the row whose time column
 *   C is smallest (ties: the larger value); a row without both does not
 *   contribute. C itself must merge by `min` (an incident's deploy: the version
 *   of its earliest versioned event);
 * - `{ coarse: S, of?: C, or?: SQL }`: a maximum that is stored only when it moves by at least S (in the units of
 *   column C, the column itself by default), or, when `or` holds of the stored row, by any amount. For a figure
 *   that moves with nearly every event (an agent's last activity) but that a person reads to within S: the row is
 *   written once per S, not per message. Not a pure maximum, so not order-independent: the stored value is within
 *   S below the true maximum (a later value less than S above it is not stored), whatever the order. Folding a
 *   batch keeps the exact maximum; the step applies against what is stored. A column following C (`of`) takes its
 *   incoming value exactly when C does, so the two stay one reading (C's unit);
 * - `sum`: the total of every event's amount, each event counted once. A sum is
 *   not idempotent by itself (a redelivered event would add again), so a row
 *   carries its amounts per event id (sumOnce), folding unions them by id, and
 *   the SQL adds only the amounts of events not stored yet (the `isNew` test
 *   upsertSql is given). That is why the upsert must run in the same
 *   transaction as, and BEFORE, the insert that stores the batch's events.
 */
export type Rule<G extends string = string> = "min" | "max" | "sum" | { latest: G } | { earliest: string } | Coarse<string>;

/**
 * A coarse maximum (see Rule): `coarse` is the step, `of` the column whose step decides (default: the column itself),
 * `or` SQL over the stored row (the table's name) and `excluded` under which any larger value is stored.
 */
export type Coarse<C extends string> = { coarse: number; of?: C; or?: (table: string) => string };

const isCoarse = (r: unknown): r is Coarse<string> => typeof r === "object" && r !== null && "coarse" in r;

/** The row field that carries a row's sum amounts per event id (JSON text); not a column. */
export const SUM_BY_EVENT = "sum_by_event";

/**
 * A row's contribution to its projection's `sum` columns: the amounts, and the same amounts keyed by the
 * event they come from, so the event is counted once however often it is delivered or folded.
 */
export function sumOnce<C extends string>(eventId: string, amounts: Record<C, number>): Record<C, number> & { [SUM_BY_EVENT]: string | null } {
  const any = Object.values<number>(amounts).some((v) => v !== 0);
  return { ...amounts, [SUM_BY_EVENT]: any ? JSON.stringify({ [eventId]: amounts }) : null };
}

type SumMap = Record<string, Record<string, number>>;
const sumMapOf = (r: Row): SumMap => (typeof r[SUM_BY_EVENT] === "string" ? (JSON.parse(r[SUM_BY_EVENT] as string) as SumMap) : {});

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
  columns: { [K in ColumnKey<T>]?: Rule<StampGroup<T>> | { earliest: ColumnKey<T> } | Coarse<ColumnKey<T>> };
  /** SQL defaults for NOT NULL columns a row may leave null. */
  defaults?: { [K in ColumnKey<T>]?: string };
  /**
   * Per group, a column whose values outrank time when rows compete for the group: rank = `values[row[by]]`
   * (0 for any other value). The rank of a stored row is read from its stored `by` column, so `by` must itself
   * merge by the highest rank (e.g. a status group ranked by its own status).
   */
  ranks?: { [G in StampGroup<T>]?: { by: ColumnKey<T>; values: Record<string, number> } };
  /**
   * Columns a partial index holds that are merged in a statement of their own, only where their value changes, as
   * full indexes' columns are (see ProjectionSpec.indexed). For a coarse column (listed_at) beside an exact one that
   * moves with every batch: the row is written anyway, its index entry only when the coarse value moves.
   */
  separate?: ColumnKey<T>[];
  /**
   * A column of an indexed unit that changes often (a run's outcome, a status): where its unit changes, that unit's
   * statement merges the unindexed columns too, and the first statement leaves the row alone, so the row is written
   * once, not twice (D1 bills each). See upsertSqls.
   */
  withPlain?: ColumnKey<T>;
};

/** A projection resolved to SQL names: what both interpreters run on. Rows are keyed by SQL column name. */
export type ProjectionSpec = {
  table: string;
  key: string[];
  columns: Record<string, Rule>;
  /** Each group's stamp columns: [time, event id]. */
  stamps: Record<string, readonly [at: string, eventId: string]>;
  defaults: Record<string, string>;
  /** Each ranked group's rank: the SQL name of the column it reads, and the ranked values. */
  ranks: Record<string, { column: string; values: Record<string, number> }>;
  /**
   * Non-key columns some full (non-partial) index holds. D1 counts a row written for every index entry an UPDATE
   * rewrites, and SQLite rewrites an index whenever one of its columns is in the SET list, changed or not; so
   * upsertSqls sets these apart, each only where its value changes.
   */
  indexed: string[];
  /** The SQL name of the column whose unit is merged with the unindexed columns when it changes (ProjectionDef.withPlain). */
  withPlain: string | null;
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
  const bySqlName = <V>(o: { [K in ColumnKey<T>]?: V }) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [n[k as ColumnKey<T>], v])) as Record<string, V>;
  return {
    table: n.$table,
    key: def.key.map((k) => n[k]),
    // An `earliest` rule names its time column by key: resolved to its SQL name like the columns.
    columns: Object.fromEntries(
      Object.entries(bySqlName(def.columns)).map(([c, r]) => [
        c,
        isCoarse(r)
          ? { ...r, of: r.of ? n[r.of as ColumnKey<T>] : c }
          : typeof r === "object" && "earliest" in r
            ? { earliest: n[r.earliest as ColumnKey<T>] }
            : r,
      ]),
    ) as Record<string, Rule>,
    stamps: Object.fromEntries(groups(def.columns).map((g) => [g, stampColumns(table, g)])),
    defaults: bySqlName(def.defaults ?? {}),
    withPlain: def.withPlain ? n[def.withPlain] : null,
    indexed: [...new Set([...indexedColumns(table as unknown as SQLiteTable), ...(def.separate ?? []).map((k) => n[k])])].filter(
      (c) => !def.key.some((k) => n[k] === c),
    ),
    ranks: Object.fromEntries(
      Object.entries(def.ranks ?? {}).map(([g, r]) => {
        const { by, values } = r as { by: ColumnKey<T>; values: Record<string, number> };
        return [g, { column: n[by], values }];
      }),
    ),
  };
}

const stampCols = (spec: ProjectionSpec, g: string) => spec.stamps[g]!;

/** SQL names of the columns that full (non-partial) indexes of `table` hold. */
function indexedColumns(table: SQLiteTable): string[] {
  const cols = new Set<string>();
  for (const ix of getTableConfig(table).indexes) {
    if (ix.config.where) continue;
    for (const c of ix.config.columns) if ("name" in c && typeof c.name === "string") cols.add(c.name);
  }
  return [...cols];
}

function groups<G extends string>(columns: { [c: string]: Rule<G> | undefined }): G[] {
  return [...new Set(Object.values(columns).flatMap((r) => (typeof r === "object" && "latest" in r ? [r.latest] : [])))];
}

/** All columns of a projection, in insert order. */
export function allColumns(spec: ProjectionSpec): string[] {
  return [...spec.key, ...Object.keys(spec.columns), ...groups(spec.columns).flatMap((g) => stampCols(spec, g))];
}

/** A row's rank for group `g` (0 when the group has no rank or the row's value is not ranked). */
function rankOf(spec: ProjectionSpec, r: Row, g: string): number {
  const k = spec.ranks[g];
  const v = k ? r[k.column] : null;
  return k && typeof v === "string" && Object.hasOwn(k.values, v) ? k.values[v]! : 0;
}

function isNewer(spec: ProjectionSpec, a: Row, b: Row, g: string): boolean {
  const [at, id] = stampCols(spec, g);
  const ta = a[at];
  if (ta === null || ta === undefined) return false;
  const tb = b[at];
  if (tb === null || tb === undefined) return true;
  const ra = rankOf(spec, a, g);
  const rb = rankOf(spec, b, g);
  if (ra !== rb) return ra > rb;
  return ta > tb || (ta === tb && String(a[id]) > String(b[id]));
}

/** Folds `incoming` into `stored` by the spec's rules (the JS interpreter). */
export function mergeRows(spec: ProjectionSpec, stored: Row, incoming: Row): Row {
  const out: Row = { ...stored };
  for (const [col, rule] of Object.entries(spec.columns)) {
    const a = stored[col] ?? null;
    const b = incoming[col] ?? null;
    // Not Math.min/max: a column may hold text, compared as SQL's min() and max() compare it.
    // biome-ignore lint/complexity/useMathMinMax: see above
    if (rule === "min") out[col] = a === null ? b : b === null ? a : b < a ? b : a;
    // biome-ignore lint/complexity/useMathMinMax: see above
    else if (rule === "max") out[col] = a === null ? b : b === null ? a : b > a ? b : a;
    else if (isCoarse(rule)) {
      // Within a batch, the exact maximum (of the deciding column): the step applies against what is stored.
      const [sa, sb] = [stored[rule.of!] ?? null, incoming[rule.of!] ?? null];
      if (sb !== null && (sa === null || sb > sa)) out[col] = b;
    }
  }
  const sums = Object.entries(spec.columns)
    .filter(([, rule]) => rule === "sum")
    .map(([col]) => col);
  if (sums.length) {
    // Union by event id: the same event folded twice (a batch may carry it twice) counts once.
    const merged = { ...sumMapOf(stored), ...sumMapOf(incoming) };
    const ids = Object.keys(merged);
    out[SUM_BY_EVENT] = ids.length ? JSON.stringify(merged) : null;
    for (const col of sums) out[col] = ids.reduce((t, id) => t + (merged[id]![col] ?? 0), 0);
  }
  for (const [col, rule] of Object.entries(spec.columns)) {
    if (typeof rule !== "object" || !("earliest" in rule)) continue;
    const [va, vb, ta, tb] = [stored[col] ?? null, incoming[col] ?? null, stored[rule.earliest] ?? null, incoming[rule.earliest] ?? null];
    if (vb !== null && tb !== null && (va === null || ta === null || tb < ta || (tb === ta && vb > va))) out[col] = vb;
  }
  for (const g of groups(spec.columns)) {
    if (!isNewer(spec, incoming, stored, g)) continue;
    for (const [col, rule] of Object.entries(spec.columns))
      if (typeof rule === "object" && "latest" in rule && rule.latest === g) out[col] = incoming[col] ?? null;
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

/**
 * The columns a merge must set together, in one statement: a group's columns and stamps (its rule compares the
 * stored stamps), joined with the group its rank reads (the rank compares the stored value). Every other column
 * is a unit of its own.
 */
function units(spec: ProjectionSpec): string[][] {
  const unitOf = new Map<string, Set<string>>();
  const join = (a: string, b: string) => {
    const ua = unitOf.get(a) ?? new Set([a]);
    const ub = unitOf.get(b) ?? new Set([b]);
    if (ua === ub) return;
    for (const c of ub) ua.add(c);
    for (const c of ua) unitOf.set(c, ua);
  };
  for (const c of Object.keys(spec.columns)) if (!unitOf.has(c)) unitOf.set(c, new Set([c]));
  for (const [col, rule] of Object.entries(spec.columns)) {
    if (typeof rule !== "object") continue;
    // A coarse rule reads its deciding column's stored value: they are set together.
    if (isCoarse(rule)) {
      join(col, rule.of!);
      continue;
    }
    // An earliest rule reads its time column's stored value: they are set together.
    if ("earliest" in rule) {
      join(col, rule.earliest);
      continue;
    }
    for (const st of stampCols(spec, rule.latest)) join(col, st);
    const rank = spec.ranks[rule.latest];
    if (rank) join(col, rank.column);
  }
  return [...new Set(unitOf.values())].map((u) => [...u]);
}

/**
 * The upsert statements (the SQL interpreter), to run in this order. Each takes one parameter: a JSON array of
 * rows. A spec with `sum` columns needs `isNew`: SQL that is true when the event whose id is the given expression
 * is not stored yet.
 *
 * Why several: D1 bills every index entry written, and SQLite rewrites an index whenever its columns are in an
 * UPDATE's SET list, even to the same value. The first statement inserts new rows whole and merges the columns no
 * full index holds; each next one merges one unit of indexed columns (see units). Every DO UPDATE has a WHERE that
 * skips it when the merge changes nothing, so an update that moves no indexed value rewrites no index entry, and an
 * update that moves nothing writes no row. Units are independent (a rule reads only its own unit's stored values),
 * so merging them one statement after another gives what one statement would. `only`: SQL over the incoming row `j`
 * (and the stored table) that keeps a row out of every statement where false (the runs that leave D1: run-rows.ts).
 */
export function upsertSqls(spec: ProjectionSpec, isNew?: (eventIdSql: string) => string, only = "true"): string[] {
  const t = spec.table;
  const cols = allColumns(spec);
  const select = cols.map((c) => {
    if (spec.columns[c] === "sum") {
      if (!isNew) throw new Error(`projection ${t}: sum column ${c} needs an isNew test`);
      return `(SELECT COALESCE(SUM(s.value ->> '$.${c}'), 0) FROM json_each(j ->> '$.${SUM_BY_EVENT}') s WHERE ${isNew("s.key")})`;
    }
    const v = `j ->> '$.${c}'`;
    return spec.defaults[c] ? `COALESCE(${v}, ${spec.defaults[c]})` : v;
  });
  const rank = (g: string, row: string) => {
    const k = spec.ranks[g];
    if (!k) return "0";
    const whens = Object.entries(k.values).map(([v, r]) => `WHEN '${v.replace(/'/g, "''")}' THEN ${Number(r)}`);
    return `(CASE ${row}.${k.column} ${whens.join(" ")} ELSE 0 END)`;
  };
  const newer = (g: string) => {
    const [at, id] = stampCols(spec, g);
    const later = `excluded.${at} > ${t}.${at} OR (excluded.${at} = ${t}.${at} AND excluded.${id} > ${t}.${id})`;
    if (!spec.ranks[g]) return `(excluded.${at} IS NOT NULL AND (${t}.${at} IS NULL OR ${later}))`;
    const [re, rt] = [rank(g, "excluded"), rank(g, t)];
    return `(excluded.${at} IS NOT NULL AND (${t}.${at} IS NULL OR ${re} > ${rt} OR (${re} = ${rt} AND (${later}))))`;
  };
  const merged = new Map<string, string>();
  for (const [c, rule] of Object.entries(spec.columns)) {
    if (rule === "min" || rule === "max") {
      const fn = rule.toUpperCase();
      merged.set(c, `CASE WHEN excluded.${c} IS NULL THEN ${t}.${c} WHEN ${t}.${c} IS NULL THEN excluded.${c} ELSE ${fn}(${t}.${c}, excluded.${c}) END`);
    } else if (rule === "sum") merged.set(c, `${t}.${c} + excluded.${c}`);
    else if (isCoarse(rule)) {
      const o = rule.of!;
      const moved = `${t}.${o} IS NULL OR excluded.${o} >= ${t}.${o} + ${Number(rule.coarse)}${rule.or ? ` OR (excluded.${o} > ${t}.${o} AND (${rule.or(t)}))` : ""}`;
      merged.set(c, `CASE WHEN excluded.${o} IS NOT NULL AND (${moved}) THEN excluded.${c} ELSE ${t}.${c} END`);
    } else if ("earliest" in rule) {
      const at = rule.earliest;
      const earlier = `excluded.${at} < ${t}.${at} OR (excluded.${at} = ${t}.${at} AND excluded.${c} > ${t}.${c})`;
      merged.set(
        c,
        `CASE WHEN excluded.${c} IS NOT NULL AND excluded.${at} IS NOT NULL AND (${t}.${c} IS NULL OR ${t}.${at} IS NULL OR ${earlier}) THEN excluded.${c} ELSE ${t}.${c} END`,
      );
    } else merged.set(c, `CASE WHEN ${newer(rule.latest)} THEN excluded.${c} ELSE ${t}.${c} END`);
  }
  for (const g of groups(spec.columns)) for (const c of stampCols(spec, g)) merged.set(c, `CASE WHEN ${newer(g)} THEN excluded.${c} ELSE ${t}.${c} END`);
  const indexed = new Set(spec.indexed);
  const all = units(spec);
  const plain = all.filter((u) => !u.some((c) => indexed.has(c))).flat();
  const separate = all.filter((u) => u.some((c) => indexed.has(c)));
  const withPlain = spec.withPlain ? separate.find((u) => u.includes(spec.withPlain!)) : undefined;
  if (spec.withPlain && !withPlain) throw new Error(`projection ${t}: withPlain column ${spec.withPlain} is in no indexed unit`);
  // After the first statement every row exists, so the later ones never insert: their sums (which look up each
  // event id, rows read) are not needed, except in the unit that merges the unindexed columns (sums among them).
  const later = cols.map((c, i) => (spec.columns[c] === "sum" ? "0" : select[i]!));
  const changes = (set: string[]) => set.map((c) => `(${merged.get(c)}) IS NOT ${t}.${c}`).join(" OR ");
  const statement = (set: string[], values: string[], where = changes(set)) => `INSERT INTO ${t} (${cols.join(", ")})
SELECT ${values.join(", ")} FROM (SELECT value AS j FROM json_each(?1)) WHERE ${only}
ON CONFLICT(${spec.key.join(", ")}) DO ${
    set.length
      ? `UPDATE SET ${set.map((c) => `${c} = ${merged.get(c)}`).join(", ")}
WHERE ${where}`
      : "NOTHING"
  }`;
  if (!withPlain) return [statement(plain, select), ...separate.map((u) => statement(u, later))];
  // Where the withPlain unit's indexed value changes, the first statement skips the row (it still inserts new rows
  // whole) and that unit's statement merges the unindexed columns with it: one row write instead of two. Where only
  // its unindexed members change (a newer stamp of the same outcome or status), the first statement merges them with
  // the unindexed columns and leaves the indexed value out of its SET list, so no index entry is rewritten to the
  // value it holds. Both test the same stored row against the same incoming one, and after the first the unit's
  // indexed value no longer changes (its stamps are the incoming ones), so exactly one of them merges the unindexed
  // columns, and a sum still counts each event once.
  const keyed = withPlain.filter((c) => indexed.has(c));
  const rest = [...plain, ...withPlain.filter((c) => !indexed.has(c))];
  const skip = rest.length ? `NOT (${changes(keyed)}) AND (${changes(rest)})` : "";
  return [statement(rest, select, skip), ...separate.map((u) => (u === withPlain ? statement([...u, ...plain], select, changes(keyed)) : statement(u, later)))];
}
