/**
 * Reading rendered pages by their hooks (data-testid, data-* attributes) instead of by their markup or words:
 * a test asserts what an element says in data, so rewording a sentence or restyling a tag does not break it.
 * A small scanner over the Worker's own output (hono/jsx: double-quoted attributes, no unclosed non-void tags).
 */

/** One element found: its tag, its attributes (entities decoded), its inner HTML and its text. */
export type Found = { tag: string; attrs: Record<string, string>; html: string; text: string };

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]);

/** Decodes the entities the renderer writes (and numeric ones). */
export const decode = (s: string) =>
  s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(Number.parseInt(n, 16)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

function attrsOf(open: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of open.matchAll(/\s([^\s"'>/=]+)(?:="([^"]*)")?/g)) out[m[1]!] = decode(m[2] ?? "");
  return out;
}

/** The inner HTML of the element whose open tag ends at `from`: up to its matching close tag (same-name nesting counted). */
function innerOf(html: string, tag: string, from: number): string {
  const re = new RegExp(`<(/?)${tag}\\b[^>]*>`, "gi");
  re.lastIndex = from;
  let depth = 1;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    depth += m[1] ? -1 : 1;
    if (depth === 0) return html.slice(from, m.index);
  }
  return html.slice(from);
}

/** The visible text of some HTML: tags dropped, entities decoded, whitespace collapsed. */
export const textOf = (html: string) =>
  decode(html.replace(/<[^>]*>/g, " "))
    .replace(/\s+/g, " ")
    .trim();

/** Every element carrying attribute `name` (with exactly `value` when given), in document order. */
export function findAll(html: string, name: string, value?: string): Found[] {
  const found: Found[] = [];
  for (const m of html.matchAll(/<([a-zA-Z][\w-]*)(\s[^>]*)?>/g)) {
    const attrs = attrsOf(m[2] ?? "");
    if (!(name in attrs) || (value !== undefined && attrs[name] !== value)) continue;
    const tag = m[1]!.toLowerCase();
    const inner = VOID.has(tag) ? "" : innerOf(html, tag, m.index + m[0].length);
    found.push({ tag, attrs, html: inner, text: textOf(inner) });
  }
  return found;
}

/** The first element with data-testid="id", or undefined. */
export const byTestId = (html: string, id: string): Found | undefined => findAll(html, "data-testid", id)[0];

/** The first element with data-testid="id"; fails the test (with the id) when there is none. */
export function mustTestId(html: string, id: string): Found {
  const f = byTestId(html, id);
  if (!f) throw new Error(`no element with data-testid="${id}" in the page`);
  return f;
}

/** The hrefs of every link in some HTML, decoded (so a test compares them with the URL the link module builds). */
export const hrefs = (html: string) => findAll(html, "href").map((a) => a.attrs.href!);
