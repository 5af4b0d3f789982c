import { alarmRateSentence } from "../../console/awake-words";
import { agentHref } from "../../console/links";
import type { AlarmRate } from "../../src/store/read-models/residency";
import { consoleStoreFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import { type Alert, alertDay } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/**
 * "Alarm loop": an agent kept awake by an alarm that keeps firing with nothing to do (the awake list's loops,
 * src/store/read-models/residency.ts). Keyed by the agent and the UTC day of the check, so an agent alerts at most
 * once a day however long it loops.
 */
export function alarmLoopAlert(a: AlarmRate, now: number): Alert {
  const day = alertDay(now);
  return {
    key: JSON.stringify(["alarm_loop", a.agentClass, a.agentName, day]),
    kind: "alarm_loop",
    agentClass: a.agentClass,
    agentName: a.agentName,
    subjectId: `${a.agentClass}/${a.agentName}`,
    title: "Alarm loop",
    summary: alarmRateSentence(a),
    path: agentHref(a, "", "awake"),
    at: a.lastAt ?? now,
    details: { firings: a.firings, perHour: Math.round(a.perHour), firstAt: a.firstAt, lastAt: a.lastAt, day },
  };
}

/** Raises an alert per agent flagged as an alarm loop now (once per agent and day). Alerts off: nothing is computed. */
export async function alertAlarmLoops(env: AlertEnv & { DB: D1Database }, now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  const { items } = await consoleStoreFromEnv(env, now).agents.alarmRates({ now, loopsOnly: true });
  return raiseAlerts(
    env,
    items.map((a) => alarmLoopAlert(a, now)),
    now,
  );
}

/** alertAlarmLoops for a background task (the reconcile cron, POST /api/reconcile): logs instead of throwing. */
export function alertAlarmLoopsInBackground(env: AlertEnv & { DB: D1Database }): Promise<void> {
  return alertAlarmLoops(env).then(
    (r) => {
      if (r.queued || r.rateLimited) console.log(`[alerts] alarm loops: ${r.queued} queued, ${r.rateLimited} rate limited`);
    },
    (e) => console.error(`[alerts] alarm loop check failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}
