import { forecastWords, respentSummary } from "../../console/budget-words";
import { agentHref, incidentHref, listHref } from "../../console/links";
import type { ConsoleStore } from "../../src/store/console-store";
import { type ExhaustingIncident, HOUR_MS, type Respent } from "../../src/store/read-models/budget";
import { consoleConfig } from "../config";
import { consoleStoreFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import type { Alert } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/**
 * Budget alerts, checked with the stuck ones (reconcile cron, POST /api/reconcile): an open incident forecast to
 * exhaust within EXHAUST_FORECAST_MINUTES (once per incident), and an agent or a class whose recovery re-spent more
 * tokens in the last hour than SPEND_ALERT_*_TOKENS_PER_HOUR (once per subject and clock hour).
 */

/** One alert per incident: a later, sooner forecast is the same warning. */
export function exhaustSoonAlert(i: ExhaustingIncident, now: number): Alert {
  const when = forecastWords(i.forecast, now);
  return {
    key: JSON.stringify(["exhaust_soon", i.agentClass, i.agentName, i.incidentId]),
    kind: "exhaust_soon",
    agentClass: i.agentClass,
    agentName: i.agentName,
    subjectId: i.incidentId,
    title: "Recovery likely to exhaust",
    summary: `chat incident ${i.incidentId} is at ${i.attempts}${i.maxAttempts !== null ? ` of ${i.maxAttempts}` : ""} attempts and will exhaust ${when}`,
    path: incidentHref(i.incidentId, i),
    at: now,
    details: {
      incidentId: i.incidentId,
      attempts: i.attempts,
      maxAttempts: i.maxAttempts,
      forecastAt: new Date(i.forecast.at).toISOString(),
      intervalMs: i.forecast.intervalMs,
    },
  };
}

/** One alert per agent (or class) and clock hour. */
export function respentAlert(r: Respent, threshold: number, now: number): Alert {
  const hour = new Date(Math.floor(now / HOUR_MS) * HOUR_MS).toISOString();
  const scope = r.agentName === null ? "class" : "agent";
  return {
    key: JSON.stringify(["respent", scope, r.agentClass, r.agentName ?? "", hour]),
    kind: "respent",
    agentClass: r.agentClass,
    // A class alert is about every agent of the class: its agent name is empty.
    agentName: r.agentName ?? "",
    subjectId: scope,
    title: "Recovery re-spent tokens",
    summary: respentSummary(r, threshold),
    path: r.agentName === null ? listHref("incidents", { agentClass: r.agentClass }) : agentHref({ agentClass: r.agentClass, agentName: r.agentName }),
    at: now,
    details: { scope, tokens: r.tokens, threshold, hour },
  };
}

/** The budget alerts due now (pure over the read models' answers). */
export async function budgetAlerts(store: ConsoleStore, env: AlertEnv, now: number): Promise<Alert[]> {
  const { budget } = consoleConfig(env);
  const soon = await store.overview.exhaustingSoon(now, budget.forecastWindowMs, 100);
  const alerts = soon.items.map((i) => exhaustSoonAlert(i, now));
  if (budget.spendPerAgentPerHour !== null || budget.spendPerClassPerHour !== null) {
    const spent = await store.alerts.respentLastHour(now);
    const perAgent = budget.spendPerAgentPerHour;
    const perClass = budget.spendPerClassPerHour;
    if (perAgent !== null) for (const a of spent.agents) if (a.tokens > perAgent) alerts.push(respentAlert(a, perAgent, now));
    if (perClass !== null) for (const c of spent.classes) if (c.tokens > perClass) alerts.push(respentAlert(c, perClass, now));
  }
  return alerts;
}

/** Raises the budget alerts due now. Alerts off: nothing is computed. */
export async function alertBudget(env: AlertEnv & { DB: D1Database }, now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  return raiseAlerts(env, await budgetAlerts(consoleStoreFromEnv(env, now), env, now), now);
}

/** alertBudget for a background task: logs instead of throwing. */
export function alertBudgetInBackground(env: AlertEnv & { DB: D1Database }): Promise<void> {
  return alertBudget(env).then(
    (r) => {
      if (r.queued || r.rateLimited) console.log(`[alerts] budget: ${r.queued} queued, ${r.rateLimited} rate limited`);
    },
    (e) => console.error(`[alerts] budget check failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}
