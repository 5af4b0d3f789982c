import { Hono } from "hono";
import { LISTS, stuckSubjectHref } from "../../console/links";
import { STUCK_COLUMN_SET, StuckList, StuckPage } from "../../console/pages/stuck";
import { stuckDetail } from "../../console/stuck-words";
import { parseStuckFilters } from "../../src/store/console-store";
import { consoleConfig } from "../config";
import type { Env } from "../env";
import { listQuery } from "./columns";
import { type ConsoleContext, type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page } from "./render";

/** Stuck detection's list (filters `rule`, `agentClass`), JSON for Accept: application/json. */
export const stuck = new Hono<ConsoleEnv>();

/** The most findings one page shows. */
const PAGE_LIMIT = 200;

/** The rules' thresholds (worker/config.ts: STUCK_*_MINUTES). */
export const stuckConfigOf = (env: Env) => consoleConfig(env).stuck;

/** The findings for the URL's filters (validated: an unknown rule is a 400 that names the rules). */
async function read(c: ConsoleContext) {
  const { q, cols } = listQuery(c, STUCK_COLUMN_SET);
  const { rule, agentClass } = parseStuckFilters({ rule: q.rule, agentClass: q.agentClass });
  const config = stuckConfigOf(c.env);
  const ctx = pageContext(c);
  const entries = await storeOf(c).stuck.list(ctx.now, config, { rule, agentClass, limit: PAGE_LIMIT });
  return { ctx, config, query: { rule, agentClass, cols: q.cols }, entries, cols };
}

stuck.get(LISTS.stuck, async (c) => {
  const { ctx, config, query, entries, cols } = await read(c);
  if (wantsJson(c)) return c.json({ config, entries: entries.map((e) => ({ ...e, detail: stuckDetail(e, ctx.now, config), href: stuckSubjectHref(e) })) });
  return page(c, <StuckPage ctx={ctx} query={query} entries={entries} config={config} limit={PAGE_LIMIT} cols={cols} />);
});

stuck.get("/partials/stuck", async (c) => {
  const { ctx, config, query, entries, cols } = await read(c);
  return c.html(<StuckList ctx={ctx} query={query} entries={entries} config={config} limit={PAGE_LIMIT} cols={cols} />);
});
