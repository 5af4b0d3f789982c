import {
  CHAT_RECOVERY_EVENT_STATUS,
  CHAT_RECOVERY_STATUS,
  EVENT_TYPES,
  eventTypesWithStep,
  INCIDENT_LIFECYCLE,
  INCIDENT_OVERLAYS,
  type IncidentEventType,
  incidentTransition,
  RecoveryScope,
  SDK_INCIDENT_STATUSES,
} from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { lifecycleEvent } from "../fixtures/incident-lifecycle";

// The incident lifecycle is declared once (src/telemetry/incident-lifecycle.ts): which event moves an incident to
// which status, and whether a recovery is under way after it. The agent side (which recovery a model call re-spends
// for) and ingest (test/ingest/incident-lifecycle.test.ts) both follow it.

const types = Object.keys(INCIDENT_LIFECYCLE) as IncidentEventType[];

describe("the incident lifecycle table", () => {
  it("lists only event types of the contract, and every chat recovery event", () => {
    for (const t of types) expect(EVENT_TYPES, t).toContain(t);
    const chatTypes = EVENT_TYPES.filter((t) => t.startsWith("chat.recovery."));
    expect(chatTypes.length).toBeGreaterThan(0);
    for (const t of chatTypes) expect(types, t).toContain(t);
  });

  it("maps chat recovery events as the SDK's record statuses map", () => {
    for (const [word, record] of Object.entries(CHAT_RECOVERY_EVENT_STATUS)) {
      expect(incidentTransition(`chat.recovery.${word}`), word).toMatchObject({ kind: "status", status: CHAT_RECOVERY_STATUS[record] });
    }
  });

  it("opens with recovery under way and closes with it ended: a status word and its step agree", () => {
    for (const t of types) {
      const tr = INCIDENT_LIFECYCLE[t];
      if (tr.kind === "status") {
        expect(SDK_INCIDENT_STATUSES, t).toContain(tr.status);
        if (tr.status === "open") expect(tr.recovery, t).not.toBe("ended");
        else expect(tr.recovery, t).toBe("ended");
      }
      if (tr.kind === "closed_by" || tr.kind === "reconciled") expect(INCIDENT_OVERLAYS, t).toContain(tr.overlay);
    }
    expect(incidentTransition("fiber.started")).toBeUndefined();
    expect(incidentTransition("toString")).toBeUndefined();
  });

  it("counts as attempts exactly the attempt steps", () => {
    expect(eventTypesWithStep("attempt").sort()).toEqual(types.filter((t) => INCIDENT_LIFECYCLE[t].recovery === "attempt").sort());
    expect(eventTypesWithStep("attempt").length).toBeGreaterThan(0);
  });
});

describe("the agent side follows the table", () => {
  it("attributes a model call to an incident after each opening step, and to none after each ending step", () => {
    const scope = new RecoveryScope();
    const opens = eventTypesWithStep("detected", "attempt");
    const ends = eventTypesWithStep("ended");
    expect(opens.length).toBeGreaterThan(0);
    expect(ends.length).toBeGreaterThan(0);
    for (const [i, open] of opens.entries()) {
      for (const [j, end] of ends.entries()) {
        const incidentId = `inc-${i}-${j}`;
        const fiberId = `f-${i}-${j}`;
        scope.observe(lifecycleEvent(open, { agentName: "u1", incidentId, fiberId }));
        expect(scope.lookup({ fiberId })?.incidentId, `${open} opens`).toBe(incidentId);
        scope.observe(lifecycleEvent(end, { agentName: "u1", incidentId, fiberId }));
        expect(scope.lookup({ fiberId }), `${end} ends`).toBeUndefined();
      }
    }
  });

  it("leaves a recovery under way through a step that neither opens nor ends it", () => {
    const scope = new RecoveryScope();
    const neutral = (Object.keys(INCIDENT_LIFECYCLE) as IncidentEventType[]).filter((t) => INCIDENT_LIFECYCLE[t].recovery === null);
    expect(neutral.length).toBeGreaterThan(0);
    scope.observe(lifecycleEvent("fiber.recovery.attempt", { agentName: "u1", incidentId: "inc-n", fiberId: "f-n" }));
    for (const t of neutral) {
      scope.observe(lifecycleEvent(t, { agentName: "u1", incidentId: "inc-n", fiberId: "f-n" }));
      expect(scope.lookup({ fiberId: "f-n" })?.incidentId, t).toBe("inc-n");
    }
  });
});
