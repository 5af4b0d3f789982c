import type { Child } from "hono/jsx";
import { ErrorPage } from "../../console/layout";
import { type ConsoleContext, pageContext, wantsJson } from "./context";

/** Renders a full page with status. */
export function page(c: ConsoleContext, body: Child, status: 200 | 400 | 404 = 200) {
  return c.html(body as never, status);
}

/**
 * A 404 or 400 answer: an error page for people, JSON for the CLI, one line of plain text for htmx.
 * That line is never parsed as HTML: console/static/response-text.js puts non-HTML answers in as text.
 */
export function problem(c: ConsoleContext, status: 400 | 404, message: string) {
  const title = status === 404 ? "Not found" : "Bad request";
  if (wantsJson(c) || c.req.path.startsWith("/api/")) return c.json({ ok: false, error: { code: status === 404 ? "not_found" : "invalid_input", message } }, status);
  if (c.req.header("HX-Request") === "true") return c.text(message, status);
  if (!c.var.user) return c.text(message, status);
  return page(c, <ErrorPage ctx={pageContext(c)} status={status} title={title} message={message} />, status);
}
