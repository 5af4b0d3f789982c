import { defineConfig } from "vitest/config";
import { workerdTestConfig } from "./test/workerd-config";

/** The main workerd suite. The chat agent (Think) has its own suite: vitest.chat.config.ts. */
export default defineConfig(() =>
  workerdTestConfig({
    main: "./test/fixtures/entry.ts",
    include: ["test/**/*.test.ts"],
    durableObjects: {
      // The demo fleet's classes, hosted by the test worker itself (wrangler.jsonc binds them by script_name).
      DemoFiberAgent: "DemoFiberAgent",
      SessionAgent: "SessionAgent",
      DemoSessionAgent: "DemoSessionAgent",
      ProbeAgent: "ProbeAgent",
      PlainAdminAgent: "PlainAdminAgent",
      FaultySessionAgent: "FaultySessionAgent",
      TaskProbeAgent: "TaskProbeAgent",
      ManagedFiberProbeAgent: "ManagedFiberProbeAgent",
      DurableWorkAgent: "DurableWorkAgent",
      NoEvictWorkAgent: "NoEvictWorkAgent",
      TelemetryOnlyAgent: "TelemetryOnlyAgent",
      LossyAgent: "LossyAgent",
      ObservedWorkAgent: "ObservedWorkAgent",
      CostlyAgent: "CostlyAgent",
      LedgerAgent: "LedgerAgent",
      TruthFiberAgent: "TruthFiberAgent",
      TruthTaskAgent: "TruthTaskAgent",
      GapAgent: "GapAgent",
      StubbornAgent: "StubbornAgent",
      PausableAgent: "PausableAgent",
      OlderMixinAgent: "OlderMixinAgent",
    },
  }).then((c) => ({
    ...c,
    test: {
      ...c.test,
      exclude: ["test/examples/demo-fleet/chat/**", "test/examples/demo-fleet/soak/**", "test/chat/**", "test/e2e/**", "**/node_modules/**"],
      // The fuzz files send thousands of requests through one test isolate, whose waitUntil span exports then
      // miss the exporter's 5 s timeout: one "exporting spans failed!" line per request would bury their
      // figures. Tracing under load is not what they test (test/telemetry/otlp-export.test.ts is); elsewhere these lines stay.
      onConsoleLog: (log: string, _type: string, entity: { moduleId?: string; module?: { moduleId: string } } | undefined) =>
        !(log.startsWith("exporting spans failed!") && /\/test\/fuzz\//.test(entity?.moduleId ?? entity?.module?.moduleId ?? "")),
    },
  })),
);
