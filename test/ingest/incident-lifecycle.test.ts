import { env } from "cloudflare:workers";
import { FIBER_RECOVERY_INCIDENT, INCIDENT_LIFECYCLE, type IncidentEventType } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { getIncident } from "../../src/store/read-models";
import { lifecycleEvent } from "../fixtures/incident-lifecycle";
import { ingest } from "../store/store-helpers";

// Ingest projects each incident event by the declared lifecycle (src/telemetry/incident-lifecycle.ts): what the
// console shows after an open incident receives the event is what the table says, for every transition.

const T0 = Date.now() - 3 * 86_400_000;
const agentName = "lifecycle";
const owner = { agentClass: "ProbeAgent", agentName };
const types = Object.keys(INCIDENT_LIFECYCLE) as IncidentEventType[];

/** Opens an incident (an opening event of its own kind), then sends `type` one second later; returns the shown row. */
async function afterOpen(type: IncidentEventType, incidentId: string, extra: Record<string, unknown> = {}) {
  const opener: IncidentEventType = type.startsWith("chat.")
    ? "chat.recovery.detected"
    : type.startsWith("session.")
      ? "session.status_rescheduled"
      : "fiber.recovery.detected";
  const fiberId = `f-${incidentId}`;
  await ingest([
    lifecycleEvent(opener, { agentName, incidentId, fiberId, time: T0 }),
    lifecycleEvent(type, { agentName, incidentId, fiberId, time: T0 + 1000 }, extra),
  ]);
  return (await getIncident(env.DB, incidentId, owner))!;
}

describe("ingest follows the incident lifecycle table", () => {
  for (const type of types) {
    const t = INCIDENT_LIFECYCLE[type];
    it(`${type}: ${t.kind}`, async () => {
      const id = `lc-${type}`;
      switch (t.kind) {
        case "status": {
          const row = await afterOpen(type, id);
          expect([row.status, row.sdkStatus, row.closedBy]).toEqual([t.status, t.status, null]);
          break;
        }
        case "fiber_record": {
          // The fiber's SDK record decides: each status of a managed fiber maps by FIBER_RECOVERY_INCIDENT.
          for (const [word, expected] of Object.entries(FIBER_RECOVERY_INCIDENT)) {
            const extra = type === "fiber.resolved" ? { status: word, managed: true } : { fiberStatus: word, managed: true };
            const row = await afterOpen(type, `${id}-${word}`, extra);
            expect(row.sdkStatus, word).toBe(expected);
          }
          if (type === "fiber.recovery.handled") expect((await afterOpen(type, `${id}-plain`)).sdkStatus).toBe("recovered");
          break;
        }
        case "closed_by": {
          const row = await afterOpen(type, id);
          expect([row.status, row.sdkStatus, row.closedBy]).toEqual([t.overlay, "open", t.overlay]);
          break;
        }
        case "reconciled": {
          const gone = await afterOpen(type, `${id}-gone`, { finding: "not_recovering" });
          expect([gone.status, gone.sdkStatus, gone.closedBy]).toEqual([t.overlay, "open", t.overlay]);
          const alive = await afterOpen(type, `${id}-alive`, { finding: "confirmed_open" });
          expect([alive.status, alive.closedBy]).toEqual(["open", null]);
          // The agent still records the managed fiber: its SDK status, not the overlay.
          const recorded = await afterOpen(type, `${id}-recorded`, { finding: "not_recovering", fiberStatus: "completed" });
          expect([recorded.status, recorded.closedBy]).toEqual([FIBER_RECOVERY_INCIDENT.completed, null]);
          break;
        }
      }
    });
  }
});
