import type { Source } from "@agent-oncall/telemetry";
import { agentHref } from "../../console/links";
import { telemetryHealthWords } from "../../console/telemetry-words";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";
import { pipelineBroken, pipelineState } from "../../src/admin-rpc/telemetry-health";
import type { AgentReconciliation } from "../reconcile/agent";
import { type AlertEnv, alertConfig } from "./config";
import { type Alert, alertDay } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/**
 * "Events not reaching the console": an agent reconciliation asked says, by its own telemetry counts, that it ships
 * nothing (its Worker has no telemetry Queue binding) or that its sends fail while events wait. Such an agent looks
 * quiet, not broken, everywhere else in the console. Keyed by the agent and the UTC day, like alarm loops. Null when
 * the pipeline is not broken, or the agent does not report it.
 */
export function telemetryAlert(target: Source, health: TelemetryHealth | null, now: number): Alert | null {
  if (!health || !pipelineBroken(health)) return null;
  const day = alertDay(now);
  return {
    key: JSON.stringify(["telemetry", target.agentClass, target.agentName, day]),
    kind: "telemetry",
    agentClass: target.agentClass,
    agentName: target.agentName,
    subjectId: `${target.agentClass}/${target.agentName}`,
    title: "Events not reaching the console",
    summary: telemetryHealthWords(health, now).sentence,
    path: agentHref(target),
    at: now,
    details: {
      state: pipelineState(health),
      pending: health.pending,
      sendErrors: health.sendErrors,
      dropped: health.dropped,
      lastError: health.lastError,
      since: new Date(health.since).toISOString(),
      failingSince: health.failingSince === null ? null : new Date(health.failingSince).toISOString(),
      day,
    },
  };
}

/** Raises an alert per agent of a reconciliation pass whose telemetry is broken. Alerts off: nothing is computed. */
export async function alertTelemetry(env: AlertEnv & { DB: D1Database }, passes: AgentReconciliation[], now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  return raiseAlerts(
    env,
    passes.flatMap((p) => telemetryAlert(p.target, p.telemetry, now) ?? []),
    now,
  );
}

/** alertTelemetry for a background task (the reconcile cron, POST /api/reconcile): logs instead of throwing. */
export function alertTelemetryInBackground(env: AlertEnv & { DB: D1Database }, passes: AgentReconciliation[]): Promise<void> {
  return alertTelemetry(env, passes).then(
    (r) => {
      if (r.queued || r.rateLimited) console.log(`[alerts] telemetry: ${r.queued} queued, ${r.rateLimited} rate limited`);
    },
    (e) => console.error(`[alerts] telemetry check failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}
