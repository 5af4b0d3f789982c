import { Hono } from "hono";
import { ALERT_COLUMN_SET, type AlertSettingsView, AlertsPage } from "../../console/pages/alerts";
import { listAlertDeliveries } from "../../src/store/read-models/alerts";
import { alertConfig } from "../alerts/config";
import { listQuery } from "./columns";
import { type ConsoleEnv, pageContext, wantsJson } from "./context";
import { page } from "./render";

/** The alert delivery log (/alerts): read through the store's read model; filters and cursor from the URL. */
export const alerts = new Hono<ConsoleEnv>();

/** The configuration as the page may show it: channel hosts, never the (secret) URLs. */
function settingsView(env: ConsoleEnv["Bindings"]): AlertSettingsView {
  const c = alertConfig(env);
  if (!c.enabled) return c;
  return {
    enabled: true,
    channels: c.channels.map((ch) => ({ channel: ch.channel, host: new URL(ch.url).host })),
    limitPerHour: c.limitPerHour,
    consoleUrl: c.consoleUrl,
  };
}

alerts.get("/alerts", async (c) => {
  const { q, cols } = listQuery(c, ALERT_COLUMN_SET);
  const list = await listAlertDeliveries(c.env.DB, q, { cursor: q.cursor, limit: q.limit });
  const settings = settingsView(c.env);
  if (wantsJson(c)) return c.json({ ...list, settings });
  return page(c, <AlertsPage ctx={pageContext(c)} query={q} page={list} settings={settings} cols={cols} />);
});
