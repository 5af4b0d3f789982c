import { defineConfig } from "vitest/config";
import { workerdTestConfig } from "./test/workerd-config";

/**
 * The chat agent suite: Think's module graph is large enough that workerd's
 * test workers reject the cached-module map ("Message is too large"), so it
 * runs apart, with the module cache off, and only it loads Think.
 */
export default defineConfig(() =>
  workerdTestConfig({
    main: "./test/fixtures/chat-entry.ts",
    include: ["test/examples/demo-fleet/chat/**/*.test.ts"],
    durableObjects: { ChatAgent: "ChatAgent" },
    fsModuleCache: false,
  }),
);
