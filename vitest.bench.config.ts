import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { benchBefore } from "./scripts/bench-before.ts";
import { telemetrySourceAlias } from "./scripts/package-aliases.ts";
import { DEFAULT_MIX, readMix, simWranglerFacts } from "./scripts/simulate-input.ts";
import { deriveConsoleConfig, writeGeneratedConfig } from "./scripts/wrangler-config.ts";

/**
 * The fleet simulator's small runs (bench/fleet-sim.bench.test.ts), one per fleet shape and capture: the demo mix
 * (enough rows to reach retention's per-run caps), a quiet fleet (many agents, few events each) and a busy one, each
 * on the classic tail (the mixes' own capture) and on the streaming tail at the console's default flush; 60 s each,
 * long enough to project a month from (a 20 s run is too short: the simulator prints no bill from it), ~100 s each.
 */
const SHAPES = [
  { agents: 300, seconds: 60, mixFile: DEFAULT_MIX, seed: 1, saturation: false },
  { agents: 3000, seconds: 60, mixFile: "bench/mixes/quiet.json", seed: 2, saturation: false },
  { agents: 300, seconds: 60, mixFile: "bench/mixes/busy.json", seed: 3, saturation: false },
];
const SIM_RUNS = [...SHAPES, ...SHAPES.map((run) => ({ ...run, capture: "streaming" as const }))];

/** `npm run bench`: benchmarks run in workerd against real local D1 and Queues, and print ratios. */
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  // The console's wrangler.jsonc minus its script_name agent bindings (the fleet's Worker is not running here):
  // the bench worker hosts its own agents.
  const config = deriveConsoleConfig({
    agents: null,
    vars: { AGENT_CLASSES: "BenchPlainAgent,BenchTelemetryAgent,BenchTelemetryFlushAgent,BenchDemoLikeAgent,BenchDemoLikeFlushAgent" },
  });
  const configPath = writeGeneratedConfig("console.bench.jsonc", config);
  // A recorded run's figures, for the "before" beside a figure (bench/recorded.ts); none unless BENCH_BEFORE names one.
  const recorded = benchBefore(process.env.BENCH_BEFORE);
  return {
    plugins: [
      cloudflareTest({
        main: "./bench/entry.ts",
        wrangler: { configPath },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            SIM_INPUTS: JSON.stringify(SIM_RUNS.map((run) => ({ ...run, mix: readMix(run.mixFile), wrangler: simWranglerFacts(config) }))),
            // The console bench requests pages through the real app: local dev auth, read-only role.
            AUTH_MODE: "dev",
            DEV_USER: "bench@localhost",
            DEV_ROLE: "viewer",
            ...(recorded ? { BENCH_BEFORE: recorded } : {}),
          },
          // Agents send to a queue nobody consumes here: the runFiber bench measures the agent's side
          // (span, outbox, send); ingest's cost is measured on its own, and in production it runs elsewhere.
          queueProducers: { TELEMETRY_QUEUE: { queueName: "bench-sink" } },
          durableObjects: {
            BenchPlainAgent: { className: "BenchPlainAgent", useSQLite: true },
            BenchTelemetryAgent: { className: "BenchTelemetryAgent", useSQLite: true },
            BenchTelemetryFlushAgent: { className: "BenchTelemetryFlushAgent", useSQLite: true },
            BenchDemoLikeAgent: { className: "BenchDemoLikeAgent", useSQLite: true },
            BenchDemoLikeFlushAgent: { className: "BenchDemoLikeFlushAgent", useSQLite: true },
          },
        },
      }),
    ],
    resolve: { alias: telemetrySourceAlias },
    test: {
      setupFiles: ["./test/apply-migrations.ts"],
      include: ["bench/**/*.bench.test.ts"],
      testTimeout: 600_000,
      fileParallelism: false,
    },
  };
});
