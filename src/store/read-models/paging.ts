import { BadRequest } from "./errors";

/**
 * Keyset pagination shared by every list: pages are index range scans that
 * start after the previous page's last sort key, so a page reads O(page size)
 * rows however deep it is, and rows inserted newer than the first page never
 * shift later pages.
 */

/** One page of a list. `next` is the cursor of the following page, null on the last one. */
export type Page<T> = { items: T[]; next: string | null; rowsRead: number };

/** How a list is ordered, as its cursor carries it: the list's tag and each row's sort key. */
export type ListOrder<R> = { tag: string; keyOf: (row: R) => SortValue[] };

/** A count that stopped at `cap`; render it as "≥cap" when `capped`. */
export type Capped = { n: number; capped: boolean };

/** What a caller may ask of a list: where to continue and how many rows. */
export type PageOptions = { cursor?: string | null; limit?: number | string | null };

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;
export const DEFAULT_CAP = 1000;

/**
 * When two filters of a list cannot be served by one index, the list scans
 * one filter's index and tests the other on each row, but never more than
 * this many index rows per request. A page can then come back short (even
 * empty) with a `next` cursor that continues where the scan stopped.
 */
export const SCAN_BUDGET = 1000;

export type SortValue = string | number;
type KeyType = "number" | "string";

const INVALID_CURSOR = "the page cursor is not valid; start from the first page";

/** Validates a page size: default 50, 1 to 200. */
export function pageLimit(limit: PageOptions["limit"]): number {
  if (limit === undefined || limit === null || limit === "") return DEFAULT_LIMIT;
  const n = typeof limit === "number" ? limit : /^\d+$/.test(limit.trim()) ? Number(limit) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT)
    throw new BadRequest(`limit must be a whole number from 1 to ${MAX_LIMIT} (got ${JSON.stringify(limit)})`);
  return n;
}

function toBase64Url(text: string): string {
  let bin = "";
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(s: string): string {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** An opaque, URL-safe cursor: base64url of the list's tag and the last row's sort key. */
export function encodeCursor(tag: string, key: SortValue[]): string {
  return toBase64Url(JSON.stringify([tag, ...key]));
}

/**
 * Reads a cursor made by encodeCursor for the same list (`tag`) and key
 * shape. Anything else, including a cursor of another list or ordering,
 * is a BadRequest.
 */
export function decodeCursor(tag: string, cursor: string, types: readonly KeyType[]): SortValue[] {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]{1,2000}$/.test(cursor)) throw new Error("not base64url");
    parsed = JSON.parse(fromBase64Url(cursor));
  } catch {
    throw new BadRequest(INVALID_CURSOR);
  }
  if (!Array.isArray(parsed)) throw new BadRequest(INVALID_CURSOR);
  // Any list's cursor is a tag and at least two sort values; lists' keys differ in length, so the tag is read first.
  const someList = typeof parsed[0] === "string" && parsed.length >= 3 && parsed.slice(1).every((v) => typeof v === "string" || typeof v === "number");
  if (someList && parsed[0] !== tag) throw new BadRequest("the page cursor belongs to another list or ordering; start from the first page");
  if (parsed.length !== types.length + 1 || parsed[0] !== tag) throw new BadRequest(INVALID_CURSOR);
  const key = parsed.slice(1);
  key.forEach((v, i) => {
    const ok = types[i] === "number" ? typeof v === "number" && Number.isFinite(v) : typeof v === "string";
    if (!ok) throw new BadRequest(INVALID_CURSOR);
  });
  return key as SortValue[];
}

/** A piece of SQL and its bound values, in order. */
export type Cond = { sql: string; binds: unknown[] };

export const cond = (sql: string, ...binds: unknown[]): Cond => ({ sql, binds });

/** One list read: which index to scan, in which order, with which conditions. */
export type ListQuery<R> = {
  /** Names the list and its ordering inside cursors, so a cursor cannot be replayed on another list. */
  tag: string;
  table: string;
  /** The index to scan; named so the plan is fixed (SQLite's INDEXED BY fails loudly if it cannot be used). */
  index: string;
  /** The SELECT list, aliased to R's fields. */
  select: string;
  /** Sort key columns, most significant first; the last one must make the key unique. */
  order: string[];
  types: KeyType[];
  dir: "ASC" | "DESC";
  /** Conditions the index serves: equalities on its leading columns. */
  where: Cond[];
  /**
   * One more equality per arm, on an index column before the filtered ones (each value of a closed set), so one
   * index serves a filter that skips its leading column: the page merges the arms' ordered scans (see armsSql).
   */
  arms?: Cond[];
  /** Bounds on the first sort column, inclusive (since / until). */
  range?: { min?: number; max?: number };
  /** Conditions the index cannot serve: tested on each scanned row, scan bounded by SCAN_BUDGET. */
  residual?: Cond[];
  /**
   * The scan's bound instead of SCAN_BUDGET: SCAN_BUDGET less what the request already read to plan the page (an
   * agent name's classes), so the whole request stays within 2 × SCAN_BUDGET.
   */
  scanBudget?: number;
  /**
   * With residual conditions, a page that reads at most this many rows instead (arms' read-ahead included): the
   * hits among them, and a cursor after the last row read when the hits run short, found in the same statement (no
   * second read for it). For a dense filter a page is then nearly full; a sparse one pages on with short pages.
   */
  scanCap?: number;
  /** The sort key of a returned row, in `order`'s order. */
  keyOf: (row: R) => SortValue[];
  /** Turns a raw row into the returned item (e.g. parses JSON). */
  map?: (row: R) => R;
};

