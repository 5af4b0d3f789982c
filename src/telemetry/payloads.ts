import type { z } from "zod";
import { EVENT_REGISTRY } from "./registry.js";

/**
 * Payload schemas, one per event type, as the registry (registry.ts) declares them: the envelope and the type
 * union are built from this map.
 */

export { EXHAUSTION_REASONS, type Preview, preview, RUN_KINDS, type RunKind } from "./payload-parts.js";

type Registry = typeof EVENT_REGISTRY;

export const payloadSchemas = Object.fromEntries(Object.entries(EVENT_REGISTRY).map(([type, entry]) => [type, entry.payload])) as {
  readonly [K in keyof Registry]: Registry[K]["payload"];
};

export type EventType = keyof Registry;
export type PayloadOf<T extends EventType> = z.infer<(typeof payloadSchemas)[T]>;
export const EVENT_TYPES = Object.keys(payloadSchemas) as EventType[];
