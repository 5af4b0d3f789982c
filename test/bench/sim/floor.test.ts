import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { FloorCounter } from "../../../bench/sim/floor";

// The floor is what a store writing only state changes would still write: the bench prints it beside the store's
// rows per event, so it must count each change a person needs once, and nothing a person does not need.

const MIN = 60_000;
const T = 1_000 * MIN;
let n = 0;
const ev = (type: string, corr: Record<string, string>, time = T, agentName = "a1"): TelemetryEvent =>
  ({ v: 1, id: `e${++n}`, time, type, source: { agentClass: "C", agentName }, corr, payload: {} }) as unknown as TelemetryEvent;

describe("the floor of rows written per event", () => {
  it("writes nothing for a run that starts and completes within one message but its rollup cells", () => {
    const f = new FloorCounter();
    f.message([ev("fiber.started", { fiberId: "f1" }), ev("fiber.stashed", { fiberId: "f1" }), ev("fiber.completed", { fiberId: "f1" })]);
    // Three cells (minute, class, type), each written and deleted, with one index entry: 3 x 2 x 2.
    expect(f.result()).toMatchObject({ events: 3, writes: 12, byChange: { openRun: 0, rollupCell: 4 } });
  });

  it("writes a run still running after its message twice, when seen open and when it ends", () => {
    const f = new FloorCounter();
    f.message([ev("fiber.started", { fiberId: "f1" })]);
    f.message([ev("fiber.completed", { fiberId: "f1" }, T + 2)]);
    const r = f.result();
    // open (1) + end (1), a row and an index entry each: 4 writes; cells: fiber.started, fiber.completed in one minute: 2 x 2 x 2.
    expect(r.writes).toBe(4 + 8);
    expect(r.byChange.openRun).toBe(4 / 2);
  });

  it("counts an incident three times (opened, closed, deleted), an ambiguous op twice, and a status change once", () => {
    const f = new FloorCounter();
    f.message([
      ev("fiber.recovery.detected", { fiberId: "f2", incidentId: "i1" }),
      ev("fiber.recovery.handled", { fiberId: "f2", incidentId: "i1" }),
      ev("op.ambiguous", { opId: "o1" }),
      ev("session.status_running", { sessionName: "s" }),
      ev("session.status_running", { sessionName: "s" }),
      ev("session.status_idle", { sessionName: "s" }),
    ]);
    const r = f.result();
    const rows = { incident: 3, ambiguousOp: 2, agentStatus: 2, rollupCell: 5 * 2 };
    expect(r.writes).toBe(Object.values(rows).reduce((a, b) => a + b, 0) * 2);
    expect(r.byChange).toMatchObject({ incident: (3 * 2) / 6, ambiguousOp: (2 * 2) / 6, agentStatus: (2 * 2) / 6 });
  });

  it("keeps failed work for the hot window: written and deleted, once only when it was already written open", () => {
    const f = new FloorCounter();
    f.message([ev("fiber.started", { fiberId: "f3" }), ev("fiber.failed", { fiberId: "f3" })]);
    f.message([ev("fiber.started", { fiberId: "f4" }, T + MIN)]);
    f.message([ev("fiber.failed", { fiberId: "f4" }, T + MIN + 1)]);
    // f3: kept (2). f4: open (1) + its end (1) + deleted later (1).
    expect(f.result().byChange).toMatchObject({ keptWork: ((2 + 1) * 2) / 4, openRun: (2 * 2) / 4 });
  });
});
