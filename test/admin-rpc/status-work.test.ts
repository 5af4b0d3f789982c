import { describe, expect, it } from "vitest";
import { statusOutput } from "../../src/admin-rpc/contract";
import { idleStatus } from "../../src/admin-rpc/inspect";

// From contract 11 the agent sends what its status is derived from (StatusWork) and the client derives it, so the
// mapping of the SDK's states never ships in a user's Worker. Force idle's no-op check reads the same answer agent-side.
const answer = (status: unknown) => ({ status, runCount: 0, nextAlarm: null, schedules: [], pendingScheduleCount: 0, chatRecoveryIncidents: [] });
const statusOf = (status: unknown) => statusOutput.parse(answer(status)).status;

describe("an agent's status, derived by the client from the work the agent reports", () => {
  const cases = [
    { work: { runRows: 1, taskStates: [] as string[], fiberStatuses: [] as string[] }, status: "running" },
    { work: { runRows: 0, taskStates: ["pending"], fiberStatuses: [] }, status: "running" },
    { work: { runRows: 0, taskStates: ["waiting"], fiberStatuses: [] }, status: "waiting" },
    { work: { runRows: 0, taskStates: [], fiberStatuses: ["interrupted"] }, status: "waiting" },
    { work: { runRows: 0, taskStates: [], fiberStatuses: ["running"] }, status: "running" },
    { work: { runRows: 0, taskStates: [], fiberStatuses: [] }, status: "idle" },
  ];

  for (const c of cases) {
    it(`reads ${JSON.stringify(c.work)} as ${c.status}, and the agent's no-op check agrees`, () => {
      expect(statusOf(c.work)).toBe(c.status);
      expect(idleStatus(c.work)).toBe(c.status === "idle");
    });
  }

  it("keeps the word of an agent that derives its own status, and of an agent before contract 11", () => {
    expect(statusOf("terminated")).toBe("terminated");
    expect(idleStatus("terminated")).toBe(false);
    expect(statusOf("idle")).toBe("idle");
    expect(idleStatus("idle")).toBe(true);
  });

  it("refuses a status that is neither a word nor the work it is derived from", () => {
    expect(statusOutput.safeParse(answer("sleeping")).success).toBe(false);
    expect(statusOutput.safeParse(answer({ runRows: "1", taskStates: [], fiberStatuses: [] })).success).toBe(false);
  });
});
