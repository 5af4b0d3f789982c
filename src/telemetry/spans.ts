import type { OtlpTarget } from "./config.js";
import type { TelemetryEvent } from "./envelope.js";

/**
 * What the telemetry needs from tracing, declared apart from OpenTelemetry so the package's main entry never
 * loads the OpenTelemetry SDK: a user without OTLP export does not pay for it in their Worker's bundle. The
 * implementation lives in the `@agent-oncall/telemetry/otlp` entry (otlp.ts).
 */
export type SpanRecorder = {
  /** Records one event as a span (event); returns the trace/span ids used, or null. May throw (the caller counts it). */
  record(event: TelemetryEvent): { traceId: string; spanId: string } | null;
  /** Resolves when every span recorded so far has been attempted. */
  forceFlush(): Promise<void>;
  /** Export counters, or null when nothing is exported. */
  stats(): { exported: number; failed: number; dropped: number } | null;
};

/** Builds an agent's span recorder; `target` is null when no OTLP endpoint is configured. */
export type TracingFactory = (opts: { target: OtlpTarget | null; serviceName: string; keepAlive?: (p: Promise<unknown>) => void }) => SpanRecorder;
