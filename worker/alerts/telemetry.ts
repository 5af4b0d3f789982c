import type { Source } from "@agent-oncall/telemetry";
import { agentHref, listHref } from "../../console/links";
import { telemetryHealthWords } from "../../console/telemetry-words";
import type { TelemetryHealth } from "../../src/admin-rpc/contract";
import { pipelineState } from "../../src/admin-rpc/pipeline-state";
import type { ConsoleStore } from "../../src/store/console-store";
import { heardFromBy } from "../../src/store/heard-from";
import { TELEMETRY_QUIET_MS } from "../../src/store/read-models/blocked-agents";
import type { AgentReconciliation } from "../reconcile/agent";
import { consoleStoreFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import { type Alert, alertDay } from "./payloads";
import { type RaiseResult, raiseAlerts } from "./raise";

/** An agent whose events cannot reach the console now, by its own counts. */
export type BrokenPipeline = { target: Source; health: TelemetryHealth; state: "no_queue" | "failing" };

/**
 * The agents of reconciliation passes whose events cannot reach the console: no Queue binding, or a last send that
 * failed while the console has heard nothing from the agent for TELEMETRY_QUIET_MS, for certain: counted from the latest
 * it may have heard from it (its stored last_seen is coarse, src/store/heard-from.ts), as the blocked list counts.
 */
export async function brokenPipelines(store: ConsoleStore, passes: AgentReconciliation[], now: number): Promise<BrokenPipeline[]> {
  const out: BrokenPipeline[] = [];
  for (const { target, telemetry: health } of passes) {
    const state = pipelineState(health);
    if (!health || (state !== "no_queue" && state !== "failing")) continue;
    if (state === "failing") {
      const agent = await store.agents.find(target);
      if (agent && now - heardFromBy(agent.lastSeen) < TELEMETRY_QUIET_MS) continue;
    }
    out.push({ target, health, state });
  }
  return out;
}

/**
 * "Events not reaching the console", one alert per agent class, state and UTC day: a missing binding or a Queue that
 * refuses sends belongs to the Worker, so it breaks its agents all at once, and one alert each would spend the
 * channel's hourly budget (a high-priority one, src/store/alerts.ts ALERT_PRIORITY, which storms share). It names the first agent asked and how many more
 * said the same, and links to that agent, or to the class's list of such agents when there are several; elsewhere
 * such agents look quiet, not broken (the overview counts them).
 */
export function telemetryAlert(group: BrokenPipeline[], now: number): Alert {
  const [first] = group as [BrokenPipeline, ...BrokenPipeline[]];
  const { target, health, state } = first;
  const day = alertDay(now);
  const more = group.length > 1 ? ` ${group.length - 1} more agent(s) of ${target.agentClass} asked in the same pass say the same.` : "";
  return {
    key: JSON.stringify(["telemetry", target.agentClass, state, day]),
    kind: "telemetry",
    agentClass: target.agentClass,
    agentName: target.agentName,
    subjectId: state,
    title: "Events not reaching the console",
    summary: `${target.agentName}: ${telemetryHealthWords(health, now).sentence}${more}`,
    // One agent: its page. Several: the list of the class's agents whose events cannot reach the console (the
    // answers this pass recorded put them there), so the link shows every agent the alert counts.
    path: group.length > 1 ? listHref("agents", { blocked: "true", agentClass: target.agentClass }) : agentHref(target),
    at: now,
    details: {
      state,
      agents: group.length,
      pending: health.pending,
      sendErrors: health.sendErrors,
      lastSendError: health.lastSendError,
      failingSince: health.failingSince === null ? null : new Date(health.failingSince).toISOString(),
      day,
    },
  };
}

/** Raises the telemetry alerts a reconciliation pass calls for. Alerts off: nothing is computed. */
export async function alertTelemetry(env: AlertEnv & { DB: D1Database }, passes: AgentReconciliation[], now = Date.now()): Promise<RaiseResult> {
  const config = alertConfig(env);
  if (!config.enabled) return { queued: 0, rateLimited: 0, duplicates: 0, off: config.reason };
  const groups = new Map<string, BrokenPipeline[]>();
  for (const b of await brokenPipelines(consoleStoreFromEnv(env, now), passes, now)) {
    const k = JSON.stringify([b.target.agentClass, b.state]);
    groups.set(k, [...(groups.get(k) ?? []), b]);
  }
  return raiseAlerts(
    env,
    [...groups.values()].map((g) => telemetryAlert(g, now)),
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
