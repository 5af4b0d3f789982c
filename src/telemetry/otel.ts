import { type Attributes, type Span, type Tracer, trace } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import type { TelemetryEvent } from "./envelope.js";
import { BackgroundOtlpProcessor, type OtlpTarget } from "./otlp-exporter.js";

/** Attribute prefix for everything this library records. */
export const ATTR_PREFIX = "agents";

/**
 * Flattens an event into span attributes. Nested objects become dotted keys
 * (`agents.event.partialText.preview`), so an APM can filter on any field.
 */
export function eventAttributes(event: TelemetryEvent): Attributes {
  const a: Attributes = {
    [`${ATTR_PREFIX}.event.type`]: event.type,
    [`${ATTR_PREFIX}.event.id`]: event.id,
    [`${ATTR_PREFIX}.event.schema_version`]: event.v,
    [`${ATTR_PREFIX}.agent.class`]: event.source.agentClass,
    [`${ATTR_PREFIX}.agent.name`]: event.source.agentName,
  };
  const c = event.corr;
  if (c.fiberId) a[`${ATTR_PREFIX}.fiber.id`] = c.fiberId;
  if (c.incidentId) a[`${ATTR_PREFIX}.incident.id`] = c.incidentId;
  if (c.requestId) a[`${ATTR_PREFIX}.request.id`] = c.requestId;
  if (c.opId) a[`${ATTR_PREFIX}.op.id`] = c.opId;
  if (c.sessionName) a[`${ATTR_PREFIX}.session.name`] = c.sessionName;
  flatten(event.payload as Record<string, unknown>, `${ATTR_PREFIX}.event`, a, 0);
  return a;
}

function flatten(obj: Record<string, unknown>, prefix: string, out: Attributes, depth: number): void {
  for (const [k, v] of Object.entries(obj)) {
    const key = `${prefix}.${k}`;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[key] = v;
    else if (Array.isArray(v)) out[key] = v.filter((x) => typeof x === "string").slice(0, 32) as string[];
    else if (v && typeof v === "object" && depth < 2) flatten(v as Record<string, unknown>, key, out, depth + 1);
  }
}

/**
 * A tracer of our own, so agents export without touching the isolate's global
 * provider (otel-cf-workers' global tracer throws inside un-instrumented DOs).
 * `tracer` is null when no endpoint is configured.
 */
export type AgentTracing = { tracer: Tracer | null; processor: BackgroundOtlpProcessor | null };

/** Builds the tracer an agent's telemetry uses. With no endpoint there is none, and nothing is sent. */
export function createAgentTracing(opts: { target?: OtlpTarget | null; serviceName: string; keepAlive?: (p: Promise<unknown>) => void }): AgentTracing {
  if (!opts.target?.url) return { tracer: null, processor: null };
  const processor = new BackgroundOtlpProcessor(opts.target, opts.keepAlive);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName }),
    spanProcessors: [processor],
  });
  return { tracer: provider.getTracer("agents-telemetry"), processor };
}

/**
 * Records an event on the active span as a span event when there is one, and
 * otherwise as a short span of its own (when we have a tracer). Returns the
 * trace/span ids used, so the stored event links to the APM trace.
 */
export function recordEventSpan(tracer: Tracer | null, event: TelemetryEvent): { traceId: string; spanId: string } | null {
  const active = trace.getActiveSpan();
  let span: Span;
  if (active?.isRecording()) {
    active.addEvent(event.type, eventAttributes(event), event.time);
    span = active;
  } else if (tracer) {
    span = tracer.startSpan(event.type, { attributes: eventAttributes(event), startTime: event.time });
    span.end();
  } else {
    return null;
  }
  const sc = span.spanContext();
  if (!trace.isSpanContextValid(sc)) return null;
  return { traceId: sc.traceId, spanId: sc.spanId };
}
