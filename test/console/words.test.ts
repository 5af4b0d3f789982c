import { describe, expect, it } from "vitest";
import { ambiguousOwnerSentence, incidentStatusLabel } from "../../console/words";
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
