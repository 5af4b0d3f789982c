import type { Context } from "hono";
import type { ListViewContext } from "../../console/components/views";
import type { PageContext } from "../../console/layout";
import { type AuthEnv, csrfHxHeaders, csrfToken, DEV_AUTH_BANNER } from "../auth";
import { consoleConfig } from "../config";
import { answerForm } from "../http/answer";

/** The console's Hono environment: bindings, what auth() established, and a list page's saved-view state (worker/routes/views.tsx). */
export type ConsoleEnv = { Bindings: AuthEnv["Bindings"]; Variables: AuthEnv["Variables"] & { listView?: ListViewContext } };
export type ConsoleContext = Context<ConsoleEnv>;

/** Everything a page needs to know about the request, from auth and configuration. */
export function pageContext(c: ConsoleContext): PageContext {
  const config = consoleConfig(c.env);
  const settings = config.console;
  return {
    user: c.var.user,
    devBanner: c.var.devAuth ? DEV_AUTH_BANNER : null,
    hxHeaders: csrfHxHeaders(c),
    csrfToken: csrfToken(c),
    pollSeconds: settings.pollSeconds,
    traceUrl: settings.apmTraceUrl,
    now: Date.now(),
    hotWindowHours: config.retention.hotWindowHours,
    listView: c.var.listView,
  };
}

/** True when the one rule (worker/http/answer.ts) says htmx is swapping a fragment, not loading a page. */
export const isHtmx = (c: ConsoleContext) => answerForm(c.req) === "fragment";
/** True when the one rule (worker/http/answer.ts) says the caller wants JSON (the CLI, scripts, /api/*). */
export const wantsJson = (c: ConsoleContext) => answerForm(c.req) === "json";
