import { defineConfig } from "vitest/config";
import { mainSuite } from "./test/main-suite";

/** The main suite's files that need a runtime of their own (ALONE_FILES in test/main-suite.ts). */
export default defineConfig(() => mainSuite({ alone: true }));
