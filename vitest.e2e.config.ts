import { defineConfig } from "vitest/config";
import { telemetrySourceAlias } from "./scripts/package-aliases.ts";

/**
 * End-to-end tests in Node: real `wrangler dev` processes (killed with SIGKILL
 * where the test says so) and a real Chromium driven by playwright-core.
 */
export default defineConfig({
  resolve: { alias: telemetrySourceAlias },
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
