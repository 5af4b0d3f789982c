import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import type { ViteUserConfig } from "vitest/config";
import { buildConsoleAssets } from "../scripts/assets.mjs";
import { telemetrySourceAlias } from "../scripts/package-aliases.ts";
import { consoleConfigPath, deriveConsoleConfig, readWranglerConfig, withPartitionDatabases, writeGeneratedConfig } from "../scripts/wrangler-config.ts";
import { patient } from "./patience";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The vitest setup shared by the workerd test suites: the real wrangler
 * config, real D1 (migrations applied), real Queues, the OTLP/JWKS test
 * server, and Access auth. Each suite names its entry and Durable Objects.
 */
export async function workerdTestConfig(opts: {
  main: string;
  include: string[];
  durableObjects: Record<string, string>;
  /** Off for suites whose module graph is too large for the cached-module map (workerd's WebSocket limit). */
  fsModuleCache?: boolean;
}): Promise<ViteUserConfig> {
  const migrations = await readD1Migrations(path.join(root, "migrations"));
  // The static files and their manifest as the sources are now (the layout imports the manifest; ASSETS serves the files).
  buildConsoleAssets(root);
  // The test worker hosts the agents itself; the admin client's allowlist is exactly those bindings.
  const testConsoleConfig = writeGeneratedConfig(
    "console.test.jsonc",
    // A second D1 database, DB_P1, for the tests that compare a store of one partition with two (STORE_PARTITIONS stays 1).
    withPartitionDatabases(deriveConsoleConfig({ agents: null, vars: { AGENT_CLASSES: Object.keys(opts.durableObjects).join(",") } }), 2),
  );
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        main: opts.main,
        // The console's wrangler.jsonc, minus its script_name agent bindings: here the test worker hosts the agents.
        wrangler: { configPath: testConsoleConfig },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            OTLP_ENDPOINT: `http://127.0.0.1:${inject("otlpPort")}/v1/traces`,
            OTLP_HEADERS: "x-test-token=secret-token",
            OTLP_CONTROL: `http://127.0.0.1:${inject("otlpPort")}`,
            // Auth in access mode, keys served by the test server (tests publish them under team=env).
            ACCESS_TEAM_DOMAIN: "https://test-team.cloudflareaccess.com",
            ACCESS_AUD: "test-console-aud",
            ACCESS_JWKS_URL: `http://127.0.0.1:${inject("otlpPort")}/cdn-cgi/access/certs?team=env`,
            ROLES: JSON.stringify({ operator: ["operator@example.com"], viewer: ["*@example.com"] }),
            CSRF_SECRET: "test-only-csrf-secret-0123456789abcdef",
            // Paced retention off: fixtures are dated a week ago (test/fixtures/events.ts), past the hot window, and the
            // consumer would delete their timelines as it stores them. Tests of pacing set RETENTION_PACE themselves
            // (test/store/retention-pace.test.ts); the simulator runs with wrangler.jsonc's.
            RETENTION_PACE: "0",
            // D1 keeps the hot timeline's segments too (production default: off, R2 alone): these suites check what
            // ingest stored through the test-only `events` view over them (test/apply-migrations.ts). The default is
            // tested by test/ingest/r2-only.test.ts, every e2e file (a real `wrangler dev` of wrangler.jsonc) and the simulator.
            TIMELINE_SEGMENTS: "on",
            // Extra redaction patterns, read by withTelemetry (test/telemetry/redaction-config.test.ts).
            TELEMETRY_REDACT_PATTERNS: JSON.stringify(["/internal-ticket-[0-9]{4}/i"]),
            // Alerts go to the real webhook receiver (test/alert-receiver.ts), both channels, retried after 1 s, 2 s, …
            ALERT_WEBHOOK_URL: `http://127.0.0.1:${inject("alertPort")}/hook/webhook`,
            ALERT_SLACK_WEBHOOK_URL: `http://127.0.0.1:${inject("alertPort")}/hook/slack`,
            ALERT_CONSOLE_URL: "https://oncall.example.com",
            ALERT_RETRY_DELAY_SECONDS: "1",
            ALERT_CONTROL: `http://127.0.0.1:${inject("alertPort")}`,
          },
          // The agents' R2 bucket (the demo fleet's workspace backups). The console's own, HISTORY, comes from
          // wrangler.jsonc's r2_buckets (miniflare, in memory here).
          r2Buckets: ["BACKUPS"],
          durableObjects: Object.fromEntries(Object.entries(opts.durableObjects).map(([binding, className]) => [binding, { className, useSQLite: true }])),
          // wrangler.jsonc's queue consumers (names, retries, DLQ), delivering batches quickly (production batches for up to 1 s).
          queueConsumers: testQueueConsumers(),
        },
      })),
    ],
    resolve: { alias: telemetrySourceAlias },
    test: {
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      include: opts.include,
      // Sized for a loaded machine (test/patience.ts): a safety net against a hang, not a speed requirement.
      testTimeout: patient(60_000),
      hookTimeout: patient(60_000),
      expect: { poll: { timeout: patient(1_000) } },
      ...(opts.fsModuleCache === false ? { fsModuleCache: false } : {}),
    },
  };
}

type WranglerConsumer = { queue: string; max_batch_size?: number; max_retries?: number; dead_letter_queue?: string };

/** The console's queue consumers from wrangler.jsonc, in miniflare's shape, with a 50 ms batch timeout. */
function testQueueConsumers() {
  const consumers = (readWranglerConfig(consoleConfigPath).queues as { consumers?: WranglerConsumer[] } | undefined)?.consumers ?? [];
  return Object.fromEntries(
    consumers.map((c) => [
      c.queue,
      {
        maxBatchSize: c.max_batch_size,
        maxBatchTimeout: 0.05,
        maxRetries: c.max_retries,
        ...(c.dead_letter_queue ? { deadLetterQueue: c.dead_letter_queue } : {}),
      },
    ]),
  );
}
