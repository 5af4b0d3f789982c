/**
 * `@agent-oncall/telemetry/otlp`: OpenTelemetry for the telemetry mixin, as a separate entry point so only
 * Workers that export spans bundle the OpenTelemetry SDK.
 *
 * ```ts
 * import { otlpTracing } from "@agent-oncall/telemetry/otlp";
 * export class SupportAgent extends withTelemetry(Agent<Env>, { tracing: otlpTracing }) {}
 * ```
 */
import { createAgentTracing, recordEventSpan } from "./otel.js";
import type { SpanRecorder, TracingFactory } from "./spans.js";

export { ATTR_PREFIX, eventAttributes } from "./otel.js";
/** The OTLP/HTTP JSON span exporter with a timeout, for a Worker that traces itself (the console does, with otel-cf-workers). */
export { TimeoutOtlpExporter } from "./otlp-exporter.js";
export type { SpanRecorder, TracingFactory } from "./spans.js";

/**
 * Records each event on the active span as a span event (native Workers tracing, otel-cf-workers), or as a short
 * span of its own exported over OTLP/HTTP JSON when `target` (OTLP_ENDPOINT) is set. Export runs in the
 * background with a timeout; its failures are counted, never thrown into the agent.
 */
export const otlpTracing: TracingFactory = (opts): SpanRecorder => {
  const { tracer, processor } = createAgentTracing(opts);
  return {
    record: (event) => recordEventSpan(tracer, event),
    forceFlush: async () => {
      await processor?.forceFlush();
    },
    stats: () => (processor ? { exported: processor.stats.exported, failed: processor.stats.failed, dropped: processor.stats.dropped } : null),
  };
};