/** A query's scan bound: its own (at least 1), or SCAN_BUDGET. */
const budgetOf = (q: { scanBudget?: number }) => Math.max(1, Math.min(SCAN_BUDGET, Math.floor(q.scanBudget ?? SCAN_BUDGET)));

const sum = (results: D1Result[]) => results.reduce((n, r) => n + (r.meta.rows_read ?? 0), 0);

/**
 * Reads one page of a list by keyset. Without residual conditions it reads
 * at most limit + 1 index rows. With them, at most SCAN_BUDGET rows, plus up
 * to SCAN_BUDGET more (index only) to place the cursor when the page is short.
 */
export async function keysetPage<R>(db: D1Database, q: ListQuery<R>, opts: PageOptions = {}): Promise<Page<R>> {
  const limit = pageLimit(opts.limit);
  const after = opts.cursor ? decodeCursor(q.tag, opts.cursor, q.types) : null;
  const desc = q.dir === "DESC";
  const first = q.order[0]!;
  const conds: Cond[] = [...q.where];
  // The bound at the start side of the scan merges with the cursor, so the index seek uses whichever is tighter.
  const startBound = desc ? q.range?.max : q.range?.min;
  const endBound = desc ? q.range?.min : q.range?.max;
  const cursorIsTighter = after !== null && (startBound === undefined || (desc ? (after[0] as number) <= startBound : (after[0] as number) >= startBound));
  if (after && cursorIsTighter) conds.push(cond(`(${q.order.join(", ")}) ${desc ? "<" : ">"} (${q.order.map(() => "?").join(", ")})`, ...after));
  else if (startBound !== undefined) conds.push(cond(`${first} ${desc ? "<=" : ">="} ?`, startBound));
  if (endBound !== undefined) conds.push(cond(`${first} ${desc ? ">=" : "<="} ?`, endBound));

  const where = conds.length ? `WHERE ${conds.map((c) => c.sql).join(" AND ")}` : "";
  const binds = conds.flatMap((c) => c.binds);
  const orderBy = `ORDER BY ${q.order.map((c) => `${c} ${q.dir}`).join(", ")}`;
  const from = `${q.table} INDEXED BY ${q.index}`;
  const map = q.map ?? ((r: R) => r);
  const residual = q.residual ?? [];

  if (q.arms && q.arms.length > MAX_ARMS) throw new Error(`list ${q.tag}: ${q.arms.length} arms, D1 merges at most ${MAX_ARMS}`);
  if (q.arms?.length) return armsPage(db, q, conds, limit);

  if (!residual.length) {
    const r = await db
      .prepare(`SELECT ${q.select} FROM ${from} ${where} ${orderBy} LIMIT ?`)
      .bind(...binds, limit + 1)
      .all<R>();
    const rows = r.results;
    const items = rows.slice(0, limit).map(map);
    return { items, next: rows.length > limit ? encodeCursor(q.tag, q.keyOf(rows[limit - 1]!)) : null, rowsRead: sum([r]) };
  }

  const hit = residual.map((c) => `(${c.sql})`).join(" AND ");
  if (q.scanCap !== undefined) {
    const r = await db
      .prepare(`SELECT ${q.select}, (${hit}) AS _hit FROM ${from} ${where} ${orderBy} LIMIT ${capOf(q.scanCap)}`)
      .bind(...residual.flatMap((c) => c.binds), ...binds)
      .all<R & { _hit?: number }>();
    return cappedPage(q, r, capOf(q.scanCap), limit, (row) => {
      const { _hit, ...rest } = row;
      return rest as R;
    });
  }
  const r = await db
    .prepare(`SELECT * FROM (SELECT ${q.select}, (${hit}) AS _hit FROM ${from} ${where} ${orderBy} LIMIT ${budgetOf(q)}) WHERE _hit LIMIT ?`)
    .bind(...residual.flatMap((c) => c.binds), ...binds, limit + 1)
    .all<R & { _hit?: number }>();
  const rows = r.results.map(({ _hit, ...row }) => row as R);
  const items = rows.slice(0, limit).map(map);
  if (rows.length > limit) return { items, next: encodeCursor(q.tag, q.keyOf(rows[limit - 1]!)), rowsRead: sum([r]) };
  // A short page: either the range is exhausted, or the scan budget ran out first. Continue after the last scanned row.
  const marker = await db
    .prepare(`SELECT ${q.order.map((c, i) => `${c} AS ${sortAlias(i)}`).join(", ")} FROM ${from} ${where} ${orderBy} LIMIT 1 OFFSET ${budgetOf(q) - 1}`)
    .bind(...binds)
    .all<Record<string, SortValue>>();
  return shortPage(q, items, r, marker);
}

