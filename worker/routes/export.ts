import { Hono } from "hono";
import { declaredFields, pickFields } from "../../console/components/columns";
import { listColumnsFor } from "../../console/list-columns";
import { exportCutLine, exportFailedLine, exportHistoryLine, noColumnChoiceSentence } from "../../console/words";
import { consoleConfig } from "../config";
import { EXPORT_LISTS, EXPORT_SOURCES, type ExportList } from "../export/lists";
import { EXPORT_FORMATS, type ExportFormat, exportStream } from "../export/stream";
import { consoleStoreFromEnv } from "../store";
import { parseCols } from "./columns";
import type { ConsoleEnv } from "./context";
import { problem } from "./render";
import { stuckConfigOf } from "./stuck";

/**
 * GET /export/:list?format=csv|json&<the list's filters>: the list as a download, with the same filters as its
 * page (same query parameters, same read model), streamed page by page, at most EXPORT_ROW_CAP rows (stated in
 * X-Export-Cap, and at the end of the file when the list was cut). A download that cannot be read to its end says
 * so in its last line and then fails the transfer (worker/export/stream.ts). Any signed-in role may export: it only reads.
 */
export const exportRoute = new Hono<ConsoleEnv>();

/** Parameters of the download itself, not filters of the list (`view` marks a page opened through a saved view). */
const OWN_PARAMS = new Set(["format", "cursor", "limit", "cols", "view"]);

exportRoute.get("/export/:list", async (c) => {
  const list = c.req.param("list");
  if (!(EXPORT_LISTS as readonly string[]).includes(list))
    return problem(c, 404, `There is no list "${list.slice(0, 60)}" to export; the lists are ${EXPORT_LISTS.join(", ")}.`);
  const format = c.req.query("format") ?? "csv";
  if (!(EXPORT_FORMATS as readonly string[]).includes(format))
    return problem(c, 400, `format must be one of ${EXPORT_FORMATS.join(", ")} (got ${JSON.stringify(format.slice(0, 40))}).`);
  const filters = Object.fromEntries(Object.entries(c.req.query()).filter(([k]) => !OWN_PARAMS.has(k)));
  // The columns the page shows (`cols=`), from the same declaration: the file keeps their fields only.
  const set = listColumnsFor(list as ExportList, filters);
  const given = c.req.queries("cols");
  if (given?.length && !set) return problem(c, 400, noColumnChoiceSentence(list));
  const cols = set ? parseCols(set, given) : [];
  const cap = consoleConfig(c.env).export.rowCap;
  const now = Date.now();
  const read = EXPORT_SOURCES[list as ExportList]({ store: consoleStoreFromEnv(c.env, now), now, stuckConfig: stuckConfigOf(c.env) }, filters, cap);
  // The first page is read here: a bad filter is the read model's BadRequest, a 400 before any byte is sent.
  const body = await exportStream(read, {
    format: format as ExportFormat,
    cap,
    head: { list, filters, ...(cols.length ? { cols } : {}), cap, exportedAt: new Date(now).toISOString() },
    cutLine: exportCutLine,
    failedLine: exportFailedLine,
    historyLine: exportHistoryLine,
    ...(set ? { emptyHeader: declaredFields(set, cols) } : {}),
    ...(set && cols.length ? { project: (item: Record<string, unknown>) => pickFields(set, cols, item) } : {}),
  });
  const stamp = new Date(now).toISOString().replace(/[:.]/g, "-");
  c.header("Content-Type", format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8");
  c.header("Content-Disposition", `attachment; filename="${list}-${stamp}.${format}"`);
  c.header("X-Export-Cap", String(cap));
  c.header("Cache-Control", "no-store");
  return c.body(body);
});
