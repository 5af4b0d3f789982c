import { defineConfig } from "vitest/config";
import { telemetrySourceAlias } from "./scripts/package-aliases.ts";
import { patient } from "./test/patience.ts";

/**
 * End-to-end tests in Node: real `wrangler dev` processes (killed with SIGKILL
 * where the test says so) and a real Chromium driven by playwright-core.
 */
export default defineConfig({
  resolve: { alias: telemetrySourceAlias },
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    environment: "node",
    // Two files at a time: most of an e2e file is waiting (wrangler dev starting, agents recovering, polls), not
    // CPU. Each file has its own port (its inspector on port + 10000), persist dir and generated configs.
    fileParallelism: true,
    maxWorkers: 2,
    // Sized for a loaded machine (test/patience.ts): a safety net against a hang, not a speed requirement.
    testTimeout: patient(90_000),
    hookTimeout: patient(60_000),
  },
});