/** A scan cap (ListQuery.scanCap) as a LIMIT: at least 1 row. */
const capOf = (cap: number) => Math.max(1, Math.floor(cap));

/**
 * A capped scan's page from the rows it read (in order, each with `_hit`): the first `limit` hits, and a cursor after
 * the last of them when more hits follow, else after the last row read when the scan reached its cap, else none.
 */
function cappedPage<R, S extends { _hit?: number }>(q: ListQuery<R>, r: D1Result<S>, cap: number, limit: number, strip: (row: S) => R): Page<R> {
  const map = q.map ?? ((x: R) => x);
  const hits = r.results.filter((row) => row._hit).map(strip);
  const items = hits.slice(0, limit).map(map);
  const last = hits.length > limit ? hits[limit - 1] : r.results.length >= cap ? strip(r.results[r.results.length - 1]!) : undefined;
  return { items, next: last ? encodeCursor(q.tag, q.keyOf(last)) : null, rowsRead: sum([r]) };
}

/**
 * A short page: its items, and a cursor after the last row the scan budget reached (`marker`: the row at the
 * budget's end, its sort keys under sortAlias), or none when the range ended first.
 */
function shortPage<R>(q: ListQuery<R>, items: R[], r: D1Result, marker: D1Result<Record<string, SortValue>>): Page<R> {
  const last = marker.results[0];
  return {
    items,
    next: last
      ? encodeCursor(
          q.tag,
          q.order.map((_, i) => last[sortAlias(i)]!),
        )
      : null,
    rowsRead: sum([r, marker]),
  };
}

/** Arms one page may merge: D1 runs at most 5 terms in one compound SELECT ("too many terms in compound SELECT"). */
export const MAX_ARMS = 5;

/** Sort-key aliases an arms query orders by (a compound SELECT orders by its result columns); dropped from its rows. */
const sortAlias = (i: number) => `_o${i}`;

/**
 * The ordered UNION ALL of one scan per arm, each over the list's index with the arm's equality and `conds`, and
 * `extra` (a select expression, bound first in each arm). SQLite runs the arms of an ordered compound as
 * co-routines, each in its index's order, and merges them until the LIMIT: a page reads about its size plus one
 * row per arm.
 */
function armsSql<R>(q: ListQuery<R>, conds: Cond[], extra?: Cond): Cond {
  const keys = q.order.map((c, i) => `${c} AS ${sortAlias(i)}`).join(", ");
  const arm = (a: Cond) => ({
    sql: `SELECT ${q.select}, ${keys}${extra ? `, ${extra.sql}` : ""} FROM ${q.table} INDEXED BY ${q.index} WHERE ${[a, ...conds].map((c) => c.sql).join(" AND ")}`,
    binds: [...(extra?.binds ?? []), ...a.binds, ...conds.flatMap((c) => c.binds)],
  });
  const arms = (q.arms ?? []).map(arm);
  const orderBy = q.order.map((_, i) => `${sortAlias(i)} ${q.dir}`).join(", ");
  return { sql: `${arms.map((a) => a.sql).join(" UNION ALL ")} ORDER BY ${orderBy}`, binds: arms.flatMap((a) => a.binds) };
}

