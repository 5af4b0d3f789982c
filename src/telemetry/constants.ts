/**
 * The contract's plain values, apart from its zod schemas (envelope.ts, payloads.ts): the agent side needs these
 * at runtime but never validates, so a user's Worker does not bundle the schemas.
 */

/** Bumped when the envelope or a payload changes incompatibly. Ingest rejects unknown versions to dead letters. */
export const SCHEMA_VERSION = 1;

/**
 * Largest event, as UTF-8 bytes of its JSON (signature included), that ingest accepts. The sender replaces a
 * larger one with an `event.too_large` placeholder; a Queue message (128 KB) always holds at least one event.
 */
export const MAX_EVENT_BYTES = 64 * 1024;

/** The kinds of run the console tracks (a run's `kind`). */
export const RUN_KINDS = ["fiber", "managed_fiber", "task", "chat_turn"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** Longest Worker version an event carries (`ver`): a version_metadata id is a 36-character UUID; a configured value is cut here. */
export const MAX_VERSION_CHARS = 100;
