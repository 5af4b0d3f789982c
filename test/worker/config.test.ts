import { createExecutionContext, createMessageBatch, env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import configurationDoc from "../../docs/configuration.md?raw";
import readme from "../../README.md?raw";
import { DEFAULT_STUCK_CONFIG } from "../../src/store/read-models";
import { app } from "../../worker/app";
import { CONFIG_VARS, ConfigError, consoleConfig, parseConfig } from "../../worker/config";
import worker from "../../worker/index";
import { envWith } from "../helpers";

const dev = (vars: Record<string, unknown> = {}) => ({ AUTH_MODE: "dev", ...vars });
/** The problems parseConfig reports for these settings. */
function refusal(vars: Record<string, unknown>) {
  try {
    parseConfig(dev(vars));
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(vars)}`);
}

afterEach(() => vi.restoreAllMocks());

describe("worker/config.ts: one parse, one policy", () => {
  it("takes each default when a setting is unset or blank", () => {
    const c = parseConfig(dev({ RETENTION_DAYS: " ", HISTORY_SHARDS: "" }));
    expect(c.retention).toEqual({ days: 30, hotWindowHours: 48, pace: 10 });
    expect(c.history).toEqual({ shards: 4, previousShards: [], retentionDays: 400, segments: false });
    expect(c.ingest).toEqual({ maxAgeDays: 30, maxFutureSkewSeconds: 300, signingSecret: null });
    expect(c.reconcile).toEqual({ afterMs: 10 * 60_000, batch: 20, unknownAfterMs: 60 * 60_000 });
    expect(c.stuck).toEqual(DEFAULT_STUCK_CONFIG);
    expect(c.console).toEqual({ pollSeconds: 15, apmTraceUrl: null, recentMs: 15 * 60_000 });
    expect(c.otel).toEqual({ serviceName: "agent-console", otlp: null });
    expect(c.alerts).toEqual({
      channels: [],
      budgets: { high: 20, normal: 30 },
      consoleUrl: null,
      retryDelaySeconds: 30,
      wave: { minIncidents: 10, windowMs: 15 * 60_000 },
    });
    expect(c.agentClasses).toEqual([]);
    expect(c.auth).toMatchObject({ mode: "dev", devUser: "dev@localhost", devRole: "operator" });
  });

  it("reads well-formed values, JSON numbers included", () => {
    const c = parseConfig(
      dev({
        RETENTION_DAYS: "7",
        INGEST_MAX_FUTURE_SKEW_SECONDS: 30,
        HISTORY_SHARDS: "16",
        HISTORY_PREVIOUS_SHARDS: "4, 8,16",
        HISTORY_RETENTION_DAYS: " 90 ",
        TIMELINE_SEGMENTS: "off",
        STUCK_INCIDENT_NO_ATTEMPT_MINUTES: "0.5",
        RECONCILE_BATCH: "100",
        OTLP_ENDPOINT: "https://otlp.example.com/v1/traces",
        OTLP_HEADERS: "x-key=abc",
        ALERT_CONSOLE_URL: "https://oncall.example.com//",
        AGENT_CLASSES: " ProbeAgent , GapAgent,",
      }),
    );
    expect(c.ingest).toMatchObject({ maxAgeDays: 7, maxFutureSkewSeconds: 30 });
    expect(c.history).toEqual({ shards: 16, previousShards: [4, 8], retentionDays: 90, segments: false });
    expect(c.stuck.incident_no_attempt).toBe(0.5);
    expect(c.reconcile.batch).toBe(100);
    expect(c.otel.otlp).toEqual({ url: "https://otlp.example.com/v1/traces", headers: { "x-key": "abc" } });
    expect(c.alerts.consoleUrl).toBe("https://oncall.example.com");
    expect(c.agentClasses).toEqual(["ProbeAgent", "GapAgent"]);
  });

  it("refuses every malformed value at once, naming the variable, its value and what it must be", () => {
    const e = refusal({
      RETENTION_DAYS: "forever",
      RECONCILE_BATCH: "500",
      STUCK_NO_PROGRESS_MINUTES: "0",
      HISTORY_PREVIOUS_SHARDS: "4,x",
      POLL_SECONDS: "1",
      DEV_ROLE: "admin",
    });
    expect(e.variables.sort()).toEqual([
      "DEV_ROLE",
      "HISTORY_PREVIOUS_SHARDS",
      "POLL_SECONDS",
      "RECONCILE_BATCH",
      "RETENTION_DAYS",
      "STUCK_NO_PROGRESS_MINUTES",
    ]);
    expect(e.problems).toContainEqual({ variable: "RETENTION_DAYS", value: "forever", expected: "a whole number of days from 1 to 3650" });
    expect(e.problems).toContainEqual({ variable: "RECONCILE_BATCH", value: "500", expected: "a whole number from 1 to 100" });
    expect(e.message).toContain('RETENTION_DAYS="forever" must be a whole number of days from 1 to 3650');
    expect(e.message).toContain('DEV_ROLE="admin" must be "viewer" or "operator"');
  });

  it("takes TIMELINE_SEGMENTS as on or off, and refuses anything else with what it expects", () => {
    expect(parseConfig(dev({ TIMELINE_SEGMENTS: "on" })).history.segments).toBe(true);
    expect(parseConfig(dev({ TIMELINE_SEGMENTS: "off" })).history.segments).toBe(false);
    const e = refusal({ TIMELINE_SEGMENTS: "no" });
    expect(e.variables).toEqual(["TIMELINE_SEGMENTS"]);
    expect(e.message).toContain('TIMELINE_SEGMENTS="no" must be "on" or "off"');
  });

  it("keeps the streaming tail's per-stream debug line off unless TAIL_STREAM_DEBUG is on, and refuses anything else", () => {
    expect(parseConfig(dev({})).debug).toEqual({ tailStreams: false });
    expect(parseConfig(dev({ TAIL_STREAM_DEBUG: "on" })).debug).toEqual({ tailStreams: true });
    expect(parseConfig(dev({ TAIL_STREAM_DEBUG: "off" })).debug).toEqual({ tailStreams: false });
    const e = refusal({ TAIL_STREAM_DEBUG: "yes" });
    expect(e.variables).toEqual(["TAIL_STREAM_DEBUG"]);
    expect(e.message).toContain('TAIL_STREAM_DEBUG="yes" must be "on" or "off"');
  });

  it("takes the overview's recent window in minutes down to half a minute, and refuses a shorter one with what it expects", () => {
    expect(parseConfig(dev({ OVERVIEW_RECENT_MINUTES: "0.5" })).console.recentMs).toBe(30_000);
    expect(parseConfig(dev({ OVERVIEW_RECENT_MINUTES: "1" })).console.recentMs).toBe(60_000);
    const e = refusal({ OVERVIEW_RECENT_MINUTES: "0.1" });
    expect(e.variables).toEqual(["OVERVIEW_RECENT_MINUTES"]);
    expect(e.message).toContain('OVERVIEW_RECENT_MINUTES="0.1" must be a number of minutes from 0.5 to 1440');
    expect(refusal({ OVERVIEW_RECENT_MINUTES: "30s" }).variables).toEqual(["OVERVIEW_RECENT_MINUTES"]);
  });

  it("never echoes a secret's value", () => {
    const e = refusal({ ALERT_WEBHOOK_URL: "hooks.example.com/token-123", OTLP_ENDPOINT: "ftp://x/token-456" });
    expect(e.problems.map((p) => [p.variable, p.value])).toEqual([
      ["OTLP_ENDPOINT", null],
      ["ALERT_WEBHOOK_URL", null],
    ]);
    expect(e.message).not.toMatch(/token-/);
  });

  it("refuses an APM link that is not http(s) with {traceId}, an allowlist naming a console binding, and access mode without its settings", () => {
    expect(refusal({ APM_TRACE_URL: "javascript:alert(1)//{traceId}" }).variables).toEqual(["APM_TRACE_URL"]);
    expect(refusal({ AGENT_CLASSES: "ProbeAgent,DB" }).variables).toEqual(["AGENT_CLASSES"]);
    const access = (() => {
      try {
        parseConfig({ ACCESS_TEAM_DOMAIN: "https://t.cloudflareaccess.com" });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(access?.variables.sort()).toEqual(["ACCESS_AUD", "CSRF_SECRET", "ROLES"]);
    expect(access?.message).toContain("(it is missing)");
  });

  it("partitions the store only across bound databases", () => {
    expect(parseConfig(dev()).store).toEqual({ partitions: 1 });
    expect(parseConfig(dev({ STORE_PARTITIONS: "1" })).store).toEqual({ partitions: 1 });
    expect(refusal({ STORE_PARTITIONS: "0" }).variables).toEqual(["STORE_PARTITIONS"]);
    // A missing binding is named.
    const unbound = refusal({ STORE_PARTITIONS: "3", DB_P1: env.DB });
    expect(unbound.variables).toEqual(["STORE_PARTITIONS"]);
    expect(unbound.problems[0]!.expected).toContain("no D1 binding DB_P2");
    // Bound: every read model merges partitions (src/store/read-models/merged*.ts), so the count is accepted.
    expect(parseConfig(dev({ STORE_PARTITIONS: "2", DB_P1: env.DB_P1 })).store).toEqual({ partitions: 2 });
    expect(refusal({ AGENT_CLASSES: "ProbeAgent,DB_P1" }).variables).toEqual(["AGENT_CLASSES"]);
  });

  it("parses an env once, and logs a refusal once", () => {
    const ok = dev();
    expect(consoleConfig(ok)).toBe(consoleConfig(ok));
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const bad = dev({ HOT_WINDOW_HOURS: "0" });
    expect(() => consoleConfig(bad)).toThrow(ConfigError);
    expect(() => consoleConfig(bad)).toThrow(/HOT_WINDOW_HOURS="0"/);
    expect(logged.mock.calls.filter((c) => String(c[0]).startsWith("[config]"))).toHaveLength(1);
  });
});

describe("a refused configuration stops every entry point", () => {
  const bad = () => envWith<typeof env>({ RETENTION_DAYS: "thirty", ROLES: '{"operator":["secret-person@example.com"]}x' }, env);

  it("answers requests, /health included, with a 503 naming the variables but not their values", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const b = bad();
    for (const path of ["/health", "/"]) {
      const res = await app.request(`http://127.0.0.1${path}`, { headers: { accept: "application/json" } }, b, createExecutionContext());
      expect(res.status, path).toBe(503);
      const text = await res.text();
      expect(text).toContain("RETENTION_DAYS");
      expect(text).toContain("ROLES");
      expect(text).not.toContain("thirty");
      expect(text).not.toContain("secret-person");
    }
  });

  it("throws from the queue and cron handlers, so the platform retries", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const b = bad();
    const batch = createMessageBatch("agent-telemetry", [{ id: "m1", timestamp: new Date(), attempts: 1, body: {} }]);
    await expect(worker.queue!(batch, b, createExecutionContext())).rejects.toThrow(ConfigError);
    await expect(worker.scheduled!({ cron: "17 * * * *", scheduledTime: Date.now(), noRetry() {} }, b, createExecutionContext())).rejects.toThrow(ConfigError);
  });

  it("still stores dead letters, so telemetry that exhausts its retries while a setting is refused is kept", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const marker = `kept-while-refused-${crypto.randomUUID()}`;
    const batch = createMessageBatch("agent-telemetry-dlq", [{ id: "m-dlq", timestamp: new Date(), attempts: 1, body: { v: 1, marker } }]);
    await worker.queue!(batch, bad(), createExecutionContext());
    const row = await env.DB.prepare("SELECT count(*) AS n FROM dead_letters WHERE instr(body, ?) > 0").bind(marker).first<{ n: number }>();
    expect(row?.n).toBe(1);
  });
});

