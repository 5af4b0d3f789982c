import { type OtlpTarget, parseOtlpHeaders } from "@agent-oncall/telemetry";
import { z } from "zod";
import type { AlertBudgets } from "../src/store/alerts";
import type { DeployStormConfig } from "../src/store/read-models/deploys";
import { DEFAULT_STUCK_CONFIG, STUCK_CONFIG_VARS, STUCK_RULES, type StuckConfig } from "../src/store/read-models/stuck";
import { DEFAULT_RETENTION_PACE } from "../src/store/retention-pace";
import { type AuthConfig, readAuthConfig } from "./auth/config";
import { readTraceLinkSetting } from "./auth/trace-link";
import { DEFAULT_STREAM_FLUSH_MS } from "./stream-flush";

/**
 * The console Worker's settings (wrangler.jsonc vars and secrets), parsed with zod once per env object (so once
 * per isolate), in this one module. Every consumer reads the parsed `ConsoleConfig`, never a raw var.
 *
 * THE POLICY: an unset or blank variable takes its stated default; a malformed one is refused, never defaulted.
 * A refusal names each variable, its value (secrets are not echoed) and what is expected, is logged once, and
 * then every entry point refuses too: HTTP requests get a 503 page that names the variables (the details stay in
 * the log: values can quote emails or domains), and the queue and cron handlers throw, so the platform retries
 * their batches until the setting is fixed. A typo never quietly changes what is deleted, alerted or accepted.
 *
 * docs/configuration.md documents exactly these variables (test/worker/config.test.ts checks both ways).
 */

/** One variable: what it must be (in words, for the refusal), whether it is a secret, and its schema. */
type VarSpec = { expected: string; secret?: boolean; schema: z.ZodType };

/** A whole number from `min` to `max`. */
const whole = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/)
    .transform(Number)
    .refine((n) => n >= min && n <= max);
/** A decimal number from `min` to `max` (fractions allowed). */
const decimal = (min: number, max: number, { exclusiveMin = false } = {}) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/)
    .transform(Number)
    .refine((n) => (exclusiveMin ? n > min : n >= min) && n <= max);
const httpUrl = z
  .string()
  .trim()
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol));
const text = z.string();

