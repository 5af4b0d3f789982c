import { Hono } from "hono";
import { runHref, searchMatchHref } from "../../console/links";
import { SearchPage } from "../../console/pages/search";
import { searchMatchLabel } from "../../console/words";
import { type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page } from "./render";

/**
 * GET /search?q=…: the header's search box. Exactly one match (or several on one page) redirects to it (302); several are
 * listed by kind; none is a page that says so (200). An empty or oversized query is a 400 (the read model's
 * BadRequest, answered by the app's error handler). JSON for Accept: application/json, with each match's label and href.
 */
export const search = new Hono<ConsoleEnv>();

search.get("/search", async (c) => {
  // Nothing in the hot store: the id may be older than the hot window, so the store looks in the R2 history (a
  // bounded read: the last 24 hours), and `history` says how far that looked.
  const { result, history, historyRun } = await storeOf(c).search.withHistory(c.req.query("q") ?? "");
  // JSON keeps each match's label, worded by the console from the match's facts.
  const matches = result.matches.map((m) => ({ ...m, label: searchMatchLabel(m), href: searchMatchHref(m) }));
  if (wantsJson(c)) return c.json({ ...result, matches, history });
  // A run that completed healthily left D1: its events in the R2 history carry its id as a run id, and its page
  // folds it from there. Go to it, as to a run D1 holds.
  if (historyRun) return c.redirect(runHref(result.query, historyRun), 302);
  // One page for everything found (an ambiguous op and its session are one page): go there.
  const pages = new Set(matches.map((m) => m.href));
  if (pages.size === 1 && !result.truncated) return c.redirect(matches[0]!.href, 302);
  return page(c, <SearchPage ctx={pageContext(c)} result={result} history={history} />);
});
