// Facts the agent side shares (run kinds, the recovery-pause mark) have one owner: the admin package's facts entry.
export { RECOVERY_PAUSED_MARK, RUN_KINDS, type RunKind } from "@agent-oncall/admin-rpc/facts";

/**
 * The contract's plain values, apart from its zod schemas (envelope.ts, payloads.ts): the agent side needs these
 * at runtime but never validates, so a user's Worker does not bundle the schemas.
 */

/**
 * The version this package sends. Bumped when the contract changes: 2 added the recovery pause event types
 * (recovery.paused, recovery.resumed, recovery.skipped_paused). Ingest accepts every version in
 * ACCEPTED_SCHEMA_VERSIONS and sends any other to dead letters.
 */
export const SCHEMA_VERSION = 2;

/**
 * The versions ingest accepts. Version 2 only added event types, so a version 1 event (an agent on an older
 * package) is still valid as it is: a console upgraded first keeps reading the fleet it already had.
 */
export const ACCEPTED_SCHEMA_VERSIONS = [1, 2] as const;
export type SchemaVersion = (typeof ACCEPTED_SCHEMA_VERSIONS)[number];

/**
 * Largest event, as UTF-8 bytes of its JSON (signature included), that ingest accepts. The sender replaces a
 * larger one with an `event.too_large` placeholder; a Queue message (128 KB) always holds at least one event.
 */
export const MAX_EVENT_BYTES = 64 * 1024;

/** Longest Worker version an event carries (`ver`): a version_metadata id is a 36-character UUID; a configured value is cut here. */
export const MAX_VERSION_CHARS = 100;

/**
 * How often at most one callback's alarm firings ship (`schedule.executed`), per agent isolate: its first firing
 * ships at once, later ones are counted in memory and ship as one event with `count` at the first firing after
 * this window (alarm-firings.ts). A loop every 30 s then sends 12 events an hour, not 120. Ingest and the awake
 * read model know it: a loop's last reported firing can be this old while it still fires.
 */
export const ALARM_COALESCE_MS = 5 * 60_000;

/**
 * The field the telemetry mixin adds to each SDK event it passes on to the diagnostics channels (with-telemetry.ts):
 * that agent's events already go through its outbox, so the console's tail handler (tail.ts) skips them, and a
 * Worker that has both the mixin and a `tail_consumers` line still reports each event once.
 */
export const OUTBOX_SHIPPED_MARK = "oncallOutbox";

/** The reason of the loss the tail handler records for an item the runtime cut short (the console counts losses by it). */
export const TRUNCATED_REASON =
  "events lost: the Workers runtime cut this invocation's diagnostics short (its per-invocation limit); the agent's later events of that invocation never reached the console";

/** How the reason of every message the tail handler could not read begins (the console counts losses by it). */
export const UNREADABLE_PREFIX = "unreadable ";
