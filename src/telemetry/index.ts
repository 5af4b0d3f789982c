/** Public surface of the telemetry library an agent author imports. */

export { type OtlpTarget, otlpTargetFromEnv, parseOtlpHeaders } from "./config.js";
export {
  ACCEPTED_SCHEMA_VERSIONS,
  MAX_EVENT_BYTES,
  MAX_VERSION_CHARS,
  OUTBOX_SHIPPED_MARK,
  RECOVERY_PAUSED_MARK,
  RUN_KINDS,
  type RunKind,
  SCHEMA_VERSION,
  type SchemaVersion,
} from "./constants.js";
export { subscribeAgentDiagnostics } from "./diagnostics.js";
export { type Correlation, eventEnvelope, parseEvent, type Source, type TelemetryEvent } from "./envelope.js";
export { fiberIncidentId, newEventId, turnIncidentId } from "./ids.js";
export * from "./incident-lifecycle.js";
export { isInternalSdkName, type NormalizeOptions, normalizeSdkEvent } from "./normalize.js";
export type { QueueLike, SqlLike } from "./outbox.js";
export { packBodies, utf8Length } from "./pack.js";
export { EVENT_TYPES, type EventType, EXHAUSTION_REASONS, type PayloadOf, type Preview, payloadSchemas } from "./payloads.js";
export { capField, createMasker, type Masker, maskJson, maskSecrets, parseRedactPatterns, type RedactPatterns, toPreview } from "./redact.js";
export { EVENT_REGISTRY, type EventEntry } from "./registry.js";
export * from "./registry-facts.js";
export * from "./sdk-states.js";
export { SIGNATURE_FIELD, type SignatureVerdict, signEventText, signingKey, verifyEventSignature } from "./signing.js";
export type { SpanRecorder, TracingFactory } from "./spans.js";
export { type AgentPathStep, agentKeyName, MAX_PARENT_DEPTH, parseAgentKeyName, readParentPath, SUB_AGENT_SEPARATOR } from "./sub-agents.js";
export { Telemetry, type TelemetryOptions, type TelemetryStats } from "./telemetry.js";
export { type ModelUsage, RecoveryScope, readUsage, type UsageContext, usageFromGenAiAttributes } from "./usage.js";
export { type WithTelemetryClass, type WithTelemetryOptions, withTelemetry, workerVersion } from "./with-telemetry.js";
export { OBJECT_MARK_CHARS, parseWorkerClassKey, UNNAMED_WORKER_MARK, WORKER_SEPARATOR, workerClassKey } from "./workers.js";
