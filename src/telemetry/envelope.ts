import { z } from "zod";
import { ACCEPTED_SCHEMA_VERSIONS, MAX_EVENT_BYTES, MAX_VERSION_CHARS, SCHEMA_VERSION, type SchemaVersion } from "./constants.js";
import { type EventType, type PayloadOf, payloadSchemas } from "./payloads.js";
import { MAX_PARENT_DEPTH } from "./sub-agents.js";

export { MAX_EVENT_BYTES, SCHEMA_VERSION };

const id = z.string().min(1).max(200);

/** Correlation ids that join events across the console and the user's APM. */
export const correlation = z
  .object({
    fiberId: id.optional(),
    /** A Tasks run id (`this.tasks`). */
    taskId: id.optional(),
    incidentId: id.optional(),
    requestId: id.optional(),
    opId: id.optional(),
    sessionName: id.optional(),
    traceId: z
      .string()
      .regex(/^[0-9a-f]{32}$/, "traceId must be 32 lowercase hex chars")
      .optional(),
    spanId: z
      .string()
      .regex(/^[0-9a-f]{16}$/, "spanId must be 16 lowercase hex chars")
      .optional(),
  })
  .strict();
export type Correlation = z.infer<typeof correlation>;

/** The agent that emitted the event: its class and its instance name. */
export const source = z.object({
  agentClass: z.string().min(1).max(200),
  /** The agent's key name: its instance name, or for a sub-agent its ancestry and name (sub-agents.ts). */
  agentName: z.string().min(1).max(500),
  /**
   * A sub-agent's ancestors as the SDK records them (`parentPath`, root-first). Optional and additive within the
   * schema version, like `ver`: top-level agents and senders that do not know it carry none, and stay valid.
   */
  parentPath: z
    .array(z.object({ className: z.string().min(1).max(200), name: z.string().min(1).max(200) }))
    .min(1)
    .max(MAX_PARENT_DEPTH)
    .optional(),
});
export type Source = z.infer<typeof source>;

const envelopeBase = z.object({
  v: z.union(ACCEPTED_SCHEMA_VERSIONS.map((n) => z.literal(n)) as unknown as [z.ZodLiteral<1>, z.ZodLiteral<2>]),
  /** Unique per event; ingest dedupes on it. */
  id: z.string().min(8).max(100),
  /** Epoch milliseconds when the event happened in the agent. */
  time: z.number().int().positive(),
  source,
  corr: correlation,
  /**
   * The agent's own number for this event (seq.ts): 1, 2, 3… per agent, given when the agent's durable outbox
   * ships it. Optional: older senders, events shipped without an outbox, and the console's own events
   * (reconciliation, admin) carry none. A safe integer (zod int), 1 or more. The console compares the highest
   * number with how many arrived.
   */
  seq: z.number().int().min(1).optional(),
  /**
   * The version of the agent's Worker that emitted the event: the `version_metadata` binding's id, or a value the
   * agent configured (telemetry option `version`). Optional and additive within schema version 1: events of older
   * senders carry none and stay valid; the console groups incidents by it and marks deploys where it first appears.
   */
  ver: z.string().min(1).max(MAX_VERSION_CHARS).optional(),
});

function variant<T extends EventType>(type: T) {
  return envelopeBase.extend({ type: z.literal(type), payload: payloadSchemas[type] });
}

const variants = (Object.keys(payloadSchemas) as EventType[]).map((t) => variant(t));

/**
 * The validated event envelope: a discriminated union on `type`. On the wire an event may also carry `sig`
 * (see signing.ts); it is not part of the envelope, and validation drops it.
 */
export const eventEnvelope = z.discriminatedUnion("type", variants as unknown as [ReturnType<typeof variant>, ...ReturnType<typeof variant>[]]);

/** One telemetry event as it travels agent → Queue → D1. */
export type TelemetryEvent<T extends EventType = EventType> = T extends EventType
  ? {
      /** The version it was sent with (what this package sends: SCHEMA_VERSION). */
      v: SchemaVersion;
      id: string;
      time: number;
      type: T;
      source: Source;
      corr: Correlation;
      payload: PayloadOf<T>;
      /** The agent's own event number (see seq.ts); absent when unnumbered. */
      seq?: number;
      /** The emitting Worker's version (see `ver` in the envelope); absent when the agent has none configured. */
      ver?: string;
    }
  : never;

/** Validation result that names what is wrong in words a person can act on. */
export type ParseResult = { ok: true; event: TelemetryEvent } | { ok: false; reason: string };

/** Validates an unknown value as a telemetry event. Never throws. */
export function parseEvent(value: unknown): ParseResult {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, reason: `not an event object (got ${Array.isArray(value) ? "array" : value === null ? "null" : typeof value})` };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string" || !(type in payloadSchemas)) {
    return { ok: false, reason: typeof type === "string" ? `unknown event type "${type.slice(0, 100)}"` : "missing event type" };
  }
  const oversized = (value as { payload?: { oversized?: { bytes?: unknown } } }).payload?.oversized;
  if (oversized && typeof oversized.bytes === "number") {
    // Older senders (before event.too_large) shipped an oversized payload this way.
    return { ok: false, reason: `event too large: payload was ${oversized.bytes} bytes (limit ${MAX_EVENT_BYTES}); a preview is kept in the body` };
  }
  const r = eventEnvelope.safeParse(value);
  if (r.success) return { ok: true, event: r.data as TelemetryEvent };
  return { ok: false, reason: describeIssues(r.error) };
}

/** Turns zod issues into one line: `payload.reason: Invalid input; type: ...`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
