/**
 * Projection merge rules, declared once and interpreted twice: in JS (to fold
 * a batch's rows per key before writing) and in SQL (to fold them into what is
 * stored). Every rule is commutative and idempotent, so the same events in any
 * order, any batching, and any number of deliveries give the same rows.
 *
 * - `min` / `max`: the smallest / largest non-null value (strings compare too);
 * - a group name: the column takes its value from the row whose group stamp
 *   (`<group>_at`, `<group>_event_id`) is newest; a row that has no stamp for
 *   the group does not contribute to it.
 */
export type Rule = "min" | "max" | { latest: string };

export type ProjectionSpec = {
  table: string;
  key: string[];
  /** Non-key columns and how they merge. Group stamp columns are added automatically. */
  columns: Record<string, Rule>;
  /** SQL defaults for NOT NULL columns a row may leave null. */
  defaults?: Record<string, string>;
};

export type Row = Record<string, string | number | null>;

const stampCols = (g: string) => [`${g}_at`, `${g}_event_id`] as const;

function groups(spec: ProjectionSpec): string[] {
  return [...new Set(Object.values(spec.columns).flatMap((r) => (typeof r === "object" ? [r.latest] : [])))];
}

/** All columns of a projection, in insert order. */
export function allColumns(spec: ProjectionSpec): string[] {
  return [...spec.key, ...Object.keys(spec.columns), ...groups(spec).flatMap((g) => stampCols(g))];
}

function isNewer(a: Row, b: Row, g: string): boolean {
  const [at, id] = stampCols(g);
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
  for (const g of groups(spec)) {
    if (!isNewer(incoming, stored, g)) continue;
    for (const [col, rule] of Object.entries(spec.columns)) if (typeof rule === "object" && rule.latest === g) out[col] = incoming[col] ?? null;
    for (const c of stampCols(g)) out[c] = incoming[c] ?? null;
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
    return spec.defaults?.[c] ? `COALESCE(${v}, ${spec.defaults[c]})` : v;
  });
  const newer = (g: string) => {
    const [at, id] = stampCols(g);
    return `(excluded.${at} IS NOT NULL AND (${t}.${at} IS NULL OR excluded.${at} > ${t}.${at} OR (excluded.${at} = ${t}.${at} AND excluded.${id} > ${t}.${id})))`;
  };
  const sets: string[] = [];
  for (const [c, rule] of Object.entries(spec.columns)) {
    if (rule === "min" || rule === "max") {
      const fn = rule.toUpperCase();
      sets.push(`${c} = CASE WHEN excluded.${c} IS NULL THEN ${t}.${c} WHEN ${t}.${c} IS NULL THEN excluded.${c} ELSE ${fn}(${t}.${c}, excluded.${c}) END`);
    } else sets.push(`${c} = CASE WHEN ${newer(rule.latest)} THEN excluded.${c} ELSE ${t}.${c} END`);
  }
  for (const g of groups(spec)) for (const c of stampCols(g)) sets.push(`${c} = CASE WHEN ${newer(g)} THEN excluded.${c} ELSE ${t}.${c} END`);
  return `INSERT INTO ${t} (${cols.join(", ")})
SELECT ${select.join(", ")} FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT(${spec.key.join(", ")}) DO UPDATE SET ${sets.join(", ")}`;
}
