import { z } from "zod";
import { savedViews, viewLastUsed } from "./schema";
import { names, selectList } from "./sql-names";

/**
 * Saved views and the last view each identity opened per list: the one module that reads and writes them.
 * A view is a list's name and its query under a name, on a shelf: personal (only its owner sees it) or team
 * (everyone sees it). The console turns views into URLs and words; this module keeps the facts.
 */

/** How many views one shelf holds (a person's, or the team's): the nav lists them all, so it stays short. */
export const VIEWS_PER_SHELF = 100;

/** A view's name: 1–60 characters, letters and digits first, then letters, digits, spaces and - _ . ( ) : ' # / +. */
export const viewName = z
  .string({ error: "a view needs a name" })
  .trim()
  .min(1, "a view needs a name")
  .max(60, "a view's name is 60 characters at most")
  .regex(
    /^[\p{L}\p{N}][\p{L}\p{N} _.\-():'#/+]*$/u,
    "a view's name starts with a letter or digit and holds only letters, digits, spaces and - _ . ( ) : ' # / +",
  );

/** The paging and view parameters a saved query never keeps: a view is filters, not a position in a list. */
const NOT_SAVED = new Set(["cursor", "view"]);

/** A list's query as a view keeps it: at most 2000 characters, paging left out, in a stable form. */
export const viewQuery = z
  .string()
  .max(2000, "a view's filters are 2000 characters at most")
  .transform((s) => {
    const q = new URLSearchParams(s.startsWith("?") ? s.slice(1) : s);
    for (const k of [...q.keys()]) if (NOT_SAVED.has(k) || q.get(k) === "") q.delete(k);
    return q.toString();
  });

/** A list's name as the console spells it (a LISTS key): the console checks it is one of its lists. */
const listName = z.string().regex(/^[a-z]{1,32}$/, "not a list's name");

export type Shelf = "personal" | "team";
export type SavedView = { viewId: string; name: string; list: string; query: string; shelf: Shelf; owner: string; createdAt: number };
/** A view as the views list shows it: `last` when it is what opening its list with no query restores for this identity. */
export type ListedView = SavedView & { last: boolean };

const V = names(savedViews);
const L = names(viewLastUsed);
const COLUMNS = selectList(savedViews, ["viewId", "name", "list", "query", "owner", "createdAt"]);
type Row = Omit<SavedView, "shelf"> & { shelfKey: string };
const TEAM = "";
const shelfKey = (shelf: Shelf, email: string) => (shelf === "team" ? TEAM : email);
const fromRow = ({ shelfKey: s, ...r }: Row): SavedView => ({ ...r, shelf: s === TEAM ? "team" : "personal" });

/** What to save: whose, on which shelf, for which list, under which name, with which query. */
export const saveViewInput = z.object({
  owner: z.string().min(3).max(320),
  shelf: z.enum(["personal", "team"]),
  list: listName,
  name: viewName,
  query: viewQuery,
});
export type SaveViewInput = z.input<typeof saveViewInput>;

export type SaveResult = { ok: true; view: SavedView } | { ok: false; reason: "name_taken" | "shelf_full"; shelf: Shelf; name: string };

/**
 * Saves a view. The name must be free on its shelf (the unique index decides, so two saves cannot both win) and
 * the shelf must hold fewer than VIEWS_PER_SHELF views. Throws a ZodError on bad input (the caller answers 400).
 * Writes one row and its index entry.
 */
export async function saveView(db: D1Database, input: SaveViewInput, now: number): Promise<SaveResult> {
  const v = saveViewInput.parse(input);
  const shelf = shelfKey(v.shelf, v.owner);
  const viewId = crypto.randomUUID();
  const sql = `INSERT INTO ${V.$table} (${V.viewId}, ${V.shelf}, ${V.owner}, ${V.list}, ${V.name}, ${V.query}, ${V.createdAt})
    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT COUNT(*) FROM ${V.$table} WHERE ${V.shelf} = ?2) < ?8
    ON CONFLICT (${V.shelf}, ${V.name}) DO NOTHING`;
  const r = await db.prepare(sql).bind(viewId, shelf, v.owner, v.list, v.name, v.query, now, VIEWS_PER_SHELF).run();
  if (r.meta.changes === 1) return { ok: true, view: { viewId, name: v.name, list: v.list, query: v.query, shelf: v.shelf, owner: v.owner, createdAt: now } };
  const taken = await db.prepare(`SELECT 1 FROM ${V.$table} WHERE ${V.shelf} = ? AND ${V.name} = ?`).bind(shelf, v.name).first();
  return { ok: false, reason: taken ? "name_taken" : "shelf_full", shelf: v.shelf, name: v.name };
}

/**
 * The views `email` sees (its personal views, then the team's, each by name), each marked when it is the last view
 * `email` opened for its list. One query over the shelf index: O(views on the two shelves) rows read.
 */
export async function viewsFor(db: D1Database, email: string): Promise<ListedView[]> {
  const sql = `SELECT ${COLUMNS.replace(/(^|, )/g, "$1v.")}, v.${V.shelf} AS shelfKey, (l.${L.viewId} IS NOT NULL) AS last
    FROM ${V.$table} v LEFT JOIN ${L.$table} l ON l.${L.email} = ?1 AND l.${L.list} = v.${V.list} AND l.${L.viewId} = v.${V.viewId}
    WHERE v.${V.shelf} IN (?1, '${TEAM}') ORDER BY v.${V.shelf} = '${TEAM}', v.${V.name} LIMIT ?2`;
  const { results } = await db
    .prepare(sql)
    .bind(email, 2 * VIEWS_PER_SHELF)
    .all<Row & { last: number }>();
  return results.map(({ last, ...r }) => ({ ...fromRow(r), last: last === 1 }));
}

/** One view, if `email` may see it (its own, or a team view); null otherwise, whether or not it exists. */
export async function getView(db: D1Database, viewId: string, email: string): Promise<SavedView | null> {
  const sql = `SELECT ${COLUMNS}, ${V.shelf} AS shelfKey FROM ${V.$table} WHERE ${V.viewId} = ? AND ${V.shelf} IN (?, '${TEAM}')`;
  const row = await db.prepare(sql).bind(viewId, email).first<Row>();
  return row ? fromRow(row) : null;
}

/**
 * The view `email` opened last on `list`, if it still exists and `email` may still see it: what opening the list with
 * no query restores. Two primary-key reads.
 */
export async function lastViewFor(db: D1Database, email: string, list: string): Promise<SavedView | null> {
  const sql = `SELECT ${COLUMNS.replace(/(^|, )/g, "$1v.")}, v.${V.shelf} AS shelfKey
    FROM ${L.$table} l JOIN ${V.$table} v ON v.${V.viewId} = l.${L.viewId}
    WHERE l.${L.email} = ?1 AND l.${L.list} = ?2 AND v.${V.shelf} IN (?1, '${TEAM}')`;
  const row = await db.prepare(sql).bind(email, list).first<Row>();
  return row ? fromRow(row) : null;
}

export type DeleteResult = { ok: true; view: SavedView } | { ok: false; reason: "not_found" | "not_permitted" };

/**
 * Deletes a view: a personal view by its owner only; a team view by its owner or an operator (`mayTidyTeam`).
 * A view the caller cannot see is not_found, so nobody learns of another's personal views.
 */
export async function deleteView(db: D1Database, viewId: string, who: { email: string; mayTidyTeam: boolean }): Promise<DeleteResult> {
  const view = await getView(db, viewId, who.email);
  if (!view) return { ok: false, reason: "not_found" };
  if (view.owner !== who.email && !(view.shelf === "team" && who.mayTidyTeam)) return { ok: false, reason: "not_permitted" };
  await db.prepare(`DELETE FROM ${V.$table} WHERE ${V.viewId} = ?`).bind(viewId).run();
  return { ok: true, view };
}

/**
 * Records that `email` opened `viewId` on its list. Writes only when it changes what is remembered, so opening the
 * same view again costs no row written.
 */
export async function rememberView(db: D1Database, email: string, view: Pick<SavedView, "viewId" | "list">): Promise<void> {
  const sql = `INSERT INTO ${L.$table} (${L.email}, ${L.list}, ${L.viewId}) VALUES (?, ?, ?)
    ON CONFLICT (${L.email}, ${L.list}) DO UPDATE SET ${L.viewId} = excluded.${L.viewId} WHERE ${L.viewId} <> excluded.${L.viewId}`;
  await db.prepare(sql).bind(email, view.list, view.viewId).run();
}

/** Forgets the last view `email` opened on `list`: opening the list with no query shows it unfiltered again. */
export async function forgetView(db: D1Database, email: string, list: string): Promise<void> {
  await db.prepare(`DELETE FROM ${L.$table} WHERE ${L.email} = ? AND ${L.list} = ?`).bind(email, list).run();
}
