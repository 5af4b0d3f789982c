import { Hono } from "hono";
import { z } from "zod";
import { adminErrorWords } from "../../console/admin-words";
import { LISTS } from "../../console/links";
import { type AwakeFacts, AwakePage, AwakePanel } from "../../console/pages/awake";
import { consoleAdminClient } from "../admin-client";
import { type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page, problem } from "./render";

/** "Why is this agent awake": the fleet list of agents awake on alarms, and each agent page's panel. */
export const awake = new Hono<ConsoleEnv>();

/** `resident=idle` keeps only the agents resident with nothing to do (alarm loops). */
const awakeQuery = z.object({ resident: z.enum(["idle", "any"], { error: "resident must be idle or any" }).optional() });

awake.get(LISTS.awake, async (c) => {
  const q = awakeQuery.safeParse(c.req.query());
  if (!q.success) return problem(c, 400, q.error.issues.map((i) => i.message).join("; "));
  const loopsOnly = q.data.resident === "idle";
  const ctx = pageContext(c);
  const store = storeOf(c);
  // Woken with nothing reported: the tail handler records these.
  const [{ items }, silent] = await Promise.all([store.agents.alarmRates({ now: ctx.now, loopsOnly }), store.agents.silentWakes({ now: ctx.now })]);
  if (wantsJson(c)) return c.json({ items, loopsOnly, silentWakes: silent.items });
  return page(c, <AwakePage ctx={ctx} items={items} loopsOnly={loopsOnly} silentWakes={silent.items} />);
});

awake.get("/agents/:agentClass/:agentName/awake", async (c) => {
  const t = { agentClass: c.req.param("agentClass"), agentName: c.req.param("agentName") };
  const store = storeOf(c);
  if (!(await store.agents.find(t))) return problem(c, 404, `No agent ${t.agentClass} "${t.agentName}" has reported to this console.`);
  const ctx = pageContext(c);
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const [residency, alarms, resident] = await Promise.all([
    admin.residency(t),
    store.agents.alarmRates({ now: ctx.now, agent: t }),
    store.agents.residentEstimate(t, ctx.now),
  ]);
  const facts: AwakeFacts = {
    residency: residency.ok ? residency.value : { error: adminErrorWords(residency.error) },
    alarms: alarms.items[0] ?? null,
    resident,
  };
  if (wantsJson(c)) return c.json(facts);
  return c.html(<AwakePanel ctx={ctx} facts={facts} />);
});
