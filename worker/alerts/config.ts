import type { AlertBudgets } from "../../src/store/alerts";
import { consoleConfig, type SettingVars } from "../config";

/**
 * Alerting settings, as worker/config.ts parsed them. Alerts are off when no webhook URL is set (a malformed
 * setting is refused there, like any other).
 */

/** What the alerting reads from env: its queue binding (settings come from worker/config.ts). */
export type AlertEnv = { ALERTS_QUEUE?: Queue<AlertMessage> } & SettingVars;

/** A queued delivery: which row it is, and the exact body to POST (built when the alert was raised). */
export type AlertMessage = { alertKey: string; channel: AlertChannel; body: string };

/** "webhook": the generic JSON payload; "slack": Slack's incoming-webhook payload. */
export type AlertChannel = "webhook" | "slack";

export type AlertConfig =
  | {
      enabled: true;
      channels: { channel: AlertChannel; url: string }[];
      /** Alerts per channel in any hour, per priority (src/store/alerts.ts ALERT_PRIORITY). */
      budgets: AlertBudgets;
      /** Base of links in payloads, without a trailing slash; null: payloads carry paths only. */
      consoleUrl: string | null;
      /** The n-th retry waits n × this many seconds. */
      retryDelaySeconds: number;
      /** When exhaustions of one class are a wave (worker/alerts/exhaustion-wave.ts). */
      wave: { minIncidents: number; windowMs: number };
    }
  | { enabled: false; reason: string };

/** The alerting configuration (worker/config.ts: ALERT_*), or why alerts are off: no webhook URL, or no queue binding. */
export function alertConfig(env: AlertEnv): AlertConfig {
  const { channels, budgets, consoleUrl, retryDelaySeconds, wave } = consoleConfig(env).alerts;
  if (!channels.length) return { enabled: false, reason: "alerts are off: neither ALERT_WEBHOOK_URL nor ALERT_SLACK_WEBHOOK_URL is set" };
  if (!env.ALERTS_QUEUE) return { enabled: false, reason: "alerts are off: the ALERTS_QUEUE binding is missing (see wrangler.jsonc)" };
  return { enabled: true, channels, budgets, consoleUrl, retryDelaySeconds, wave };
}