/** The `UPPER_CASE` names in the first cell of each table row (`| \`NAME\` … |`) of a Markdown text. */
function tableSettings(markdown: string): Set<string> {
  return new Set(
    markdown
      .split("\n")
      .filter((l) => l.startsWith("| `"))
      .flatMap((l) => [...(l.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!)),
  );
}

/** Settings the tables document that belong to other programs: `npm start`, and the agents' Worker. */
const NOT_THE_CONSOLES = ["DEMO", "DEMO_FLEET_SIZE", "DEMO_INTERVAL_MS", "TELEMETRY_REDACT_PATTERNS"];

describe("docs/configuration.md documents exactly the variables worker/config.ts reads", () => {
  const documented = tableSettings(configurationDoc);

  it("every variable the module knows has a row", () => {
    expect(Object.keys(CONFIG_VARS).filter((v) => !documented.has(v))).toEqual([]);
  });

  it("every console row is a variable the module knows", () => {
    expect([...documented].filter((v) => !(v in CONFIG_VARS) && !NOT_THE_CONSOLES.includes(v))).toEqual([]);
  });
});

describe("the README's short Configuration table", () => {
  const section = readme.slice(readme.indexOf("\n## Configuration"), readme.indexOf("\n## ", readme.indexOf("\n## Configuration") + 5));
  const named = tableSettings(section);

  it("names only variables the module knows (or npm start's own), each also in docs/configuration.md", () => {
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((v) => !(v in CONFIG_VARS) && !NOT_THE_CONSOLES.includes(v))).toEqual([]);
    const full = tableSettings(configurationDoc);
    expect([...named].filter((v) => !full.has(v))).toEqual([]);
  });
});
