import { describe, expect, it } from "vitest";
import { ambiguousOwnerSentence, incidentStatusLabel, runKindWords, searchMatchLabel } from "../../console/words";
import { INCIDENT_STATUSES } from "../../src/store/read-models";

// The store returns a status and a reason (or none); the console phrases them. A failure with no reason must not
// read like any other failure, and every other status reads as itself.
describe("incident status labels", () => {
  it("mark a failure without a reason apart, and leave every other status as it is", () => {
    expect(incidentStatusLabel({ status: "failed", reason: null })).not.toBe("failed");
    expect(incidentStatusLabel({ status: "failed", reason: null })).toContain("failed");
    for (const status of INCIDENT_STATUSES) expect(incidentStatusLabel({ status, reason: "max_attempts_exceeded" })).toBe(status);
  });
});

// The store refuses a lookup several agents answer with who they are; the console says so and links each one's page.
describe("ambiguousOwnerSentence", () => {
  it("names what was looked up and links its page for every agent that reported it, marking a cut list", () => {
    const candidates = [
      { agentClass: "Support", agentName: "a b" },
      { agentClass: "Support", agentName: "z&y" },
    ];
    expect(ambiguousOwnerSentence({ what: "run", id: "r/1", candidates, more: false })).toBe(
      'Several agents reported run "r/1"; choose one by opening it for its agent: /runs/r%2F1?agentClass=Support&agentName=a+b , /runs/r%2F1?agentClass=Support&agentName=z%26y',
    );
    expect(ambiguousOwnerSentence({ what: "incident", id: "i1", candidates: candidates.slice(0, 1), more: true })).toBe(
      'Several agents reported incident "i1"; choose one by opening it for its agent: /incidents/i1?agentClass=Support&agentName=a+b , …',
    );
  });
});

// Search returns each match's facts; the console labels them in a few words.
describe("searchMatchLabel", () => {
  const A = { agentClass: "Support", agentName: "a1", via: "incident id" };
  it("says each kind of match with its status, outcome, reason or session, and says when there is none", () => {
    expect(searchMatchLabel({ ...A, kind: "incident", id: "i1", incidentKind: "chat", status: "exhausted", reason: "no_progress_timeout" })).toBe(
      "chat incident · exhausted (no_progress_timeout)",
    );
    expect(searchMatchLabel({ ...A, kind: "incident", id: "i1", incidentKind: "fiber", status: "open", reason: null })).toBe("fiber incident · open");
    expect(searchMatchLabel({ ...A, kind: "run", id: "r1", runKind: "task", runName: "import", outcome: null })).toBe("task run import · running");
    expect(searchMatchLabel({ ...A, kind: "run", id: "r2", runKind: "chat_turn", runName: "turn", outcome: "failed" })).toBe("chat turn turn · failed");
    expect(searchMatchLabel({ ...A, kind: "op", id: "o1", opKind: "charge", resolution: null, sessionName: "s1" })).toBe(
      "ambiguous op charge · open · session s1",
    );
    expect(searchMatchLabel({ ...A, kind: "op", id: "o2", opKind: null, resolution: "done", sessionName: null })).toBe("ambiguous op · done");
    expect(searchMatchLabel({ ...A, kind: "session", id: "s1", status: null })).toBe("session · no status reported");
    expect(searchMatchLabel({ ...A, kind: "agent", id: "a1" })).toBe("agent Support · a1");
  });

  it("words run kinds the same everywhere, and shows an unknown kind as stored", () => {
    expect(["fiber", "managed_fiber", "task", "chat_turn", "workflow_step"].map(runKindWords)).toEqual([
      "fiber",
      "managed fiber",
      "task run",
      "chat turn",
      "workflow_step",
    ]);
  });
});
