declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    OTLP_CONTROL: string;
    ChatAgent: DurableObjectNamespace<import("../src/session/chat").ChatAgent>;
    ProbeAgent: DurableObjectNamespace<import("./fixtures/probe-agent").ProbeAgent>;
    PlainAdminAgent: DurableObjectNamespace<import("./fixtures/plain-admin-agent").PlainAdminAgent>;
    FaultySessionAgent: DurableObjectNamespace<import("./fixtures/faulty-session-agent").FaultySessionAgent>;
  }
}
declare namespace Cloudflare {
  interface Env {
    BenchPlainAgent: DurableObjectNamespace<import("../bench/agents").BenchPlainAgent>;
    BenchTelemetryAgent: DurableObjectNamespace<import("../bench/agents").BenchTelemetryAgent>;
  }
}
