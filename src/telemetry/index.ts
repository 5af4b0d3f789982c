/** Public surface of the telemetry library an agent author imports. */
export { withTelemetry, type WithTelemetryOptions } from "./with-telemetry";
export { Telemetry, type TelemetryOptions, type TelemetryStats } from "./telemetry";
export { eventEnvelope, parseEvent, SCHEMA_VERSION, type TelemetryEvent, type Correlation, type Source } from "./envelope";
export { payloadSchemas, EVENT_TYPES, EXHAUSTION_REASONS, type EventType, type PayloadOf, type Preview } from "./payloads";
export { normalizeSdkEvent } from "./normalize";
export { subscribeAgentDiagnostics } from "./diagnostics";
export { fiberIncidentId, turnIncidentId, newEventId } from "./ids";
export { toPreview, maskSecrets } from "./redact";
export { otlpTargetFromEnv, parseOtlpHeaders } from "./config";
