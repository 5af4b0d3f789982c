import { z } from "zod";

/**
 * Alerting settings from the console's environment, validated once per value. Alerts are off when no
 * webhook URL is set, and also when any alert setting is invalid: the problem is logged once and the
 * /alerts page names it, but ingest and cron go on (a typo in a var must never stop the console).
 */

/** What the alerting reads from env (worker/env.ts documents each). */
export type AlertEnv = {
  ALERTS_QUEUE?: Queue<AlertMessage>;
  ALERT_WEBHOOK_URL?: string;
  ALERT_SLACK_WEBHOOK_URL?: string;
  ALERT_RATE_LIMIT_PER_HOUR?: string;
  ALERT_CONSOLE_URL?: string;
  ALERT_RETRY_DELAY_SECONDS?: string;
};

/** A queued delivery: which row it is, and the exact body to POST (built when the alert was raised). */
export type AlertMessage = { alertKey: string; channel: AlertChannel; body: string };

/** "webhook": the generic JSON payload; "slack": Slack's incoming-webhook payload. */
export type AlertChannel = "webhook" | "slack";

export type AlertConfig =
  | {
      enabled: true;
      channels: { channel: AlertChannel; url: string }[];
      limitPerHour: number;
      /** Base of links in payloads, without a trailing slash; null: payloads carry paths only. */
      consoleUrl: string | null;
      /** The n-th retry waits n × this many seconds. */
      retryDelaySeconds: number;
    }
  | { enabled: false; reason: string };

const unset = (v: unknown) => (v === "" ? undefined : v);
const httpUrl = (name: string) =>
  z.preprocess(
    unset,
    z
      .string()
      .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), { error: `${name} must be an http(s) URL` })
      .optional(),
  );
const whole = (name: string, min: number, max: number, dflt: number) =>
  z.preprocess(
    unset,
    z
      .string()
      .regex(/^\d+$/, { error: `${name} must be a whole number from ${min} to ${max}` })
      .transform(Number)
      .refine((n) => n >= min && n <= max, { error: `${name} must be a whole number from ${min} to ${max}` })
      .default(dflt),
  );

const schema = z.object({
  ALERT_WEBHOOK_URL: httpUrl("ALERT_WEBHOOK_URL"),
  ALERT_SLACK_WEBHOOK_URL: httpUrl("ALERT_SLACK_WEBHOOK_URL"),
  ALERT_RATE_LIMIT_PER_HOUR: whole("ALERT_RATE_LIMIT_PER_HOUR", 1, 10_000, 30),
  ALERT_CONSOLE_URL: httpUrl("ALERT_CONSOLE_URL"),
  ALERT_RETRY_DELAY_SECONDS: whole("ALERT_RETRY_DELAY_SECONDS", 1, 3600, 30),
});

const logged = new Set<string>();

/** The alerting configuration, or why alerts are off. Never throws; an invalid setting is logged once per isolate. */
export function alertConfig(env: AlertEnv): AlertConfig {
  const r = schema.safeParse({
    ALERT_WEBHOOK_URL: env.ALERT_WEBHOOK_URL,
    ALERT_SLACK_WEBHOOK_URL: env.ALERT_SLACK_WEBHOOK_URL,
    ALERT_RATE_LIMIT_PER_HOUR: env.ALERT_RATE_LIMIT_PER_HOUR,
    ALERT_CONSOLE_URL: env.ALERT_CONSOLE_URL,
    ALERT_RETRY_DELAY_SECONDS: env.ALERT_RETRY_DELAY_SECONDS,
  });
  if (!r.success) {
    const reason = `alerts are off: ${r.error.issues.map((i) => i.message).join("; ")}`;
    if (!logged.has(reason)) {
      logged.add(reason);
      console.error(`[alerts] ${reason}`);
    }
    return { enabled: false, reason };
  }
  const v = r.data;
  const channels: { channel: AlertChannel; url: string }[] = [];
  if (v.ALERT_WEBHOOK_URL) channels.push({ channel: "webhook", url: v.ALERT_WEBHOOK_URL });
  if (v.ALERT_SLACK_WEBHOOK_URL) channels.push({ channel: "slack", url: v.ALERT_SLACK_WEBHOOK_URL });
  if (!channels.length) return { enabled: false, reason: "alerts are off: neither ALERT_WEBHOOK_URL nor ALERT_SLACK_WEBHOOK_URL is set" };
  if (!env.ALERTS_QUEUE) return { enabled: false, reason: "alerts are off: the ALERTS_QUEUE binding is missing (see wrangler.jsonc)" };
  return {
    enabled: true,
    channels,
    limitPerHour: v.ALERT_RATE_LIMIT_PER_HOUR,
    consoleUrl: v.ALERT_CONSOLE_URL ? v.ALERT_CONSOLE_URL.replace(/\/+$/, "") : null,
    retryDelaySeconds: v.ALERT_RETRY_DELAY_SECONDS,
  };
}
