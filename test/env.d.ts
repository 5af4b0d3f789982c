declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    /** A second store partition (test/workerd-config.ts, withPartitionDatabases); STORE_PARTITIONS stays 1, so only tests that build a two-partition Store use it. */
    DB_P1?: D1Database;
    // Settings the test config binds beside wrangler.jsonc's vars (test/workerd-config.ts); read through worker/config.ts.
    ACCESS_TEAM_DOMAIN: string;
    ACCESS_AUD: string;
    ACCESS_JWKS_URL: string;
    ROLES: string;
    CSRF_SECRET: string;
    OTLP_ENDPOINT: string;
    OTLP_HEADERS: string;
    ALERT_WEBHOOK_URL: string;
    ALERT_SLACK_WEBHOOK_URL: string;
    OTLP_CONTROL: string;
    /** The alert webhook receiver's control base URL (test/alert-receiver.ts). */
    ALERT_CONTROL: string;
    // The demo fleet's agents, bound locally in the test worker (vitest.config.ts).
    BACKUPS: R2Bucket;
    DemoFiberAgent: DurableObjectNamespace<import("../examples/demo-fleet/src/demo/fiber-agent").DemoFiberAgent>;
    SessionAgent: DurableObjectNamespace<import("../examples/demo-fleet/src/session").SessionAgent>;
    DemoSessionAgent: DurableObjectNamespace<import("../examples/demo-fleet/src/demo/session-agent").DemoSessionAgent>;
    ChatAgent: DurableObjectNamespace<import("../examples/demo-fleet/src/chat").ChatAgent>;
    ProbeAgent: DurableObjectNamespace<import("./fixtures/probe-agent").ProbeAgent>;
    PlainAdminAgent: DurableObjectNamespace<import("./fixtures/plain-admin-agent").PlainAdminAgent>;
    FaultySessionAgent: DurableObjectNamespace<import("./fixtures/faulty-session-agent").FaultySessionAgent>;
    TaskProbeAgent: DurableObjectNamespace<import("./fixtures/run-kinds-agents").TaskProbeAgent>;
    ManagedFiberProbeAgent: DurableObjectNamespace<import("./fixtures/run-kinds-agents").ManagedFiberProbeAgent>;
    DurableWorkAgent: DurableObjectNamespace<import("./fixtures/durable-work-agent").DurableWorkAgent>;
    NoEvictWorkAgent: DurableObjectNamespace<import("./fixtures/durable-work-agent").NoEvictWorkAgent>;
    TelemetryOnlyAgent: DurableObjectNamespace<import("./fixtures/telemetry-only-agent").TelemetryOnlyAgent>;
    QueuelessAgent: DurableObjectNamespace<import("./fixtures/queueless-agent").QueuelessAgent>;
    UnboundAdminAgent: DurableObjectNamespace<import("./fixtures/queueless-agent").UnboundAdminAgent>;
    QuietClassAgent: DurableObjectNamespace<import("./fixtures/queueless-agent").QuietClassAgent>;
    LossyAgent: DurableObjectNamespace<import("./fixtures/lossy-agent").LossyAgent>;
    ObservedWorkAgent: DurableObjectNamespace<import("./fixtures/durable-work-agent").ObservedWorkAgent>;
    PausableAgent: DurableObjectNamespace<import("./fixtures/pausable-agent").PausableAgent>;
    OlderMixinAgent: DurableObjectNamespace<import("./fixtures/pausable-agent").OlderMixinAgent>;
    Before7TaskAgent: DurableObjectNamespace<import("./fixtures/admin-rpc-v6/agents").Before7TaskAgent>;
    Before7AlarmLoopAgent: DurableObjectNamespace<import("./fixtures/admin-rpc-v6/agents").Before7AlarmLoopAgent>;
    Before7LedgerAgent: DurableObjectNamespace<import("./fixtures/admin-rpc-v6/agents").Before7LedgerAgent>;
    CostlyAgent: DurableObjectNamespace<import("./fixtures/costly-agent").CostlyAgent>;
    LedgerAgent: DurableObjectNamespace<import("./fixtures/ledger-agent").LedgerAgent>;
    TruthFiberAgent: DurableObjectNamespace<import("./fixtures/truth-agents").TruthFiberAgent>;
    TruthTaskAgent: DurableObjectNamespace<import("./fixtures/truth-agents").TruthTaskAgent>;
    AdminTruthFiberAgent: DurableObjectNamespace<import("./fixtures/truth-agents").AdminTruthFiberAgent>;
    AdminTruthTaskAgent: DurableObjectNamespace<import("./fixtures/truth-agents").AdminTruthTaskAgent>;
    VersionedAgentA: DurableObjectNamespace<import("./fixtures/versioned-agents").VersionedAgentA>;
    VersionedAgentB: DurableObjectNamespace<import("./fixtures/versioned-agents").VersionedAgentB>;
    // The chat suite's foreign chat agents (vitest.chat.config.ts).
    ThinkChatFixture: DurableObjectNamespace<import("./fixtures/chat-agents").ThinkChatFixture>;
    AiChatFixture: DurableObjectNamespace<import("./fixtures/chat-agents").AiChatFixture>;
    /** Bound only so the pool's ctx.exports hands `subAgent()` a Durable Object class; reached as a facet of ThinkChatFixture. */
    ThinkSubChatFixture: DurableObjectNamespace<import("./fixtures/chat-agents").ThinkSubChatFixture>;
    // Chat agents captured by the tail alone (the chat suite's tail matrix); the sub-agent classes are bound only so
    // `subAgent()` finds them, reached as facets of TailChatHub.
    TailThinkChat: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailThinkChat>;
    TailAiChat: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailAiChat>;
    TailAdminAiChat: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailAdminAiChat>;
    TailChatHub: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailChatHub>;
    TailSubChat: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailSubChat>;
    TailBareSubChat: DurableObjectNamespace<import("./fixtures/tail-chat-agents").TailBareSubChat>;
    TailHookAgent: DurableObjectNamespace<import("./fixtures/tail-bare-agents").TailHookAgent>;
    TailKeepAliveAgent: DurableObjectNamespace<import("./fixtures/tail-bare-agents").TailKeepAliveAgent>;
    SubAgentHub: DurableObjectNamespace<import("./fixtures/sub-agents").SubAgentHub>;
    /** Bound only so `subAgent()` finds the class; reached as a facet of SubAgentHub. */
    SubAgentHelper: DurableObjectNamespace<import("./fixtures/sub-agents").SubAgentHelper>;
    /** The same, with no package of ours (its parent is matched by its facet's object id). */
    SubAgentBareHelper: DurableObjectNamespace<import("./fixtures/sub-agents").SubAgentBareHelper>;
    GapAgent: DurableObjectNamespace<import("./fixtures/gap-agent").GapAgent>;
    StubbornAgent: DurableObjectNamespace<import("./fixtures/busy-agents").StubbornAgent>;
    AlarmLoopAgent: DurableObjectNamespace<import("./fixtures/resident-agents").AlarmLoopAgent>;
    ResidentPlainAgent: DurableObjectNamespace<import("./fixtures/resident-agents").ResidentPlainAgent>;
  }
}
declare namespace Cloudflare {
  interface Env {
    BenchPlainAgent: DurableObjectNamespace<import("../bench/agents").BenchPlainAgent>;
    BenchTelemetryAgent: DurableObjectNamespace<import("../bench/agents").BenchTelemetryAgent>;
    BenchDemoLikeAgent: DurableObjectNamespace<import("../bench/agents").BenchDemoLikeAgent>;
    BenchDemoLikeFlushAgent: DurableObjectNamespace<import("../bench/agents").BenchDemoLikeFlushAgent>;
    BenchTelemetryFlushAgent: DurableObjectNamespace<import("../bench/agents").BenchTelemetryFlushAgent>;
  }
}
/** Vite's `?raw` imports (a file's text), as tests read wrangler.jsonc. */
declare module "*?raw" {
  const text: string;
  export default text;
}
