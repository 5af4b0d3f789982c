import type { AlertMessage } from "./alerts/config";

/**
 * Bindings and settings the console Worker reads. Agents live in other Workers:
 * the console binds their classes by script_name in wrangler.jsonc and looks
 * them up by class name (worker/admin-client.ts), so they are not typed here.
 */
declare global {
  namespace Cloudflare {
    interface Env extends ConsoleEnv {}
  }
}

export type Env = Cloudflare.Env;

type ConsoleEnv = {
  DB: D1Database;
  TELEMETRY_QUEUE: Queue<unknown>;
  /** Bulk actions: one message per target (worker/bulk). */
  BATCH_QUEUE?: Queue<unknown>;
  ASSETS?: Fetcher;
  /** Days of history to keep in D1 (cron retention). */
  RETENTION_DAYS?: string;
  /** The whole event history, gzip NDJSON in R2 (src/store/history). Unbound: ingest writes D1 only, and says so once. */
  HISTORY?: R2Bucket;
  /** Days the R2 history keeps (default 400); the hourly cron deletes whole expired days. Invalid: it deletes nothing. */
  HISTORY_RETENTION_DAYS?: string;
  /** Agent shards per hour in the R2 history (default 4, 1 to 256): more shards, cheaper agent reads, more puts per batch. */
  HISTORY_SHARDS?: string;
  /** Shard counts older hours were written under, comma-separated (after a change of HISTORY_SHARDS); agent reads look there too. */
  HISTORY_PREVIOUS_SHARDS?: string;
  /** Hours of event time the hot store keeps timelines (event segments) for (default 48; cron retention). */
  HOT_WINDOW_HOURS?: string;
  /** Oldest event ingest accepts, in days before receipt (default RETENTION_DAYS); older ones go to dead letters. */
  INGEST_MAX_AGE_DAYS?: string;
  /** How far in the future an event time may be, in seconds after receipt (default 300); later ones go to dead letters. */
  INGEST_MAX_FUTURE_SKEW_SECONDS?: string;
  /** Minutes a run, session or incident may stay open without an event before cron asks its agent (default 10). */
  RECONCILE_AFTER_MINUTES?: string;
  /** Agents one reconciliation pass asks (default 20, at most 100). */
  RECONCILE_BATCH?: string;
  /** Stuck detection (src/store/read-models/stuck.ts), in minutes: a run with no progress event for this long (default 15). */
  STUCK_NO_PROGRESS_MINUTES?: string;
  /** A recovery incident open with no attempt for this long (default 15). */
  STUCK_INCIDENT_NO_ATTEMPT_MINUTES?: string;
  /** An alarm this long past due when reconciliation asked the agent (default 5). */
  STUCK_ALARM_OVERDUE_MINUTES?: string;
  /** How far back to look for recoveries or turns skipped without a reason (default 1440). */
  STUCK_SKIPPED_NO_REASON_MINUTES?: string;
  /** Shared with the agents' Worker (a secret): when set, ingest dead-letters events without a valid signature. */
  TELEMETRY_SIGNING_SECRET?: string;
  /** OTLP/HTTP traces endpoint, e.g. https://api.example-apm.com/v1/traces. A secret; unset means no export. */
  OTLP_ENDPOINT?: string;
  /** OTLP headers, `key=value,key2=value2` (a secret). */
  OTLP_HEADERS?: string;
  OTEL_SERVICE_NAME?: string;
  /** Seconds between live refreshes of console views (default 15; paused while the tab is hidden). */
  POLL_SECONDS?: string;
  /** Link to your APM for a trace, with `{traceId}`, e.g. https://apm.example.com/traces/{traceId}. */
  APM_TRACE_URL?: string;
  /** "access" (default): Cloudflare Access JWT required. "dev": fixed local identity, never for production. */
  AUTH_MODE?: string;
  /** Access team domain, e.g. https://myteam.cloudflareaccess.com (also the expected JWT issuer). */
  ACCESS_TEAM_DOMAIN?: string;
  /** AUD tag of the console's Access application. */
  ACCESS_AUD?: string;
  /** Overrides `${ACCESS_TEAM_DOMAIN}/cdn-cgi/access/certs` as the signing-key URL (tests). */
  ACCESS_JWKS_URL?: string;
  /** Role mapping JSON: {"operator":["alice@example.com","*@sre.example.com"],"viewer":["*@example.com","group:oncall"]}. */
  ROLES?: string;
  /** Dev mode identity (default dev@localhost) and role (default operator). */
  DEV_USER?: string;
  DEV_ROLE?: string;
  /** HMAC key for CSRF tokens (a secret, at least 32 characters); required in access mode. */
  CSRF_SECRET?: string;
  /** Alert deliveries (worker/alerts): one message per alert and channel, retried by the queue. */
  ALERTS_QUEUE: Queue<AlertMessage>;
  /** Generic JSON webhook for alerts (a secret). Unset, like ALERT_SLACK_WEBHOOK_URL: alerts are off. */
  ALERT_WEBHOOK_URL?: string;
  /** Slack incoming-webhook URL for alerts (a secret). */
  ALERT_SLACK_WEBHOOK_URL?: string;
  /** Alerts per channel per hour (default 30); more are logged as rate_limited, not sent. */
  ALERT_RATE_LIMIT_PER_HOUR?: string;
  /** The console's public base URL, e.g. https://oncall.example.com: alerts link to its pages. */
  ALERT_CONSOLE_URL?: string;
  /** The n-th retry of a failed delivery waits n times this many seconds (default 30). */
  ALERT_RETRY_DELAY_SECONDS?: string;
};
