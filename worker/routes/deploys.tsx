import { Hono } from "hono";
import { LISTS } from "../../console/links";
import { DeploysPage } from "../../console/pages/deploys";
import { consoleConfig } from "../config";
import { type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page } from "./render";

/** Deploys (Worker versions, newest first) with their incident figures; JSON for Accept: application/json. */
export const deploys = new Hono<ConsoleEnv>();

deploys.get(LISTS.deploys, async (c) => {
  const store = storeOf(c);
  const list = await store.deploys.list();
  const { figures } = await store.deploys.figures(list.map((d) => d.version));
  const rows = list.map((deploy, i) => ({ deploy, figures: figures[i]! }));
  const storm = consoleConfig(c.env).deployStorm;
  if (wantsJson(c)) return c.json({ deploys: rows.map((r) => ({ ...r.deploy, ...r.figures })), storm });
  return page(c, <DeploysPage ctx={pageContext(c)} rows={rows} storm={storm} />);
});
