import {
  EVENT_REGISTRY,
  EVENT_TYPES,
  type EventEntry,
  INCIDENT_LIFECYCLE,
  incidentTransition,
  normalizeSdkEvent,
  parseEvent,
  RECOVERY_STEP,
} from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";

/**
 * The event-type registry is the one place an event type's meaning is declared: what the SDK calls it, what it
 * carries, what it does to incidents. These tests hold the registry to what normalisation and the lifecycle do.
 */

const entries = Object.entries(EVENT_REGISTRY) as [string, EventEntry][];
const mapped = entries.flatMap(([type, e]) => (e.sdk === null ? [] : [{ type, sdk: e.sdk }]));
const sdkMessage = (type: string, payload: Record<string, unknown> = {}) => ({ type, agent: "Bot", name: "b1", payload, timestamp: 1_700_000_000_000 });

describe("event registry", () => {
  it("maps every SDK type it names to its own entry, and the event it builds passes that entry's schema", () => {
    expect(mapped.length).toBeGreaterThan(20);
    for (const { type, sdk } of mapped) {
      // A bare message (only the SDK's type): the builder fills what the SDK left out, so it still validates.
      const event = normalizeSdkEvent(sdkMessage(sdk, { fiberName: "work", fiberId: "f1", definition: "job", runId: "r1" }));
      expect(event?.type, sdk).toBe(type);
      const parsed = parseEvent(event);
      expect(parsed.ok, `${sdk}: ${parsed.ok ? "" : parsed.reason}`).toBe(true);
    }
  });

  it("gives each SDK type one owner", () => {
    const sdkTypes = mapped.map((m) => m.sdk);
    expect(new Set(sdkTypes).size).toBe(sdkTypes.length);
  });

  it("keeps an SDK type it does not model as sdk.event with the SDK's name, and drops only the known noise", () => {
    const unknown = normalizeSdkEvent(sdkMessage("brand:new:thing", { requestId: "q1", x: 1 }));
    expect(unknown).toMatchObject({ type: "sdk.event", payload: { sdkType: "brand:new:thing" }, corr: { requestId: "q1" } });
    expect(parseEvent(unknown).ok).toBe(true);
    expect(normalizeSdkEvent(sdkMessage("state:update"))).toBeNull();
  });

  it("derives the incident lifecycle from the entries: a type moves an incident exactly when its entry says how", () => {
    const movers = entries.filter(([, e]) => e.incident !== undefined).map(([t]) => t);
    expect(Object.keys(INCIDENT_LIFECYCLE).sort()).toEqual(movers.sort());
    for (const [type, e] of entries) {
      expect(incidentTransition(type), type).toEqual(e.incident);
      if (e.incident) expect((RECOVERY_STEP as Record<string, unknown>)[type], type).toBe(e.incident.recovery);
    }
  });

  it("lists every event type the contract accepts, and nothing else", () => {
    expect([...EVENT_TYPES].sort()).toEqual(entries.map(([t]) => t).sort());
    expect(parseEvent({ v: 2, id: "x", time: 1, type: "not.registered", source: { agentClass: "A", agentName: "a" }, corr: {}, payload: {} }).ok).toBe(false);
  });
});
