import type { Context } from "hono";
import { z } from "zod";
import type { AdminErrorCode } from "../../src/admin-rpc/contract";
import type { JwtFailure } from "../auth/jwt";
import { ANSWER_VARY, answerForm } from "./answer";

/**
 * The codes a refusal can carry on the wire, by who refuses: the admin client's typed errors, sign-in and
 * roles (worker/auth), CSRF, and the console's own (`method_not_allowed`; `name_taken` / `shelf_full` for saved views; `config_invalid` while a setting is refused;
 * `internal` for our own failure).
 */
export type RefusalCode =
  | AdminErrorCode
  | JwtFailure
  | "missing"
  | "auth_not_configured"
  | "dev_mode_local_only"
  | "no_email"
  | "bad_email"
  | "no_role"
  | "insufficient_role"
  | "csrf_origin"
  | "csrf_missing"
  | "csrf_invalid"
  | "method_not_allowed"
  | "name_taken"
  | "shelf_full"
  | "config_invalid"
  | "internal";

/** Statuses a refusal is answered with (the console's own failure is the only 5xx but for sign-in being unavailable). */
export type RefusalStatus = 400 | 401 | 403 | 404 | 405 | 409 | 422 | 424 | 500 | 503;

/**
 * The one error body on the wire, for every refusal a JSON caller gets: `{ ok: false, error: { code, message } }`,
 * the same shape as the admin client's AdminResult, so one check reads both. `code` is stable for programs,
 * `message` is one sentence for people.
 */
export const refusalBody = z.object({
  ok: z.literal(false),
  error: z.object({ code: z.string().min(1), message: z.string().min(1) }),
});
export type RefusalBody = { ok: false; error: { code: RefusalCode; message: string } };

/** A refusal: status, code and sentence. */
export type Refusal = { status: RefusalStatus; code: RefusalCode; message: string };

/** The body of a refusal. */
export const refusal = (code: RefusalCode, message: string): RefusalBody => ({ ok: false, error: { code, message } });

/** How a refusal looks to people, per form; the JSON form is always the one body. */
export type RefusalViews = {
  /** A browser loading a page: a full page. */
  page: () => Response | Promise<Response>;
  /** htmx: HTML to swap in (default: the sentence as plain text, which htmx puts in as text). */
  fragment?: () => Response | Promise<Response>;
};

/**
 * Answers a refusal in the form answerForm() picks: the one JSON body, an htmx fragment, or a page.
 * Never cached, and varies by the headers the form depends on.
 */
export function respondRefusal(c: Context, r: Refusal, views: RefusalViews): Response | Promise<Response> {
  c.header("Cache-Control", "no-store");
  c.header("Vary", ANSWER_VARY, { append: true });
  switch (answerForm(c.req)) {
    case "json":
      return c.json(refusal(r.code, r.message), r.status);
    case "fragment":
      return views.fragment ? views.fragment() : c.text(r.message, r.status);
    case "page":
      return views.page();
  }
}
