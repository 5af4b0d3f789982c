import { AsyncLocalStorage } from "node:async_hooks";
import { csvLine } from "./csv";

/** The formats a list downloads in. */
export const EXPORT_FORMATS = ["csv", "json"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * What the pages read so far took from the R2 history (runs' completed ones): the span asked for, the part read
 * without gaps, whether that is all of it, and the objects fetched.
 */
export type ExportHistory = { from: number; to: number; coveredFrom: number | null; coveredTo: number | null; complete: boolean; objects: number };

/**
 * One page of a list as an export reads it: its rows, where to continue (null at the end), whether the source itself
 * stopped short, and (a list that reads history) what the pages so far read of it.
 */
export type ExportPage = { items: Record<string, unknown>[]; next: string | null; more?: boolean; history?: ExportHistory };
/** Reads one page of at most `limit` rows after `cursor` (null: the first page). */
export type ExportReader = (cursor: string | null, limit: number) => Promise<ExportPage>;

/** The largest page the read models serve (src/store/read-models/paging.ts MAX_LIMIT). */
const PAGE = 200;

/** What the stream says at its end (the JSON's last fields; the CSV's last line when cut). */
export type ExportEnd = { count: number; truncated: boolean };

export type ExportStreamOptions = {
  format: ExportFormat;
  cap: number;
  /** Fields of the JSON document before `items` (the list's name, its filters, the cap). */
  head: Record<string, unknown>;
  /** The CSV's last line when the list was cut (a sentence from console/words.ts). */
  cutLine: (count: number) => string;
  /** The CSV's last line (the JSON's `error`) when reading failed part way (a sentence from console/words.ts). */
  failedLine: (count: number) => string;
  /** The CSV's line after the rows saying what span of history the pages read (a sentence from console/words.ts). */
  historyLine?: (h: ExportHistory) => string;
  /** Rows per read (default and at most the read models' largest page, 200). */
  pageSize?: number;
  /** The CSV header of an empty list (no row names the columns then); none: an empty list's CSV is empty. */
  emptyHeader?: readonly string[];
  /** Each row as the file holds it (the columns `cols=` picked); default: the row as read. */
  project?: (item: Record<string, unknown>) => Record<string, unknown>;
};

const projected = (p: ExportPage, project: (item: Record<string, unknown>) => Record<string, unknown>): ExportPage => ({ ...p, items: p.items.map(project) });

/**
 * Streams a list, page by page over its keyset, as CSV or one JSON document, stopping at `cap` rows. The first
 * page is read before the stream is made, so a bad filter fails the request (a 400) rather than the download.
 * A page asks for one row more than the cap leaves, so a list of exactly `cap` rows is not called cut.
 *
 * Later pages are read when the client asks for more bytes, after the handler has returned: each read runs in the
 * request's async context, captured here. Outside it, the tracing wrapper's D1 binding threw on every query ("Config
 * is undefined") and the download stopped after two pages on a normal row. A read that fails all the same ends the
 * file with a line (CSV) or fields (JSON) saying it is incomplete, then fails the transfer, so neither the file nor
 * the response passes for whole.
 */
export async function exportStream(read: ExportReader, o: ExportStreamOptions): Promise<ReadableStream<Uint8Array>> {
  const enc = new TextEncoder();
  const page0 = Math.min(PAGE, o.pageSize ?? PAGE);
  const limitFor = (count: number) => Math.max(1, Math.min(page0, o.cap - count + 1));
  const project = o.project;
  const readPage = project ? async (cursor: string | null, limit: number) => projected(await read(cursor, limit), project) : read;
  let page: ExportPage | null = await readPage(null, limitFor(0));
  let count = 0;
  let columns: string[] | null = null;
  let started = false;

  const head = () => {
    if (o.format === "json")
      return `{${Object.entries(o.head)
        .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)},`)
        .join("")}"items":[`;
    return "";
  };
  const row = (item: Record<string, unknown>, index: number) => {
    if (o.format === "json") return `${index ? "," : ""}\n${JSON.stringify(item)}`;
    // The first page names the columns: every key any of its rows has, in the order met.
    let header = "";
    if (!columns) {
      columns = [...new Set(page!.items.flatMap((i) => Object.keys(i)))];
      header = csvLine(columns);
    }
    return header + csvLine(columns.map((c) => item[c]));
  };
  // The reason stays in the log: a database error's text is not for the file.
  const failed = (count: number) =>
    o.format === "json"
      ? `\n],"count":${count},"truncated":true,"complete":false,"error":${JSON.stringify(o.failedLine(count))}}\n`
      : `${o.failedLine(count)}\r\n`;
  // What the pages read of the history (the last page's account covers them all), said after the rows.
  let history: ExportHistory | undefined;
  const end = (e: ExportEnd) =>
    o.format === "json"
      ? `\n],"count":${e.count},"truncated":${e.truncated}${e.truncated ? `,"cutAt":${e.count}` : ""}${history ? `,"history":${JSON.stringify(history)}` : ""}}\n`
      : (e.count === 0 && o.emptyHeader?.length ? csvLine(o.emptyHeader) : "") +
        (history && o.historyLine ? `${o.historyLine(history)}\r\n` : "") +
        (e.truncated ? `${o.cutLine(e.count)}\r\n` : "");

  // The request's context (its trace, its bindings' instrumentation), for the reads the client's pace triggers later.
  const inRequest = AsyncLocalStorage.snapshot();
  let failure: Error | null = null;

  return new ReadableStream<Uint8Array>({
    pull: (controller) =>
      inRequest(async () => {
        // The failure's last line was taken by the client: now the transfer itself fails.
        if (failure) return controller.error(failure);
        try {
          await pump(controller);
        } catch (e) {
          failure = e instanceof Error ? e : new Error(String(e));
          console.error(`[export] stopped after ${count} rows: ${failure.message}`);
          page = null;
          controller.enqueue(enc.encode((started ? "" : head()) + failed(count)));
          started = true;
        }
      }),
  });

  async function pump(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    let text = started ? "" : head();
    started = true;
    const current = page;
    if (!current) return;
    history = current.history ?? history;
    let truncated = false;
    for (const item of current.items) {
      if (count >= o.cap) {
        truncated = true;
        break;
      }
      text += row(item, count);
      count++;
    }
    // A source that is not paged (stuck, search, bulk) may stop short itself: then the download is cut too.
    if (current.more) truncated = true;
    if (truncated || !current.next) {
      page = null;
      controller.enqueue(enc.encode(text + end({ count, truncated })));
      controller.close();
      return;
    }
    controller.enqueue(enc.encode(text));
    page = await readPage(current.next, limitFor(count));
  }
}
