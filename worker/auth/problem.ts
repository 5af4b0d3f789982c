import type { Context } from "hono";
import { problemPage } from "./pages";

/** An auth refusal, in words a person understands. */
export type AuthProblem = {
  status: 401 | 403 | 503;
  /** Stable machine code, e.g. `expired`, `no_role`, `csrf_origin`, `auth_not_configured`. */
  code: string;
  title: string;
  message: string;
  email?: string;
  signOut?: boolean;
};

/** Whether the caller wants a short answer instead of a page: an htmx request, or an API client asking for JSON. */
export function wantsShortAnswer(c: Context): "htmx" | "json" | false {
  if (c.req.header("HX-Request")) return "htmx";
  if ((c.req.header("Accept") ?? "").toLowerCase().includes("application/json")) return "json";
  return false;
}

/**
 * Answers a refusal, negotiated: htmx gets one line of text (it swaps it into the page), JSON clients get
 * `{ error, message }`, browsers get a full HTML page. Never cached.
 */
export function respondProblem(c: Context, p: AuthProblem): Response | Promise<Response> {
  c.header("Cache-Control", "no-store");
  c.header("Vary", "Accept, HX-Request", { append: true });
  switch (wantsShortAnswer(c)) {
    case "htmx":
      return c.text(p.message, p.status);
    case "json":
      return c.json({ error: p.code, message: p.message }, p.status);
    default:
      return c.html(problemPage(p), p.status);
  }
}