/** The console's own bindings: never an agent, whatever AGENT_CLASSES says (nor a store partition, DB_P1 …). */
export const CONSOLE_BINDINGS = ["DB", "TELEMETRY_QUEUE", "ALERTS_QUEUE", "BATCH_QUEUE", "HISTORY", "ASSETS"] as const;
const agentClasses = z
  .string()
  .transform((s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .refine((list) => list.every((c) => /^[A-Za-z_$][\w$]{0,199}$/.test(c) && !(CONSOLE_BINDINGS as readonly string[]).includes(c) && !/^DB_P\d+$/.test(c)));
const shardList = z
  .string()
  .transform((s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(whole(1, 256)).max(4));

const stuckVars = Object.fromEntries(
  STUCK_RULES.map((rule) => [
    STUCK_CONFIG_VARS[rule],
    { expected: "a number of minutes above 0, at most 43200 (fractions allowed)", schema: decimal(0, 30 * 24 * 60, { exclusiveMin: true }) },
  ]),
) as Record<(typeof STUCK_CONFIG_VARS)[keyof typeof STUCK_CONFIG_VARS], VarSpec>;

/** Every variable the console reads. The auth ones are checked by readAuthConfig (worker/auth/config.ts) as a whole. */
export const CONFIG_VARS = {
  RETENTION_DAYS: { expected: "a whole number of days from 1 to 3650", schema: whole(1, 3650) },
  HOT_WINDOW_HOURS: { expected: "a whole number of hours from 1 to 87600", schema: whole(1, 87_600) },
  RETENTION_PACE: { expected: "a whole number from 0 (off) to 1000", schema: whole(0, 1000) },
  HISTORY_RETENTION_DAYS: { expected: "a whole number of days from 1 to 36500", schema: whole(1, 36_500) },
  HISTORY_SHARDS: { expected: "a whole number from 1 to 256", schema: whole(1, 256) },
  HISTORY_PREVIOUS_SHARDS: { expected: "at most 4 comma-separated whole numbers from 1 to 256", schema: shardList },
  TIMELINE_SEGMENTS: { expected: '"on" or "off"', schema: z.enum(["on", "off"]) },
  INGEST_MAX_AGE_DAYS: { expected: "a number of days from 1 to 3650", schema: decimal(1, 3650) },
  INGEST_MAX_FUTURE_SKEW_SECONDS: { expected: "a number of seconds from 0 to 86400", schema: decimal(0, 86_400) },
  RECONCILE_AFTER_MINUTES: { expected: "a whole number of minutes from 1 to 10080", schema: whole(1, 7 * 24 * 60) },
  RECONCILE_BATCH: { expected: "a whole number from 1 to 100", schema: whole(1, 100) },
  RECONCILE_UNKNOWN_AFTER_MINUTES: { expected: "a whole number of minutes from 1 to 10080", schema: whole(1, 7 * 24 * 60) },
  ...stuckVars,
  POLL_SECONDS: { expected: "a number of seconds from 2 to 3600", schema: decimal(2, 3600) },
  // Under 5 minutes (one rollup bucket) the window is exact and counts exhausted incidents and ambiguous ops
  // (read-models/overview-now.ts); 0.5 is the floor: a shorter window would flicker between two refreshes.
  OVERVIEW_RECENT_MINUTES: { expected: "a number of minutes from 0.5 to 1440 (e.g. 15, or 0.5 for 30 seconds)", schema: decimal(0.5, 1440) },
  EXPORT_ROW_CAP: { expected: "a whole number of rows from 1 to 100000", schema: whole(1, 100_000) },
  APM_TRACE_URL: { expected: "an http(s) URL containing {traceId}, e.g. https://apm.example.com/trace/{traceId}", schema: text },
  OTEL_SERVICE_NAME: { expected: "a service name", schema: text },
  OTLP_ENDPOINT: { expected: "an http(s) URL", secret: true, schema: httpUrl },
  OTLP_HEADERS: { expected: "key=value pairs, comma-separated", secret: true, schema: text },
  TELEMETRY_SIGNING_SECRET: { expected: "a shared secret", secret: true, schema: text },
  AGENT_CLASSES: { expected: "comma-separated class names (not one of the console's own bindings)", schema: agentClasses },
  AUTH_MODE: { expected: '"access" or "dev"', schema: text },
  ACCESS_TEAM_DOMAIN: { expected: "a team domain like https://<team>.cloudflareaccess.com", schema: text },
  ACCESS_AUD: { expected: "the Access application's AUD tag", schema: text },
  ACCESS_JWKS_URL: { expected: "an https URL (http only to a loopback host)", schema: text },
  ROLES: { expected: 'role JSON, e.g. {"operator":["alice@example.com"],"viewer":["*@example.com"]}', schema: text },
  DEV_USER: { expected: "an identity without spaces", schema: text },
  DEV_ROLE: { expected: '"viewer" or "operator"', schema: text },
  CSRF_SECRET: { expected: "at least 32 characters", secret: true, schema: text },
  ALERT_WEBHOOK_URL: { expected: "an http(s) URL", secret: true, schema: httpUrl },
  ALERT_SLACK_WEBHOOK_URL: { expected: "an http(s) URL", secret: true, schema: httpUrl },
  ALERT_RATE_LIMIT_PER_HOUR: { expected: "a whole number from 1 to 10000", schema: whole(1, 10_000) },
  ALERT_HIGH_RATE_LIMIT_PER_HOUR: { expected: "a whole number from 1 to 10000", schema: whole(1, 10_000) },
  EXHAUSTION_WAVE_MIN_INCIDENTS: { expected: "a whole number from 1 to 10000", schema: whole(1, 10_000) },
  EXHAUSTION_WAVE_MINUTES: { expected: "a whole number of minutes from 1 to 1440", schema: whole(1, 1440) },
  ALERT_CONSOLE_URL: { expected: "an http(s) URL", schema: httpUrl },
  ALERT_RETRY_DELAY_SECONDS: { expected: "a whole number of seconds from 1 to 3600", schema: whole(1, 3600) },
  DEPLOY_STORM_WINDOW_MINUTES: { expected: "a whole number of minutes from 1 to 1440", schema: whole(1, 1440) },
  DEPLOY_STORM_FACTOR: { expected: "a number above 1, at most 1000 (fractions allowed)", schema: decimal(1, 1000, { exclusiveMin: true }) },
  DEPLOY_STORM_MIN_INCIDENTS: { expected: "a whole number from 1 to 100000", schema: whole(1, 100_000) },
  EXHAUST_FORECAST_MINUTES: { expected: "a whole number of minutes from 1 to 1440", schema: whole(1, 1440) },
  SPEND_ALERT_AGENT_TOKENS_PER_HOUR: { expected: "a whole number of tokens from 1 to 1000000000000", schema: whole(1, 1e12) },
  SPEND_ALERT_CLASS_TOKENS_PER_HOUR: { expected: "a whole number of tokens from 1 to 1000000000000", schema: whole(1, 1e12) },
  STREAM_FLUSH_SECONDS: { expected: "a number of seconds from 0.05 to 60 (fractions allowed)", schema: decimal(0.05, 60) },
  TAIL_STREAM_DEBUG: { expected: '"on" or "off"', schema: z.enum(["on", "off"]) },
  STORE_PARTITIONS: { expected: "a whole number of D1 databases from 1 to 64, each bound (DB, then DB_P1, DB_P2, ...)", schema: whole(1, 64) },
} satisfies Record<string, VarSpec>;

export type ConfigVar = keyof typeof CONFIG_VARS;

/** The raw settings an env may carry, for handlers typed with a narrower env than the Worker's. */
export type SettingVars = Partial<Record<ConfigVar, string>>;

/** The console's settings, parsed. */
export type ConsoleConfig = {
  /**
   * How long D1 keeps rows (days; finished runs and timelines the hot window), and the paced slice after each
   * stored batch: up to `pace` x the rows the batch added, per table (0: the hourly cron alone).
   */
  retention: { days: number; hotWindowHours: number; pace: number };
  /**
   * `segments`: whether D1 also keeps the hot timeline's event bodies (event_segments) when R2 is bound
   * (TIMELINE_SEGMENTS, default off: R2 alone holds events, written before D1). On: D1 keeps them too; without a
   * HISTORY bucket D1 always keeps them.
   */
  history: { shards: number; previousShards: number[]; retentionDays: number; segments: boolean };
  ingest: { maxAgeDays: number; maxFutureSkewSeconds: number; signingSecret: string | null };
  /** `unknownAfterMs`: how long a run of an agent that cannot be asked may stay open without an event before it is shown as unknown. */
  reconcile: { afterMs: number; batch: number; unknownAfterMs: number };
  stuck: StuckConfig;
  /**
   * `recentMs`: the overview's "now" window (OVERVIEW_RECENT_MINUTES): its recent figures, compared with the same
   * length before, and whether it may say "quiet". Counted in whole 5-minute rollup buckets, the current one included;
   * under 5 minutes, exactly (over exhausted incidents and ambiguous ops, not the rollups).
   */
  console: { pollSeconds: number; apmTraceUrl: string | null; recentMs: number };
  /** Downloads of a list (/export/:list): at most `rowCap` rows each, and the file says where it was cut. */
  export: { rowCap: number };
  otel: { serviceName: string; otlp: OtlpTarget | null };
  auth: AuthConfig;
  /**
   * Alerting: where to send, and each priority's budget of alerts per channel in any hour (src/store/alerts.ts
   * ALERT_PRIORITY): `high` (storms, telemetry) is spent by nothing else, so a flood of `normal` alerts cannot hold it back.
   */
  alerts: {
    channels: { channel: "webhook" | "slack"; url: string }[];
    budgets: AlertBudgets;
    consoleUrl: string | null;
    retryDelaySeconds: number;
    /** An exhaustion wave: at least `minIncidents` incidents of one class exhausted within `windowMs` (one alert per class and hour). */
    wave: { minIncidents: number; windowMs: number };
  };
  /** "Recovery storm after deploy": a version's incident rate in its first window against the previous version's. */
  deployStorm: DeployStormConfig;
  /**
   * Recovery budgets: how far ahead the overview's "likely to exhaust" card and its alert look, and the re-spent
   * tokens per hour above which an agent or a class raises a spend alert (null: that alert is off).
   */
  budget: { forecastWindowMs: number; spendPerAgentPerHour: number | null; spendPerClassPerHour: number | null };
  agentClasses: string[];
  /** How many D1 databases the store is partitioned across by agent (src/store/partitions.ts): DB, then DB_P1 … */
  store: { partitions: number };
  /** The streaming tail's flush (worker/tail-stream.ts): how long a streamed message may wait for company, in ms. */
  capture: { streamFlushMs: number };
  /**
   * `tailStreams` (TAIL_STREAM_DEBUG, default off): one log line per streamed invocation with what it carried (the
   * streaming tail's flushes per event, test/e2e/tail-stream). Off, a stream logs only what it lost or kept aside:
   * a line per agent invocation is noise in production.
   */
  debug: { tailStreams: boolean };
};

/** One refused variable: its name, its value as set (null for secrets), and what it must be. */
export type ConfigProblem = { variable: string; value: string | null; expected: string };

/** The settings were refused; `message` names every variable, value and expectation (for the log). */
export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(`The console's configuration is refused: ${problems.map(describe).join("; ")}.`);
    this.name = "ConfigError";
  }
  /** The variables at fault, for visitors: names only. */
  get variables(): string[] {
    return [...new Set(this.problems.map((p) => p.variable))];
  }
}

const describe = (p: ConfigProblem) =>
  `${p.variable}${p.value === null ? " (a secret, not shown)" : `=${JSON.stringify(p.value.slice(0, 200))}`} must be ${p.expected}`;

const isBlank = (v: unknown) => v === undefined || v === null || (typeof v === "string" && v.trim() === "");

/** Parses every variable of `env`; throws a ConfigError naming each malformed one. Pure: no cache, no log. */
export function parseConfig(env: Record<string, unknown>): ConsoleConfig {
  const problems: ConfigProblem[] = [];
  const values: Partial<Record<ConfigVar, unknown>> = {};
  const refuse = (variable: ConfigVar, expected: string = CONFIG_VARS[variable].expected) => {
    const raw = env[variable];
    problems.push({
      variable,
      value: "secret" in CONFIG_VARS[variable] ? null : typeof raw === "string" ? raw : (JSON.stringify(raw) ?? String(raw)),
      expected,
    });
  };
  for (const name of Object.keys(CONFIG_VARS) as ConfigVar[]) {
    // wrangler.jsonc vars may be JSON numbers: they mean the same as their text.
    const raw = typeof env[name] === "number" ? String(env[name]) : env[name];
    if (isBlank(raw)) continue;
    const r = CONFIG_VARS[name].schema.safeParse(raw);
    if (r.success) values[name] = r.data;
    else refuse(name);
  }
  const num = (name: ConfigVar, dflt: number) => (values[name] as number | undefined) ?? dflt;
  const str = (name: ConfigVar) => (values[name] as string | undefined)?.trim() || null;

  const trace = readTraceLinkSetting(str("APM_TRACE_URL") ?? undefined);
  if (trace.warning) refuse("APM_TRACE_URL");

  // Auth's settings depend on each other (AUTH_MODE decides which are required): readAuthConfig checks them together.
  const auth = readAuthConfig(env);
  if (!auth.ok) for (const p of auth.problems) refuse(p.setting as ConfigVar, `${CONFIG_VARS[p.setting as ConfigVar].expected} (it ${p.problem})`);

  const partitions = (values.STORE_PARTITIONS as number | undefined) ?? 1;
  const unbound = partitionBindings(partitions)
    .slice(1)
    .filter((b) => !isD1(env[b]));
  if (unbound.length) refuse("STORE_PARTITIONS", `${CONFIG_VARS.STORE_PARTITIONS.expected} (no D1 binding ${unbound.join(", ")} in wrangler.jsonc)`);

  if (problems.length || !auth.ok) throw new ConfigError(problems);

  const shards = num("HISTORY_SHARDS", 4);
  const retentionDays = num("RETENTION_DAYS", 30);
  const hotWindowHours = num("HOT_WINDOW_HOURS", 48);
  const otlpUrl = str("OTLP_ENDPOINT");
  const webhook = str("ALERT_WEBHOOK_URL");
  const slack = str("ALERT_SLACK_WEBHOOK_URL");
  const consoleUrl = str("ALERT_CONSOLE_URL");
  return {
    retention: { days: retentionDays, hotWindowHours, pace: num("RETENTION_PACE", DEFAULT_RETENTION_PACE) },
    history: {
      shards,
      previousShards: [...new Set((values.HISTORY_PREVIOUS_SHARDS as number[] | undefined) ?? [])].filter((n) => n !== shards),
      retentionDays: num("HISTORY_RETENTION_DAYS", 400),
      segments: (values.TIMELINE_SEGMENTS as string | undefined) === "on",
    },
    ingest: {
      maxAgeDays: num("INGEST_MAX_AGE_DAYS", retentionDays),
      maxFutureSkewSeconds: num("INGEST_MAX_FUTURE_SKEW_SECONDS", 300),
      signingSecret: (values.TELEMETRY_SIGNING_SECRET as string | undefined) ?? null,
    },
    reconcile: {
      afterMs: num("RECONCILE_AFTER_MINUTES", 10) * 60_000,
      batch: num("RECONCILE_BATCH", 20),
      unknownAfterMs: num("RECONCILE_UNKNOWN_AFTER_MINUTES", 60) * 60_000,
    },
    stuck: Object.fromEntries(STUCK_RULES.map((rule) => [rule, num(STUCK_CONFIG_VARS[rule] as ConfigVar, DEFAULT_STUCK_CONFIG[rule])])) as StuckConfig,
    console: { pollSeconds: num("POLL_SECONDS", 15), apmTraceUrl: trace.template, recentMs: Math.round(num("OVERVIEW_RECENT_MINUTES", 15) * 60_000) },
    export: { rowCap: num("EXPORT_ROW_CAP", 10_000) },
    otel: {
      serviceName: str("OTEL_SERVICE_NAME") ?? "agent-console",
      otlp: otlpUrl ? { url: otlpUrl, headers: parseOtlpHeaders(values.OTLP_HEADERS as string | undefined) } : null,
    },
    auth: auth.config,
    alerts: {
      channels: [...(webhook ? [{ channel: "webhook" as const, url: webhook }] : []), ...(slack ? [{ channel: "slack" as const, url: slack }] : [])],
      budgets: { high: num("ALERT_HIGH_RATE_LIMIT_PER_HOUR", 20), normal: num("ALERT_RATE_LIMIT_PER_HOUR", 30) },
      consoleUrl: consoleUrl ? consoleUrl.replace(/\/+$/, "") : null,
      retryDelaySeconds: num("ALERT_RETRY_DELAY_SECONDS", 30),
      wave: { minIncidents: num("EXHAUSTION_WAVE_MIN_INCIDENTS", 10), windowMs: num("EXHAUSTION_WAVE_MINUTES", 15) * 60_000 },
    },
    deployStorm: {
      windowMs: num("DEPLOY_STORM_WINDOW_MINUTES", 15) * 60_000,
      factor: num("DEPLOY_STORM_FACTOR", 3),
      minIncidents: num("DEPLOY_STORM_MIN_INCIDENTS", 3),
      // Closed incidents leave D1 after the hot window (src/store/retention.ts): the rule compares inside it.
      closedKeptMs: hotWindowHours * 3_600_000,
    },
    budget: {
      forecastWindowMs: num("EXHAUST_FORECAST_MINUTES", 15) * 60_000,
      spendPerAgentPerHour: (values.SPEND_ALERT_AGENT_TOKENS_PER_HOUR as number | undefined) ?? null,
      spendPerClassPerHour: (values.SPEND_ALERT_CLASS_TOKENS_PER_HOUR as number | undefined) ?? null,
    },
    agentClasses: (values.AGENT_CLASSES as string[] | undefined) ?? [],
    store: { partitions },
    capture: { streamFlushMs: Math.round(num("STREAM_FLUSH_SECONDS", DEFAULT_STREAM_FLUSH_MS / 1000) * 1000) },
    debug: { tailStreams: (values.TAIL_STREAM_DEBUG as string | undefined) === "on" },
  };
}

/** The D1 bindings of a store of `n` partitions: DB (home and partition 0), then DB_P1 … DB_P(n-1). */
export const partitionBindings = (n: number): string[] => Array.from({ length: n }, (_, i) => (i ? `DB_P${i}` : "DB"));

/** A D1 binding, by what it answers (a service binding answers every name, so both methods are asked for). */
const isD1 = (v: unknown): v is D1Database =>
  typeof v === "object" && v !== null && typeof (v as D1Database).prepare === "function" && typeof (v as D1Database).batch === "function";

const parsed = new WeakMap<object, ConsoleConfig | ConfigError>();

/**
 * The console's settings for this env, parsed on first use and kept for the isolate's life. Throws the same
 * ConfigError on every call while a setting is malformed; it is logged once.
 */
export function consoleConfig(env: object): ConsoleConfig {
  let hit = parsed.get(env);
  if (!hit) {
    try {
      hit = parseConfig(env as Record<string, unknown>);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      console.error(`[config] ${e.message}`);
      hit = e;
    }
    parsed.set(env, hit);
  }
  if (hit instanceof ConfigError) throw hit;
  return hit;
}
