import { Hono } from "hono";
import { runHref, searchMatchHref } from "../../console/links";
import { SearchPage } from "../../console/pages/search";
import { searchMatchLabel } from "../../console/words";
import { historySearch } from "../../src/store/history/read";
import { carriesRunId } from "../../src/store/history/run";
import { searchIn } from "../../src/store/read-models";
import { storeFromEnv } from "../store";
import { type ConsoleEnv, pageContext, wantsJson } from "./context";
import { page } from "./render";

/**
 * GET /search?q=…: the header's search box. Exactly one match (or several on one page) redirects to it (302); several are
 * listed by kind; none is a page that says so (200). An empty or oversized query is a 400 (the read model's
 * BadRequest, answered by the app's error handler). JSON for Accept: application/json, with each match's label and href.
 */
export const search = new Hono<ConsoleEnv>();

search.get("/search", async (c) => {
  const result = await searchIn(storeFromEnv(c.env), c.req.query("q") ?? "");
  // Nothing in the hot store: the id may be older than the hot window. Look in the R2 history (a bounded read:
  // the last 24 hours by default, ID_SEARCH_LIMITS), and say how far that looked.
  const history = result.matches.length === 0 && c.env.HISTORY ? await historySearch(c.env.HISTORY, { id: result.query }) : null;
  // JSON keeps each match's label, worded by the console from the match's facts.
  const matches = result.matches.map((m) => ({ ...m, label: searchMatchLabel(m), href: searchMatchHref(m) }));
  if (wantsJson(c)) return c.json({ ...result, matches, history });
  // A run that completed healthily left D1: its events in the R2 history carry its id as a run id, and its page
  // folds it from there. Go to it, as to a run D1 holds.
  const ran = history?.events.find((e) => carriesRunId(e, result.query));
  if (ran) return c.redirect(runHref(result.query, ran), 302);
  // One page for everything found (an ambiguous op and its session are one page): go there.
  const pages = new Set(matches.map((m) => m.href));
  if (pages.size === 1 && !result.truncated) return c.redirect(matches[0]!.href, 302);
  return page(c, <SearchPage ctx={pageContext(c)} result={result} history={history} />);
});
