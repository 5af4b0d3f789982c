import { stuckSubjectHref } from "../../console/links";
import { stuckDetail } from "../../console/stuck-words";
import type * as stuck from "../../src/store/read-models/stuck";
import { consoleConfig } from "../config";
import { consoleStoreFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import type { Alert } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/** Findings one check turns into alerts at most (the rate limit still applies per channel). */
const STUCK_LIMIT = 100;

/** One alert per stuck episode: the same rule on the same subject since the same moment. Worded at `now`. */
export function stuckAlert(e: stuck.StuckEntry, now: number, config: stuck.StuckConfig): Alert {
  const detail = stuckDetail(e, now, config);
  return {
    key: JSON.stringify(["stuck", e.rule, e.agentClass, e.agentName, e.subjectKind, e.subjectId, e.since]),
    kind: "stuck",
    agentClass: e.agentClass,
    agentName: e.agentName,
    subjectId: e.rule,
    title: "Stuck",
    summary: `${e.subjectKind} ${e.subjectId}: ${detail}`,
    path: stuckSubjectHref(e),
    at: e.since,
    details: { rule: e.rule, subjectKind: e.subjectKind, subjectId: e.subjectId, detail },
  };
}

/**
 * Raises alerts for what the stuck detector finds now. Called by the reconcile cron and by
 * POST /api/reconcile (local dev runs no crons). Alerts off: nothing is computed.
 */
export async function alertStuck(env: AlertEnv & { DB: D1Database }, now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  const stuckConfig = consoleConfig(env).stuck;
  // Every partition's findings, merged once: each finding raises one alert.
  const entries = await consoleStoreFromEnv(env, now).stuck.list(now, stuckConfig, { limit: STUCK_LIMIT });
  return raiseAlerts(
    env,
    entries.map((e) => stuckAlert(e, now, stuckConfig)),
    now,
  );
}

/** alertStuck for a background task: logs instead of throwing. */
export function alertStuckInBackground(env: AlertEnv & { DB: D1Database }): Promise<void> {
  return alertStuck(env).then(
    (r) => {
      if (r.queued || r.rateLimited) console.log(`[alerts] stuck: ${r.queued} queued, ${r.rateLimited} rate limited`);
    },
    (e) => console.error(`[alerts] stuck check failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}
