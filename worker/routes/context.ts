import type { Context } from "hono";
import type { ListViewContext } from "../../console/components/views";
import type { PageContext } from "../../console/layout";
import type { ConsoleStore } from "../../src/store/console-store";
import { type AuthEnv, csrfHxHeaders, csrfToken, DEV_AUTH_BANNER } from "../auth";
import { consoleConfig } from "../config";
import { answerForm } from "../http/answer";
import { consoleStoreFromEnv } from "../store";

/** The console's Hono environment: bindings, what auth() established, and a list page's saved-view state (worker/routes/views.tsx). */
export type ConsoleEnv = { Bindings: AuthEnv["Bindings"]; Variables: AuthEnv["Variables"] & { listView?: ListViewContext; store?: ConsoleStore } };
export type ConsoleContext = Context<ConsoleEnv>;

/** The store API for this request (src/store/console-store.ts), built once per request from the bindings. */
export function storeOf(c: ConsoleContext): ConsoleStore {
  let store = c.get("store");
  if (!store) {
    store = consoleStoreFromEnv(c.env);
    c.set("store", store);
  }
  return store;
}

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
