import { defineConfig } from "vitest/config";
import { workerdTestConfig } from "./test/workerd-config";

/**
 * The chat agent suite: Think's module graph is large enough that workerd's
 * test workers reject the cached-module map ("Message is too large"), so it
 * runs apart, with the module cache off, and only it loads Think. The demo-fleet soak runs here too: it
 * needs the chat agent next to the rest of the fleet.
 */
export default defineConfig(() =>
  workerdTestConfig({
    main: "./test/fixtures/chat-entry.ts",
    include: ["test/examples/demo-fleet/chat/**/*.test.ts", "test/examples/demo-fleet/soak/**/*.test.ts", "test/chat/**/*.test.ts"],
    // The whole demo fleet, for the soak (test/examples/demo-fleet/soak); the chat tests use ChatAgent only.
    durableObjects: {
      ChatAgent: "ChatAgent",
      DemoSessionAgent: "DemoSessionAgent",
      SessionAgent: "SessionAgent",
      DemoFiberAgent: "DemoFiberAgent",
      // Foreign chat agents (test/fixtures/chat-agents.ts): Think and AIChatAgent with both mixins.
      ThinkChatFixture: "ThinkChatFixture",
      AiChatFixture: "AiChatFixture",
      ThinkSubChatFixture: "ThinkSubChatFixture",
      // Chat agents captured by the tail alone (test/fixtures/tail-chat-agents.ts): no telemetry package.
      TailThinkChat: "TailThinkChat",
      TailAiChat: "TailAiChat",
      TailAdminAiChat: "TailAdminAiChat",
      TailChatHub: "TailChatHub",
      TailSubChat: "TailSubChat",
      TailBareSubChat: "TailBareSubChat",
    },
    fsModuleCache: false,
  }).then((c) => ({
    ...c,
    // A fresh runtime per file (its truth matrix compares the overview's fleet-wide figures), four at a time: the
    // files mostly wait on the scripted model and the agents' recovery.
    test: { ...c.test, maxWorkers: 4 },
  })),
);
