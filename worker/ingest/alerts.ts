import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { type AlertEnv, alertConfig, exhaustionWaveAlerts, raiseAlerts } from "../jobs";
import { storeFromEnv } from "../store";
import { alertsFromEvents } from "./alert-candidates";

/**
 * Alerts for a batch ingest has just stored (exhaustions, new ambiguous ops, and the exhaustion wave of a class whose
 * exhaustions reach EXHAUSTION_WAVE_MIN_INCIDENTS within EXHAUSTION_WAVE_MINUTES). Throws only for a refused configuration
 * (worker/config.ts), which the queue handler has already refused; otherwise the events are
 * stored and acknowledged whatever happens here, and a failure is logged. Costs nothing with alerts off.
 * Ingest picks the candidates by its own projection rules (alert-candidates.ts); the jobs room raises them.
 */
export async function alertOnIngested(env: AlertEnv & { DB: D1Database }, events: TelemetryEvent[], now = Date.now()): Promise<void> {
  const config = alertConfig(env);
  if (!events.length || !config.enabled) return;
  try {
    const store = storeFromEnv(env);
    const alerts = await alertsFromEvents(store, events);
    const exhaustedClasses = alerts.filter((a) => a.kind === "exhausted").map((a) => a.agentClass);
    // The wave first: with its own budget the order does not decide delivery, but the receiver hears of the wave first.
    const waves = await exhaustionWaveAlerts(store, exhaustedClasses, config.wave, now);
    if (alerts.length || waves.length) await raiseAlerts(env, [...waves, ...alerts], now);
  } catch (e) {
    console.error(`[alerts] could not raise alerts for an ingested batch: ${e instanceof Error ? e.message : String(e)}`);
  }
}