/** keysetPage over arms (ListQuery.arms): the same page, cursor and scan budget as one index range gives. */
async function armsPage<R>(db: D1Database, q: ListQuery<R>, conds: Cond[], limit: number): Promise<Page<R>> {
  const map = q.map ?? ((r: R) => r);
  const strip = (row: Record<string, unknown>) => {
    const out = { ...row };
    q.order.forEach((_, i) => {
      delete out[sortAlias(i)];
    });
    delete out._hit;
    return out as R;
  };
  const residual = q.residual ?? [];
  if (!residual.length) {
    const u = armsSql(q, conds);
    const r = await db
      .prepare(`${u.sql} LIMIT ?`)
      .bind(...u.binds, limit + 1)
      .all<Record<string, unknown>>();
    const rows = r.results.map(strip);
    const items = rows.slice(0, limit).map(map);
    return { items, next: rows.length > limit ? encodeCursor(q.tag, q.keyOf(rows[limit - 1]!)) : null, rowsRead: sum([r]) };
  }
  const hit = residual.map((c) => `(${c.sql})`).join(" AND ");
  const u = armsSql(q, conds, cond(`(${hit}) AS _hit`, ...residual.flatMap((c) => c.binds)));
  if (q.scanCap !== undefined) {
    // The merge reads one row ahead in each arm: the LIMIT leaves room for them within the cap.
    const cap = capOf(q.scanCap - (q.arms?.length ?? 0));
    const r = await db
      .prepare(`${u.sql} LIMIT ${cap}`)
      .bind(...u.binds)
      .all<Record<string, unknown> & { _hit?: number }>();
    return cappedPage(q, r, cap, limit, strip);
  }
  const r = await db
    .prepare(`SELECT * FROM (${u.sql} LIMIT ${budgetOf(q)}) WHERE _hit LIMIT ?`)
    .bind(...u.binds, limit + 1)
    .all<Record<string, unknown>>();
  const rows = r.results.map(strip);
  const items = rows.slice(0, limit).map(map);
  if (rows.length > limit) return { items, next: encodeCursor(q.tag, q.keyOf(rows[limit - 1]!)), rowsRead: sum([r]) };
  // A short page: the range is exhausted, or the scan budget ran out first (continue after the last scanned row).
  const all = armsSql(q, conds);
  const marker = await db
    .prepare(`SELECT ${q.order.map((_, i) => sortAlias(i)).join(", ")} FROM (${all.sql} LIMIT 1 OFFSET ${budgetOf(q) - 1})`)
    .bind(...all.binds)
    .all<Record<string, SortValue>>();
  return shortPage(q, items, r, marker);
}

/** The statement of a capped count: `SELECT COUNT(*) FROM (SELECT 1 … LIMIT cap + 1)`, reading at most cap + 1 rows. */
export function cappedCountStatement(db: D1Database, from: string, where: Cond[], cap = DEFAULT_CAP): D1PreparedStatement {
  const w = where.length ? `WHERE ${where.map((c) => c.sql).join(" AND ")}` : "";
  return db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${from} ${w} LIMIT ?)`).bind(...where.flatMap((c) => c.binds), cap + 1);
}

/** Reads a capped count's result: `n` is cap when there are more. */
export function cappedOf(result: D1Result<{ n: number }>, cap = DEFAULT_CAP): Capped {
  const n = Number(result.results[0]?.n ?? 0);
  return { n: Math.min(n, cap), capped: n > cap };
}

/** Counts rows up to `cap` (see cappedCountStatement). */
export async function cappedCount(db: D1Database, from: string, where: Cond[], cap = DEFAULT_CAP): Promise<Capped & { rowsRead: number }> {
  const r = await cappedCountStatement(db, from, where, cap).all<{ n: number }>();
  return { ...cappedOf(r, cap), rowsRead: sum([r]) };
}

/** Sums rows_read over D1 results. */
export function rowsReadOf(...results: D1Result[]): number {
  return sum(results);
}

/**
 * One way to serve a list's equality filters: an index whose leading columns are these filter columns.
 * `cols` name the filters (callers use the schema's column keys); they are labels, never SQL.
 */
export type AccessPath<K extends string = string> = {
  index: string;
  cols: K[];
  /** Equalities on an index column before `cols`, one per arm, covering every row: see ListQuery.arms. */
  arms?: Cond[];
  /** A partial index's condition, word for word: SQLite uses the index only for a WHERE that has it as a term. */
  partial?: Cond;
};

/**
 * Picks the first path (callers list them most selective first) whose
 * columns are all filtered; those filters go to the index, the others
 * become residual conditions (a bounded scan, see SCAN_BUDGET). The last
 * path should have no columns, so one always fits.
 */
export function choosePath<K extends string>(
  paths: AccessPath<K>[],
  filters: Partial<Record<NoInfer<K>, Cond>>,
): { index: string; where: Cond[]; residual: Cond[]; arms?: Cond[] } {
  const set = (c: K) => filters[c] !== undefined;
  const path = paths.find((p) => p.cols.every(set)) ?? paths[paths.length - 1]!;
  const where = [...path.cols.map((c) => filters[c]!), ...(path.partial ? [path.partial] : [])];
  const residual = (Object.entries(filters) as [K, Cond | undefined][]).filter(([c, f]) => f !== undefined && !path.cols.includes(c)).map(([, f]) => f!);
  return { index: path.index, where, residual, ...(path.arms ? { arms: path.arms } : {}) };
}
