import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        main: "./test/fixtures/entry.ts",
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            OTLP_ENDPOINT: `http://127.0.0.1:${inject("otlpPort")}/v1/traces`,
            OTLP_HEADERS: "x-test-token=secret-token",
            OTLP_CONTROL: `http://127.0.0.1:${inject("otlpPort")}`,
            // Auth in access mode, keys served by the test server (test/worker/auth publishes them under team=env).
            ACCESS_TEAM_DOMAIN: "https://test-team.cloudflareaccess.com",
            ACCESS_AUD: "test-console-aud",
            ACCESS_JWKS_URL: `http://127.0.0.1:${inject("otlpPort")}/cdn-cgi/access/certs?team=env`,
            ROLES: JSON.stringify({ operator: ["operator@example.com"], viewer: ["*@example.com"] }),
            CSRF_SECRET: "test-only-csrf-secret-0123456789abcdef",
          },
          durableObjects: {
            ProbeAgent: { className: "ProbeAgent", useSQLite: true },
            PlainAdminAgent: { className: "PlainAdminAgent", useSQLite: true },
            FaultySessionAgent: { className: "FaultySessionAgent", useSQLite: true },
          },
          // Deliver queue batches quickly in tests (production batches for up to 1 s).
          queueConsumers: {
            "agent-telemetry": { maxBatchSize: 100, maxBatchTimeout: 0.05, maxRetries: 3, deadLetterQueue: "agent-telemetry-dlq" },
            "agent-telemetry-dlq": { maxBatchSize: 100, maxBatchTimeout: 0.05, maxRetries: 3 },
          },
        },
      })),
    ],
    test: {
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      include: ["test/**/*.test.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
