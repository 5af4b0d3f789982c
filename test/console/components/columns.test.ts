import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { ColumnTable, columnSet, pickFields, shownColumns } from "../../../console/components/columns";

// One column declaration per list: the table's headers and cells, the phone cards' labels and a download's fields
// all come from it. A small declaration of its own, so the rules are checked apart from any page.

type Row = { id: string; a: number; b: string; c: boolean };
const SET = columnSet<Row, { unit: string }>("things", { id: "thing", header: "thing", fields: ["id"], cell: (r) => r.id }, [
  { id: "a", header: "the a", num: true, fields: ["a"], cell: (r, x) => `${r.a} ${x.unit}` },
  { id: "b", header: "b", fields: ["b"], attrs: (r) => ({ "data-b": r.b }), cell: (r) => r.b },
  { id: "c", header: "c", fields: ["c", "a"], cell: (r) => String(r.c) },
]);
const ROWS: Row[] = [
  { id: "r1", a: 1, b: "x", c: true },
  { id: "r2", a: 2, b: "y", c: false },
];

const render = async (props: { cols?: string[]; hide?: string[] }) =>
  String(await jsx(ColumnTable, { set: SET, rows: ROWS, x: { unit: "kg" }, testId: "things", ...props }).toString());

describe("columns", () => {
  it("shows the picked columns in the declaration's order, every column when none is picked, less the hidden ones", () => {
    expect(shownColumns(SET, ["c", "a"]).map((c) => c.id)).toEqual(["a", "c"]);
    expect(shownColumns(SET).map((c) => c.id)).toEqual(["a", "b", "c"]);
    expect(shownColumns(SET, [], ["b"]).map((c) => c.id)).toEqual(["a", "c"]);
    // A page's hidden column still shows when it is picked.
    expect(shownColumns(SET, ["b"], ["b"]).map((c) => c.id)).toEqual(["b"]);
  });

  it("renders each header and cell with its column id, each cell labelled with its header for the phone cards", async () => {
    const html = await render({ cols: ["b", "a"] });
    expect(html).toContain('<table data-testid="things" data-cols="a,b">');
    expect([...html.matchAll(/<th data-col="([^"]+)"/g)].map((m) => m[1])).toEqual(["thing", "a", "b"]);
    expect(html).toContain('<td class="num" data-col="a" data-label="the a">1 kg</td>');
    expect(html).toContain('<td data-b="y" data-col="b" data-label="b">y</td>');
    expect(html).not.toContain('data-col="c"');
    expect(await render({})).toContain('<table data-testid="things">');
  });

  it("keeps of a row, for a download, the key column's fields and the picked columns' (each once)", () => {
    const row = { ...ROWS[0]!, extra: "not a column" };
    expect(pickFields(SET, ["c"], row)).toEqual({ id: "r1", c: true, a: 1 });
    expect(Object.keys(pickFields(SET, ["a", "c"], row))).toEqual(["id", "a", "c"]);
    expect(pickFields(SET, [], row)).toBe(row);
  });
});
