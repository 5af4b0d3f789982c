/**
 * The one rule for what form an answer takes, from the request alone:
 * - `json`: the caller asked for JSON (an `Accept` that names application/json and does not prefer HTML over it),
 *   or the path is under /api/ (the CLI's and scripts' routes answer nothing else);
 * - `fragment`: htmx swapping part of a page (`HX-Request: true`), which gets HTML to swap, or one line of text;
 * - `page`: everything else (a browser loading a page).
 * An explicit ask for JSON wins over HX-Request: a script that sends both reads what it asked for.
 */
export type AnswerForm = "json" | "fragment" | "page";

/** What the rule reads of a request: its path and headers (Hono's `c.req` fits). */
export type AnswerRequest = { path: string; header(name: string): string | undefined };

/** The headers the form depends on: caches must key answers by them. */
export const ANSWER_VARY = "Accept, HX-Request";

/** The form to answer `req` in (see the module's comment for the rule). */
export function answerForm(req: AnswerRequest): AnswerForm {
  if (req.path === "/api" || req.path.startsWith("/api/") || asksForJson(req.header("Accept"))) return "json";
  if (req.header("HX-Request") === "true") return "fragment";
  return "page";
}

/** Whether an Accept header names application/json (q > 0) with at least the weight it gives text/html. */
export function asksForJson(accept: string | undefined): boolean {
  if (!accept) return false;
  let json = 0;
  let html = 0;
  for (const range of accept.toLowerCase().split(",")) {
    const [type = "", ...params] = range.split(";").map((s) => s.trim());
    const qParam = params.find((p) => p.startsWith("q="));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    const weight = Number.isFinite(q) ? q : 0;
    if (type === "application/json") json = Math.max(json, weight);
    else if (type === "text/html") html = Math.max(html, weight);
  }
  return json > 0 && json >= html;
}
