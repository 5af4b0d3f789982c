/** The event contract alone (zod schemas and types), for code that validates events without running telemetry. */
export { eventEnvelope, parseEvent, type TelemetryEvent, type Correlation, type Source } from "./envelope.js";
export { SCHEMA_VERSION, MAX_EVENT_BYTES } from "./constants.js";
export { payloadSchemas, EVENT_TYPES, EXHAUSTION_REASONS, type EventType, type PayloadOf, type Preview } from "./payloads.js";
export { RUN_KINDS, type RunKind } from "./constants.js";
export * from "./sdk-states.js";
// Which events open and close which incident status: both sides of the Queue read it.
export * from "./incident-lifecycle.js";
