/**
 * CSV as RFC 4180 reads it, safe to open in a spreadsheet: a cell with a quote, comma or line break is quoted
 * (quotes doubled), and a text cell that starts like a formula (`=`, `+`, `-`, `@`, or a tab or carriage return
 * some programs strip first) is prefixed with `'`, so a spreadsheet shows it as text instead of running it.
 * Numbers and booleans are written as they are; null is an empty cell; objects and arrays are their JSON.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One cell of `value`, escaped (see the module's comment). */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  let text = typeof value === "string" ? value : JSON.stringify(value);
  // JSON of an object starts with { or [, never a formula; text from agents may.
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One line of cells, CRLF-terminated as RFC 4180 says. */
export function csvLine(cells: readonly unknown[]): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}
