import type { Context } from "hono";
import type { PageContext } from "../../console/layout";
import { answerForm } from "../http/answer";
import { csrfHxHeaders, csrfToken, DEV_AUTH_BANNER, traceLinkTemplate, type AuthEnv } from "../auth";

/** The console's Hono environment: bindings plus what auth() established. */
export type ConsoleEnv = AuthEnv;
export type ConsoleContext = Context<ConsoleEnv>;

/** Everything a page needs to know about the request, from auth and configuration. */
export function pageContext(c: ConsoleContext): PageContext {
  const poll = Number(c.env.POLL_SECONDS ?? 15);
  const traceUrl = traceLinkTemplate(c.env.APM_TRACE_URL);
  return {
    user: c.var.user,
    devBanner: c.var.devAuth ? DEV_AUTH_BANNER : null,
    hxHeaders: csrfHxHeaders(c),
    csrfToken: csrfToken(c),
    pollSeconds: Number.isFinite(poll) && poll >= 2 ? Math.min(poll, 3600) : 15,
    traceUrl: traceUrl && traceUrl.includes("{traceId}") ? traceUrl : null,
    now: Date.now(),
  };
}

/** True when the one rule (worker/http/answer.ts) says htmx is swapping a fragment, not loading a page. */
export const isHtmx = (c: ConsoleContext) => answerForm(c.req) === "fragment";
/** True when the one rule (worker/http/answer.ts) says the caller wants JSON (the CLI, scripts, /api/*). */
export const wantsJson = (c: ConsoleContext) => answerForm(c.req) === "json";
