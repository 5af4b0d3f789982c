import { Hono } from "hono";
import { ALERT_COLUMN_SET, type AlertSettingsView, AlertsPage } from "../../console/pages/alerts";
import { alertConfig } from "../jobs";
import { listQuery } from "./columns";
import { type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page } from "./render";

/**
 * The alert delivery log (/alerts): read through the store's read model; filters and cursor from the URL. It also
 * counts the alerts the hourly budgets suppressed in the last 24 h (SUPPRESSED_WINDOW_MS), which a filter cannot hide.
 */
export const alerts = new Hono<ConsoleEnv>();

/** The configuration as the page may show it: channel hosts, never the (secret) URLs. */
function settingsView(env: ConsoleEnv["Bindings"]): AlertSettingsView {
  const c = alertConfig(env);
  if (!c.enabled) return c;
  return {
    enabled: true,
    channels: c.channels.map((ch) => ({ channel: ch.channel, host: new URL(ch.url).host })),
    budgets: c.budgets,
    consoleUrl: c.consoleUrl,
  };
}

/** The window of the suppressed count on /alerts. */
export const SUPPRESSED_WINDOW_MS = 24 * 3_600_000;

alerts.get("/alerts", async (c) => {
  const { q, cols } = listQuery(c, ALERT_COLUMN_SET);
  const store = storeOf(c);
  const list = await store.alerts.deliveries(q, { cursor: q.cursor, limit: q.limit });
  const ctx = pageContext(c);
  const suppressed = await store.alerts.suppressed({ since: ctx.now - SUPPRESSED_WINDOW_MS });
  const settings = settingsView(c.env);
  if (wantsJson(c)) return c.json({ ...list, settings, suppressed });
  return page(c, <AlertsPage ctx={ctx} query={q} page={list} settings={settings} suppressed={suppressed} cols={cols} />);
});
