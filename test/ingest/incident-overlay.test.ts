import { env } from "cloudflare:workers";
import { chatRecoveryRecordStatus } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { getIncident, listIncidents } from "../../src/store/read-models";
import { makeEvent } from "../fixtures/events";
import { incidentScenarios } from "../fixtures/incident-scenarios";
import { shuffled } from "../fixtures/seeded-random";
import { ingest } from "../store/store-helpers";

// Force idle and reconciliation close incidents from outside the SDK: ingest writes their closed-by overlay and
// never the SDK's status or reason, so a closed incident keeps its root cause. What the console shows is derived
// from both, and must not depend on the order or number of deliveries.

const T0 = Date.UTC(2026, 10, 2, 9);
const owner = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });

type Stored = { incident_id: string; status: string; reason: string | null; closed_by: string | null; closed_by_reason: string | null; last_seen: number };

async function stored(agentName: string): Promise<Stored[]> {
  return (
    await env.DB.prepare("SELECT incident_id, status, reason, closed_by, closed_by_reason, last_seen FROM incidents WHERE agent_name = ? ORDER BY incident_id")
      .bind(agentName)
      .all<Stored>()
  ).results;
}

/** What the console shows for each incident of the agent: the read model's row, by id. */
async function shown(agentName: string) {
  const page = await listIncidents(env.DB, owner(agentName), { limit: 50 });
  return Object.fromEntries(
    page.items.map((i) => [
      i.incidentId,
      { status: i.status, sdkStatus: i.sdkStatus, reason: i.reason, closedBy: i.closedBy, closedByReason: i.closedByReason },
    ]),
  );
}

describe("the closed-by overlay and exhausted precedence are order-independent", () => {
  it("gives the same rows whatever the order, batching and redelivery", async () => {
    let reference: { rows: Stored[]; view: unknown } | null = null;
    for (const [seed, size] of [
      [1, 1],
      [7, 3],
      [77, 5],
      [777, 50],
    ] as const) {
      const agentName = `overlay-${seed}`;
      const scenarios = incidentScenarios(agentName, T0);
      const events = shuffled(
        scenarios.flatMap((s) => s.events),
        seed,
      );
      for (let i = 0; i < events.length; i += size) await ingest(events.slice(i, i + size));
      // Redelivery: a third of the events again, one batch carrying some of them twice.
      const again = shuffled(events, seed + 1).slice(0, Math.ceil(events.length / 3));
      await ingest([...again, ...again.slice(0, 3)]);
      const rows = (await stored(agentName)).map((r) => ({ ...r, incident_id: r.incident_id.replace(agentName, "A") }));
      const view = Object.fromEntries(Object.entries(await shown(agentName)).map(([k, v]) => [k.replace(agentName, "A"), v]));
      // Against the scenarios' expectations, for every order.
      expect(view).toEqual(Object.fromEntries(scenarios.map((s) => [s.incidentId.replace(agentName, "A"), s.expected])));
      if (reference === null) reference = { rows, view };
      else expect({ rows, view }).toEqual(reference);
    }
  });

  it("stores the SDK's word and reason untouched, and the action beside them", async () => {
    const agentName = "overlay-stored";
    const scenarios = incidentScenarios(agentName, T0);
    await ingest(scenarios.flatMap((s) => s.events));
    const rows = new Map((await stored(agentName)).map((r) => [r.incident_id, r]));
    for (const s of scenarios) {
      const r = rows.get(s.incidentId)!;
      // The stored status is the SDK's own word: force_idled / ended_unreported never are.
      expect([r.status, r.reason, r.closed_by, r.closed_by_reason], s.incidentId).toEqual([
        s.expected.sdkStatus,
        s.expected.reason,
        s.expected.closedBy,
        s.expected.closedByReason,
      ]);
      // The action observes: last_seen is the SDK's last event, not the force idle's time.
      const sdkTimes = s.events.filter((e) => e.type !== "incident.force_idled" && e.type !== "incident.reconciled").map((e) => e.time);
      expect(r.last_seen, s.incidentId).toBe(Math.max(...sdkTimes));
    }
  });

  it("a force idle newer than a resumed recovery closes it again; an older one does not", async () => {
    const agentName = "overlay-twice";
    const [resumed] = incidentScenarios(agentName, T0).filter((s) => s.incidentId === "idled-then-resumed");
    await ingest(resumed!.events);
    expect((await getIncident(env.DB, "idled-then-resumed", owner(agentName)))!.status).toBe("open");
    const second = makeEvent(
      "incident.force_idled",
      { reason: "second force idle" },
      { agentName, time: T0 + 9000, corr: { incidentId: "idled-then-resumed" } },
    );
    await ingest([second]);
    expect(await getIncident(env.DB, "idled-then-resumed", owner(agentName))).toMatchObject({
      status: "force_idled",
      sdkStatus: "open",
      statusAt: T0 + 9000,
      closedBy: "force_idled",
      closedByReason: "second force idle",
      closedByAt: T0 + 9000,
    });
    // The older force idle delivered again changes nothing.
    await ingest(resumed!.events.filter((e) => e.type === "incident.force_idled"));
    expect((await getIncident(env.DB, "idled-then-resumed", owner(agentName)))!.closedByReason).toBe("second force idle");
  });
});

describe("the one mapping reads a sealed chat-recovery record as the SDK exhausted it", () => {
  it("failed with an exhaustion reason is exhausted; any other failure is failed", () => {
    // The record the SDK leaves when the exhausting evaluation ran in a recovery continuation (see sdk-states.ts).
    expect(chatRecoveryRecordStatus({ status: "failed", reason: "max_attempts_exceeded" })).toBe("exhausted");
    expect(chatRecoveryRecordStatus({ status: "exhausted", reason: "no_progress_timeout" })).toBe("exhausted");
    expect(chatRecoveryRecordStatus({ status: "failed", reason: "Network connection lost." })).toBe("failed");
    expect(chatRecoveryRecordStatus({ status: "failed" })).toBe("failed");
    expect(chatRecoveryRecordStatus({ status: "attempting" })).toBe("open");
    expect(chatRecoveryRecordStatus({ status: "a word from a newer SDK" })).toBeNull();
  });
});
