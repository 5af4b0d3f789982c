import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { telemetrySourceAlias } from "./scripts/package-aliases.ts";
import { simWranglerFacts } from "./scripts/simulate-input.ts";
import { deriveConsoleConfig, withPartitionDatabases, writeGeneratedConfig } from "./scripts/wrangler-config.ts";

/**
 * `npm run simulate`: the fleet simulator in workerd, against real local D1 (and R2 when the console binds a
 * bucket), through the Worker's own queue handler. scripts/simulate.ts sets SIM_INPUT (the run's settings).
 */
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  // The console's own config without its script_name agent bindings: no agents run here, only the console.
  // With --partitions N, DB_P1 … DB_P(N-1) beside DB (STORE_PARTITIONS stays 1: the comparison builds its stores itself).
  const input = process.env.SIM_INPUT;
  const partitions = input ? Number((JSON.parse(input) as { partitions?: number }).partitions ?? 1) : 1;
  const config = withPartitionDatabases(deriveConsoleConfig({ agents: null, vars: { AGENT_CLASSES: "" } }), partitions);
  const configPath = writeGeneratedConfig("console.sim.jsonc", config);
  if (!input) throw new Error("SIM_INPUT is not set: run the simulator with `npm run simulate -- --agents N --minutes M`");
  return {
    plugins: [
      cloudflareTest({
        main: "./worker/index.ts",
        wrangler: { configPath },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            SIM_INPUT: JSON.stringify({ ...JSON.parse(input), wrangler: simWranglerFacts(config) }),
            // The pages are requested through the real app: local dev auth, read-only role.
            AUTH_MODE: "dev",
            DEV_USER: "sim@localhost",
            DEV_ROLE: "viewer",
          },
        },
      }),
    ],
    resolve: { alias: telemetrySourceAlias },
    test: {
      setupFiles: ["./test/apply-migrations.ts"],
      include: ["bench/sim/*.sim.test.ts"],
      testTimeout: 3 * 3_600_000,
      hookTimeout: 600_000,
      fileParallelism: false,
    },
  };
});
