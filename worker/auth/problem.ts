import type { Context } from "hono";
import { type Refusal, respondRefusal } from "../http/refusal";
import { problemPage } from "./pages";

/** An auth refusal, in words a person understands. */
export type AuthProblem = Refusal & {
  status: 401 | 403 | 503;
  title: string;
  email?: string;
  signOut?: boolean;
};

/**
 * Answers a refusal through the one rule (worker/http): htmx gets one line of text (it swaps it into the page),
 * JSON clients get the one error body `{ ok: false, error: { code, message } }`, browsers get a full HTML page
 * (self-contained: there may be no signed-in user to lay a console page out for). Never cached.
 */
export function respondProblem(c: Context, p: AuthProblem): Response | Promise<Response> {
  return respondRefusal(c, p, { page: () => c.html(problemPage(p), p.status) });
}
