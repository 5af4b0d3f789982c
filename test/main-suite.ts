import type { ViteUserConfig } from "vitest/config";
import { workerdTestConfig } from "./workerd-config";

/**
 * Test files that need a runtime no other file has touched: they assert the whole fleet's figures, each statement's
 * rows written or the exact rows a seeded store holds, and agents an earlier file left running would still send them
 * events. They run in their own suite, vitest.alone.config.ts, one workerd per file.
 */
export const ALONE_FILES = [
  "test/worker/routes/event-gaps.test.ts",
  "test/ingest/event-seq.test.ts",
  "test/store/rows-read.test.ts",
  // It counts the fleet's agents with events missing: an earlier file's agent whose outbox sends late (seen once, a
  // CSRF test's agent with 4 numbers missing) lands in the store after it was emptied.
  "test/store/event-gaps.test.ts",
  // It compares the overview's fleet-wide figures with the SDK's.
  "test/truth/truth-matrix.test.ts",
  // It asserts every incident of the table, unfiltered: a straggler of an earlier file's agents (seen under load,
  // with the simulator running beside the suite) made it 301 of 300.
  "test/store/incidents-kind-arms.test.ts",
  // It hears every SDK diagnostics message of its runtime and hands it to the tail handler: agents an earlier file
  // left running would be captured a second time.
  "test/truth/tail-truth.test.ts",
  // The same rows on the streaming tail: the same reason.
  "test/truth/tail-stream-truth.test.ts",
  // The main truth matrix on tail-captured agents: it compares the overview's fleet-wide figures, and hears every
  // diagnostics message of its runtime.
  "test/truth/tail-matrix.test.ts",
  // The same matrix on the streaming tail: the same reasons.
  "test/truth/tail-stream-matrix.test.ts",
];

/**
 * The main workerd suite: every test outside the chat suite (vitest.chat.config.ts) and the e2e suite. `alone`
 * selects ALONE_FILES, each in a fresh runtime; otherwise the rest run in one workerd per worker, reused across
 * files, so the entry graph (agents SDK, hono, the console) loads once per worker instead of once per file, which
 * was most of the suite's time. test/apply-migrations.ts empties the store before each file.
 */
export async function mainSuite(opts: { alone: boolean }): Promise<ViteUserConfig> {
  const c = await workerdTestConfig({
    main: "./test/fixtures/entry.ts",
    include: opts.alone ? ALONE_FILES : ["test/**/*.test.ts"],
    durableObjects: {
      // The demo fleet's classes, hosted by the test worker itself (wrangler.jsonc binds them by script_name).
      DemoFiberAgent: "DemoFiberAgent",
      SessionAgent: "SessionAgent",
      DemoSessionAgent: "DemoSessionAgent",
      ProbeAgent: "ProbeAgent",
      PlainAdminAgent: "PlainAdminAgent",
      // A parent with sub-agents (test/fixtures/sub-agents.ts); the helper is bound so `subAgent()` finds its class.
      SubAgentHub: "SubAgentHub",
      SubAgentHelper: "SubAgentHelper",
      SubAgentBareHelper: "SubAgentBareHelper",
      FaultySessionAgent: "FaultySessionAgent",
      TaskProbeAgent: "TaskProbeAgent",
      ManagedFiberProbeAgent: "ManagedFiberProbeAgent",
      DurableWorkAgent: "DurableWorkAgent",
      NoEvictWorkAgent: "NoEvictWorkAgent",
      TelemetryOnlyAgent: "TelemetryOnlyAgent",
      QueuelessAgent: "QueuelessAgent",
      UnboundAdminAgent: "UnboundAdminAgent",
      QuietClassAgent: "QuietClassAgent",
      LossyAgent: "LossyAgent",
      ObservedWorkAgent: "ObservedWorkAgent",
      CostlyAgent: "CostlyAgent",
      LedgerAgent: "LedgerAgent",
      TruthFiberAgent: "TruthFiberAgent",
      TruthTaskAgent: "TruthTaskAgent",
      // The same truth agents with the admin package alone, captured by the tail (test/truth/tail-matrix.test.ts).
      AdminTruthFiberAgent: "AdminTruthFiberAgent",
      AdminTruthTaskAgent: "AdminTruthTaskAgent",
      GapAgent: "GapAgent",
      StubbornAgent: "StubbornAgent",
      VersionedAgentA: "VersionedAgentA",
      VersionedAgentB: "VersionedAgentB",
      AlarmLoopAgent: "AlarmLoopAgent",
      ResidentPlainAgent: "ResidentPlainAgent",
      PausableAgent: "PausableAgent",
      OlderMixinAgent: "OlderMixinAgent",
      Before7TaskAgent: "Before7TaskAgent",
      Before7AlarmLoopAgent: "Before7AlarmLoopAgent",
      Before7LedgerAgent: "Before7LedgerAgent",
      // Agents with no package of ours, captured by the tail alone (test/fixtures/tail-bare-agents.ts).
      TailHookAgent: "TailHookAgent",
      TailKeepAliveAgent: "TailKeepAliveAgent",
    },
  });
  return {
    ...c,
    test: {
      ...c.test,
      isolate: opts.alone,
      // Four runtimes on two cores: the files mostly wait (Queues delivering, alarms, evictions), so more of them
      // in flight is what shortens the run (measured: 260 s with two, 96 s with four).
      maxWorkers: 4,
      exclude: [
        "test/examples/demo-fleet/chat/**",
        "test/examples/demo-fleet/soak/**",
        "test/chat/**",
        "test/e2e/**",
        "**/node_modules/**",
        ...(opts.alone ? [] : ALONE_FILES),
      ],
      // The fuzz files send thousands of requests through one test isolate, whose waitUntil span exports then
      // miss the exporter's 5 s timeout: one "exporting spans failed!" line per request would bury their
      // figures. Tracing under load is not what they test (test/telemetry/otlp-export.test.ts is); elsewhere these lines stay.
      onConsoleLog: (log: string, _type: string, entity: { moduleId?: string; module?: { moduleId: string } } | undefined) =>
        !(log.startsWith("exporting spans failed!") && /\/test\/fuzz\//.test(entity?.moduleId ?? entity?.module?.moduleId ?? "")),
    },
  };
}
