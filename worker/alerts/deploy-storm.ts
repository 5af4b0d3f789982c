import { listHref } from "../../console/links";
import type { DeployStorm } from "../../src/store/read-models/deploys";
import { consoleConfig } from "../config";
import { consoleStoreFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import type { Alert } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/**
 * "Recovery storm after deploy": one alert per Worker version whose incident rate in its first
 * DEPLOY_STORM_WINDOW_MINUTES exceeds the previous version's (same window) by DEPLOY_STORM_FACTOR
 * (src/store/read-models/deploys.ts deployStorms). Keyed by the version, so a version alerts once.
 */
export function deployStormAlert(s: DeployStorm): Alert {
  const minutes = (ms: number) => Math.round(ms / 60_000);
  return {
    key: JSON.stringify(["deploy_storm", s.deploy.version]),
    kind: "deploy_storm",
    agentClass: s.top?.agentClass ?? "",
    agentName: s.top?.agentName ?? "",
    subjectId: s.deploy.version,
    title: "Recovery storm after deploy",
    summary: `version ${s.deploy.version} opened ${s.incidents} incidents in its first ${minutes(s.windowMs)} min; version ${s.previous.version} opened ${s.previousIncidents} in its ${s.previousFrom === s.previous.firstSeen ? "first" : "last"} ${minutes(s.previousWindowMs)} min${s.previousFrom === s.previous.firstSeen ? "" : " before it"}`,
    path: listHref("incidents", { version: s.deploy.version }),
    at: s.deploy.firstSeen,
    details: {
      version: s.deploy.version,
      previousVersion: s.previous.version,
      incidents: s.incidents,
      windowMinutes: minutes(s.windowMs),
      previousIncidents: s.previousIncidents,
      previousWindowMinutes: minutes(s.previousWindowMs),
      ratePerHour: Math.round(s.rate * 10) / 10,
      previousRatePerHour: Math.round(s.previousRate * 10) / 10,
    },
  };
}

/** Raises storm alerts for versions deployed within the last two windows. Alerts off: nothing is computed. */
export async function alertDeployStorms(env: AlertEnv & { DB: D1Database }, now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  const storms = await consoleStoreFromEnv(env, now).alerts.deployStorms(now, consoleConfig(env).deployStorm);
  return raiseAlerts(env, storms.map(deployStormAlert), now);
}

/** alertDeployStorms for a background task (the reconcile cron, POST /api/reconcile): logs instead of throwing. */
export function alertDeployStormsInBackground(env: AlertEnv & { DB: D1Database }): Promise<void> {
  return alertDeployStorms(env).then(
    (r) => {
      if (r.queued || r.rateLimited) console.log(`[alerts] deploy storm: ${r.queued} queued, ${r.rateLimited} rate limited`);
    },
    (e) => console.error(`[alerts] deploy storm check failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}
