import { TimeoutOtlpExporter } from "@agent-oncall/telemetry/otlp";
import type { ResolveConfigFn } from "@microlabs/otel-cf-workers";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ConfigError, type ConsoleConfig, consoleConfig } from "./config";
import type { Env } from "./env";

/** Used when no endpoint is configured: spans are recorded by nobody and nothing leaves the Worker. */
const noExport: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

/**
 * otel-cf-workers configuration for the Worker's own handlers (fetch, queue,
 * scheduled). Agents export their spans themselves (src/telemetry/otel.ts),
 * because otel-cf-workers' DO wrapper breaks agents-SDK stubs.
 */
export const otelConfig: ResolveConfigFn<Env> = (env) => {
  // A refused configuration exports nothing; the handlers themselves refuse the invocation and log why.
  let settings: ConsoleConfig["otel"] = { serviceName: "agent-console", otlp: null };
  try {
    settings = consoleConfig(env).otel;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
  }
  const target = settings.otlp;
  return {
    service: { name: settings.serviceName },
    // Our exporter, with a timeout: otel-cf-workers' own has none, and a hung APM would hold every invocation's waitUntil.
    exporter: target ? new TimeoutOtlpExporter(target) : noExport,
    // Our own OTLP POSTs and cache use must not be traced recursively or touched inside agents.
    instrumentation: { instrumentGlobalFetch: false, instrumentGlobalCache: false },
  };
};
