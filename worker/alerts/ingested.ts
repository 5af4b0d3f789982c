import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { storeFromEnv } from "../store";
import { type AlertEnv, alertConfig } from "./config";
import { alertsFromEvents } from "./detect";
import { raiseAlerts } from "./raise";

/**
 * Alerts for a batch ingest has just stored (exhaustions, new ambiguous ops). Throws only for a refused configuration
 * (worker/config.ts), which the queue handler has already refused; otherwise the events are
 * stored and acknowledged whatever happens here, and a failure is logged. Costs nothing with alerts off.
 */
export async function alertOnIngested(env: AlertEnv & { DB: D1Database }, events: TelemetryEvent[]): Promise<void> {
  if (!events.length || !alertConfig(env).enabled) return;
  try {
    const alerts = await alertsFromEvents(storeFromEnv(env), events);
    if (alerts.length) await raiseAlerts(env, alerts);
  } catch (e) {
    console.error(`[alerts] could not raise alerts for an ingested batch: ${e instanceof Error ? e.message : String(e)}`);
  }
}
