/** The event contract alone (zod schemas and types), for code that validates events without running telemetry. */

export {
  ACCEPTED_SCHEMA_VERSIONS,
  ALARM_COALESCE_MS,
  MAX_EVENT_BYTES,
  MAX_VERSION_CHARS,
  RECOVERY_PAUSED_MARK,
  RUN_KINDS,
  type RunKind,
  SCHEMA_VERSION,
  type SchemaVersion,
  // The tail handler's loss reasons: the console classifies dead letters by them.
  TRUNCATED_REASON,
  UNREADABLE_PREFIX,
} from "./constants.js";
export { type Correlation, eventEnvelope, parseEvent, type Source, type TelemetryEvent } from "./envelope.js";
// Which events open and close which incident status: both sides of the Queue read it.
export * from "./incident-lifecycle.js";
export { EVENT_TYPES, type EventType, EXHAUSTION_REASONS, type PayloadOf, type Preview, payloadSchemas } from "./payloads.js";
export { EVENT_REGISTRY, type EventEntry } from "./registry.js";
export * from "./registry-facts.js";
export { CHAT_TURN_NAME, isInternalSdkName } from "./sdk-names.js";
export * from "./sdk-states.js";
