/** Public surface of the telemetry library an agent author imports. */
export { withTelemetry, type WithTelemetryClass, type WithTelemetryOptions } from "./with-telemetry.js";
export type { QueueLike, SqlLike } from "./outbox.js";
export { Telemetry, type TelemetryOptions, type TelemetryStats } from "./telemetry.js";
export { eventEnvelope, parseEvent, type TelemetryEvent, type Correlation, type Source } from "./envelope.js";
export { SCHEMA_VERSION, MAX_EVENT_BYTES } from "./constants.js";
export { SIGNATURE_FIELD, signingKey, signEventText, verifyEventSignature, type SignatureVerdict } from "./signing.js";
export { packBodies, utf8Length } from "./pack.js";
export { payloadSchemas, EVENT_TYPES, EXHAUSTION_REASONS, type EventType, type PayloadOf, type Preview } from "./payloads.js";
export { RUN_KINDS, type RunKind } from "./constants.js";
export { normalizeSdkEvent, isInternalSdkName, type NormalizeOptions } from "./normalize.js";
export * from "./sdk-states.js";
export * from "./incident-lifecycle.js";
export { subscribeAgentDiagnostics } from "./diagnostics.js";
export { fiberIncidentId, turnIncidentId, newEventId } from "./ids.js";
export { toPreview, capField, maskSecrets, maskJson, createMasker, parseRedactPatterns, type Masker, type RedactPatterns } from "./redact.js";
export { otlpTargetFromEnv, parseOtlpHeaders, type OtlpTarget } from "./config.js";
export type { SpanRecorder, TracingFactory } from "./spans.js";
export { readUsage, usageFromGenAiAttributes, RecoveryScope, type ModelUsage, type UsageContext } from "./usage.js";
