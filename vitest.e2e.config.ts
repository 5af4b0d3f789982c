import { defineConfig } from "vitest/config";

/**
 * End-to-end tests in Node: real `wrangler dev` processes (killed with SIGKILL
 * where the test says so) and a real Chromium driven by playwright-core.
 */
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
