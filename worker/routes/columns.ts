import { z } from "zod";
import { type AnyColumnSet, columnIds } from "../../console/components/columns";
import { colsRefusalSentence } from "../../console/words";
import { BadRequest } from "../../src/store/read-models/errors";
import { commaList } from "../../src/store/read-models/filters";
import type { ConsoleContext } from "./context";

/**
 * `cols=` on a list (its page, its live partial, its download): the columns to show, comma-separated or repeated
 * (the chooser's checkboxes arrive as cols=a&cols=b); none: the list's default. A column the list does not have is
 * a 400 that names the ones it has.
 */
export function parseCols(set: AnyColumnSet, given: readonly string[] | undefined): string[] {
  const ids = columnIds(set) as [string, ...string[]];
  const schema = commaList(z.array(z.enum(ids, { error: colsRefusalSentence(set.list, ids) })).optional());
  const r = schema.safeParse(given?.length ? given.join(",") : undefined);
  if (!r.success) throw new BadRequest(r.error.issues.map((i) => i.message).join("; "));
  return r.data ?? [];
}

/**
 * A list's query and its columns: `cols` kept as one comma list (so the pager, the live partial, the export links and
 * a saved view all carry it). A list without a column declaration (the events timeline) has none.
 */
export function listQuery(c: ConsoleContext, set: AnyColumnSet | null): { q: Record<string, string | undefined>; cols: string[] } {
  const q = c.req.query() as Record<string, string | undefined>;
  if (!set) return { q, cols: [] };
  const cols = parseCols(set, c.req.queries("cols"));
  if (cols.length) q.cols = cols.join(",");
  else delete q.cols;
  return { q, cols };
}
