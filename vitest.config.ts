import { defineConfig } from "vitest/config";
import { mainSuite } from "./test/main-suite";

/** The main workerd suite, files sharing a runtime per worker (test/main-suite.ts). Chat: vitest.chat.config.ts. */
export default defineConfig(() => mainSuite({ alone: false }));
