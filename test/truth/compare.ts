import type { View } from "./observe";

/**
 * Field-by-field comparison of the SDK's view and the console's, and the readable tables a disagreement
 * fails with. A field the SDK does not know (undefined) is shown, never compared.
 */

export type Cell = { field: string; sdk: unknown; console: unknown; verdict: "agree" | "DISAGREE" | "sdk does not say" };

/**
 * An SDK value that allows several console words: a plain runFiber's end, which the SDK keeps no record of, may
 * be shown as what the agent's own code recorded or as "ended, not reported" (all the console can know when
 * its end event was lost).
 */
export type OneOf = { oneOf: unknown[] };
const isOneOf = (v: unknown): v is OneOf => typeof v === "object" && v !== null && Array.isArray((v as OneOf).oneOf);

const show = (v: unknown) =>
  v === undefined ? "—" : v === null ? "null" : typeof v === "string" ? v : isOneOf(v) ? v.oneOf.map(String).join(" or ") : JSON.stringify(v);
const same = (a: unknown, b: unknown): boolean => (isOneOf(a) ? a.oneOf.some((x) => same(x, b)) : JSON.stringify(a ?? null) === JSON.stringify(b ?? null));

function cell(field: string, sdk: unknown, shown: unknown): Cell {
  return { field, sdk, console: shown, verdict: sdk === undefined ? "sdk does not say" : same(sdk, shown) ? "agree" : "DISAGREE" };
}

/** Every compared field of one scenario. Run fields are named `run.<field>`, incident fields `incident.<field>`. */
export function compareViews(sdk: View, shown: View): Cell[] {
  const cells: Cell[] = [];
  const multi = Object.keys(sdk.runs).length > 1;
  // Several runs are numbered in the order the SDK lists them, so the whole-matrix table has one column per field.
  for (const [n, [id, s]] of Object.entries(sdk.runs).entries()) {
    const c = shown.runs[id] ?? {};
    const p = multi ? `run ${n + 1}.` : "run.";
    for (const f of ["kind", "status", "phase", "step", "statusMessage", "error", "attempt", "snapshot"] as const) cells.push(cell(`${p}${f}`, s[f], c[f]));
  }
  for (const [n, [id, s]] of Object.entries(sdk.incidents).entries()) {
    const c = shown.incidents[id];
    const p = multi ? `incident ${n + 1}.` : "incident.";
    if (!s) continue;
    cells.push(cell(`${p}status`, s.status, c === null ? "(no incident)" : c?.status));
    cells.push(cell(`${p}reason`, s.reason, c?.reason));
    cells.push(cell(`${p}attempts`, s.attempts, c?.attempts));
  }
  cells.push(cell("agent.status", sdk.agentStatus, shown.agentStatus));
  cells.push(cell("list.count", sdk.listed.length, shown.listed.length));
  cells.push(cell("list.ids", [...sdk.listed].sort(), [...shown.listed].sort()));
  cells.push(cell("overview.running", sdk.overview?.running, shown.overview?.running));
  cells.push(cell("overview.openIncidents", sdk.overview?.openIncidents, shown.overview?.openIncidents));
  cells.push(cell("list.openIncidents", sdk.openIncidentRows, shown.openIncidentRows));
  cells.push(cell("agent.eventsNumberedTo", sdk.numbering?.highest, shown.numbering?.highest));
  cells.push(cell("gaps.listed", sdk.numbering?.onGapsList, shown.numbering?.onGapsList));
  return cells;
}

/** A scenario's table, for its failure message: field | SDK | console | verdict. */
export function scenarioTable(name: string, cells: Cell[]): string {
  const rows = cells.map((c) => [c.field, show(c.sdk), show(c.console), c.verdict]);
  const head = ["field", "SDK says", "console shows", ""];
  const widths = head.map((h, i) => Math.min(60, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const line = (r: string[]) => r.map((v, i) => v.slice(0, 60).padEnd(widths[i]!)).join(" | ");
  return [`${name}: the console disagrees with the SDK`, line(head), widths.map((w) => "-".repeat(w)).join("-|-"), ...rows.map(line)].join("\n");
}

/** The whole matrix at a glance: one line per scenario, one column per field; ✓ agree, ✗ disagree, · SDK does not say. */
export function matrixTable(results: { name: string; cells: Cell[] }[]): string {
  const fields = [...new Set(results.flatMap((r) => r.cells.map((c) => c.field)))];
  const nameWidth = Math.max(8, ...results.map((r) => r.name.length));
  const mark = (c: Cell | undefined) => (!c ? " " : c.verdict === "agree" ? "✓" : c.verdict === "DISAGREE" ? "✗" : "·");
  const header = `${"scenario".padEnd(nameWidth)} | ${fields.map((_f, i) => String(i + 1).padStart(2)).join(" ")}`;
  const legend = fields.map((f, i) => `${String(i + 1).padStart(2)} ${f}`).join("\n");
  const lines = results.map((r) => `${r.name.padEnd(nameWidth)} | ${fields.map((f) => ` ${mark(r.cells.find((c) => c.field === f))}`).join(" ")}`);
  const bad = results.reduce((n, r) => n + r.cells.filter((c) => c.verdict === "DISAGREE").length, 0);
  return [`truth matrix: ${results.length} scenarios, ${bad} disagreeing fields`, header, ...lines, "columns:", legend].join("\n");
}
