import {
  ALARM_EVENT,
  EVENT_REGISTRY,
  EVENT_TYPES,
  type EventEntry,
  INCIDENT_LIFECYCLE,
  incidentTransition,
  isAlertCandidate,
  normalizeSdkEvent,
  parseEvent,
  RECOVERY_STEP,
  runEffectOf,
  SERIES_TYPES,
  sessionStatusOf,
  toneOf,
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

  it("answers the other rooms' questions from the entries, and 'no effect' for a type it does not know", () => {
    // The overview's "recovery" chart adds up a chat turn's and a fiber's recovery attempts.
    expect([...(SERIES_TYPES.recovery ?? [])].sort()).toEqual(["chat.recovery.attempt", "fiber.recovery.attempt"]);
    expect(Object.hasOwn(SERIES_TYPES, "toString") || "toString" in SERIES_TYPES).toBe(false);
    // The alarm-rate figures count the event the SDK's schedule:execute becomes.
    expect(normalizeSdkEvent(sdkMessage("schedule:execute", { callback: "tick", id: "s1" }))?.type).toBe(ALARM_EVENT);
    for (const unknown of ["not.registered", "toString"]) {
      expect(toneOf(unknown)).toBeNull();
      expect(runEffectOf(unknown)).toEqual({});
      expect(sessionStatusOf(unknown)).toBeNull();
    }
  });

  it("makes an alert candidate of an event that moves the incident it names, or can make the op it names ambiguous", () => {
    const ev = (type: string, corr: { incidentId?: string; opId?: string }) => ({ type, corr });
    expect(isAlertCandidate(ev("chat.recovery.exhausted", { incidentId: "i1" }))).toBe(true);
    expect(isAlertCandidate(ev("session.error", { incidentId: "turn:1" }))).toBe(true);
    expect(isAlertCandidate(ev("chat.recovery.exhausted", {}))).toBe(false);
    // Model usage inside a recovery names the incident but says nothing of its status.
    expect(isAlertCandidate(ev("model.usage", { incidentId: "i1" }))).toBe(false);
    expect(isAlertCandidate(ev("op.ambiguous", { opId: "o1" }))).toBe(true);
    expect(isAlertCandidate(ev("op.started", { opId: "o1" }))).toBe(false);
  });

  it("ends a run only with an outcome: an entry that says a run ends also says how", () => {
    for (const [type, e] of entries) if (e.run?.ends) expect(e.run.outcome, type).toBeDefined();
  });
});
