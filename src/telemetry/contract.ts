/** The event contract alone (zod schemas and types), for code that validates events without running telemetry. */
export { eventEnvelope, parseEvent, SCHEMA_VERSION, MAX_EVENT_BYTES, type TelemetryEvent, type Correlation, type Source } from "./envelope.js";
export { payloadSchemas, EVENT_TYPES, EXHAUSTION_REASONS, RUN_KINDS, type RunKind, type EventType, type PayloadOf, type Preview } from "./payloads.js";
export * from "./sdk-states.js";
