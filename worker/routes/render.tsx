import type { Child } from "hono/jsx";
import { ErrorPage } from "../../console/layout";
import { type Refusal, respondRefusal } from "../http/refusal";
import { type ConsoleContext, pageContext } from "./context";

/** Renders a full page with status. */
export function page(c: ConsoleContext, body: Child, status: 200 | 400 | 404 = 200) {
  return c.html(body as never, status);
}

const TITLES: Partial<Record<Refusal["status"], string>> = {
  400: "Bad request",
  403: "Refused",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  500: "Something went wrong",
};

/**
 * A refusal from a route, through the one rule and the one body (worker/http): the error page for people,
 * `{ ok: false, error: { code, message } }` for JSON callers, one line of plain text for htmx. That line is never
 * parsed as HTML: console/static/response-text.js puts non-HTML answers in as text. Without a signed-in user
 * (a 404 before auth, a 405) there is no console to lay a page out for: the sentence as text.
 */
export function refuse(c: ConsoleContext, r: Refusal) {
  return respondRefusal(c, r, {
    page: () =>
      c.var.user
        ? c.html(<ErrorPage ctx={pageContext(c)} status={r.status} title={TITLES[r.status] ?? "Refused"} message={r.message} code={r.code} />, r.status)
        : c.text(r.message, r.status),
  });
}

/** A 404 (`not_found`) or 400 (`invalid_input`) refusal. */
export function problem(c: ConsoleContext, status: 400 | 404, message: string) {
  return refuse(c, { status, code: status === 404 ? "not_found" : "invalid_input", message });
}
