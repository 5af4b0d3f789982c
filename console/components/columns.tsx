import type { Child } from "hono/jsx";

/** Every key of a row type, of each member of a union too (a stuck finding's fields depend on its rule). */
type KeysOf<T> = T extends unknown ? keyof T : never;

/**
 * One declaration per list of the columns it can show (issue 18, item 5: a saved view keeps a list's columns as
 * well as its filters). A column's id is what `cols=` names, what the table's `data-col` attributes carry, and what
 * an export with `cols=` keeps (its `fields`, the row's own keys); its header is the table's header and the phone
 * card's label (`data-label`), so the table, the cards and the download cannot disagree.
 */
export type Column<Row, X> = {
  /** What `cols=` names, and the cells' `data-col`. */
  id: string;
  /** The header, and the card's label below 720 px. */
  header: string;
  /** The header's tooltip, where the header needs one. */
  title?: string;
  /** Right-aligned figures. */
  num?: boolean;
  /** The row's fields this column shows: what a download with `cols=` keeps of each row. */
  fields: readonly (KeysOf<Row> & string)[];
  /** The cell's own attributes (a data-testid, a class), besides its column and label. */
  attrs?: (row: Row) => Record<string, string | undefined>;
  cell: (row: Row, x: X) => Child;
};

/** A list's columns: the one that names the row (always shown: it is the link), then those `cols=` can pick. */
export type ColumnSet<Row, X> = { list: string; key: Column<Row, X>; columns: readonly Column<Row, X>[] };

/** Declares a list's columns (typed per row, so each cell reads its row's fields). */
export function columnSet<Row, X>(list: string, key: Column<Row, X>, columns: readonly Column<Row, X>[]): ColumnSet<Row, X> {
  return { list, key, columns };
}

/** Any list's columns, where only their ids and fields matter (the chooser, `cols=` parsing, the export). */
// biome-ignore lint/suspicious/noExplicitAny: a declaration of any row type, read for its ids and fields only.
export type AnyColumnSet = ColumnSet<any, any>;

/** The ids `cols=` may name on a list. */
export const columnIds = (set: AnyColumnSet): string[] => set.columns.map((c) => c.id);

/**
 * The columns to show: those `cols` names, in the declaration's order; none named, every column but `hide` (which
 * a page shows elsewhere, or does not need: the overview's short list has no "first seen").
 */
export function shownColumns<Row, X>(set: ColumnSet<Row, X>, cols: readonly string[] = [], hide: readonly string[] = []): Column<Row, X>[] {
  const picked = cols.length ? new Set(cols) : null;
  return set.columns.filter((c) => (picked ? picked.has(c.id) : !hide.includes(c.id)));
}

/**
 * A row cut down to the columns picked (an export with `cols=`): the key column's fields, then each picked
 * column's, in the declaration's order. No `cols`: the row as it is.
 */
export function pickFields(set: AnyColumnSet, cols: readonly string[], row: Record<string, unknown>): Record<string, unknown> {
  if (!cols.length) return row;
  const out: Record<string, unknown> = {};
  for (const c of [set.key, ...shownColumns(set, cols)]) for (const f of c.fields) if (f in row) out[f] = row[f];
  return out;
}

/**
 * The fields a download with `cols=` keeps, in order: the key column's, then each picked column's (every column's
 * when none are picked). An empty list's CSV header says them, since there is no row to name its columns.
 */
export function declaredFields(set: AnyColumnSet, cols: readonly string[]): string[] {
  return [...new Set([set.key, ...shownColumns(set, cols)].flatMap((c) => c.fields))];
}

/**
 * A list as a table from its declaration: `data-cols` says which columns were picked (absent when none were), every
 * header and cell says its column (`data-col`) and each cell carries its label for the phone cards.
 */
export function ColumnTable<Row, X>(props: {
  set: ColumnSet<Row, X>;
  rows: readonly Row[];
  x: X;
  testId: string;
  cols?: readonly string[];
  hide?: readonly string[];
  /** Attributes of each row's <tr> (data-* the tests and scripts read). */
  rowAttrs?: (row: Row, index: number) => Record<string, string | undefined>;
  /** Each row's own context (e.g. its index, for unique control ids). */
  xOf?: (x: X, index: number) => X;
  /** The page's main list, which j / k walk (console/static/shortcuts.js): marked `data-list` with the list's name. */
  mainList?: boolean;
}) {
  const shown = [props.set.key, ...shownColumns(props.set, props.cols, props.hide)];
  return (
    <table
      data-testid={props.testId}
      data-cols={
        props.cols?.length
          ? shown
              .slice(1)
              .map((c) => c.id)
              .join(",")
          : undefined
      }
      data-list={props.mainList ? props.set.list : undefined}
    >
      <thead>
        <tr>
          {shown.map((c) => (
            <th data-col={c.id} class={c.num ? "num" : undefined} title={c.title}>
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r, i) => {
          const x = props.xOf ? props.xOf(props.x, i) : props.x;
          return (
            <tr {...(props.rowAttrs?.(r, i) ?? {})}>
              {shown.map((c) => (
                <td class={c.num ? "num" : undefined} {...(c.attrs?.(r) ?? {})} data-col={c.id} data-label={c.header}>
                  {c.cell(r, x)}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Which of a list's columns to show (`cols=`, one checkbox each; none ticked shows the default ones). */
export function ColumnChooser(props: { set: AnyColumnSet; cols: readonly string[] }) {
  return (
    <details class="column-chooser" data-testid="column-chooser">
      <summary>columns</summary>
      {props.set.columns.map((c) => (
        <label>
          <input type="checkbox" name="cols" value={c.id} checked={props.cols.includes(c.id)} /> {c.header}
        </label>
      ))}
    </details>
  );
}
