import { describe, expect, it } from "vitest";
import {
  ambiguousOwnerSentence,
  bulkFilterWords,
  bulkMatchWords,
  bulkRoleRefusalSentence,
  incidentStatusLabel,
  noBulkTargetsSentence,
  runKindWords,
  searchMatchLabel,
  searchViaWords,
} from "../../console/words";
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
  const A = { agentClass: "Support", agentName: "a1", via: { field: "incident", by: "id" } as const };
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

// Search says how a query matched as facts (which field, and whether the thing's own id, an event's, or a prefix).
describe("searchViaWords", () => {
  it("names the field, and says when an event of the thing carried it or the query only began it", () => {
    expect(searchViaWords({ field: "request", by: "id" })).toBe("request id");
    expect(searchViaWords({ field: "agent_key", by: "id" })).toBe("agent class/name");
    expect(searchViaWords({ field: "trace", by: "event" })).toBe("trace id (an event of it)");
    expect(searchViaWords({ field: "incident", by: "prefix" })).toBe("prefix of an incident id");
    expect(searchViaWords({ field: "session", by: "prefix" })).toBe("prefix of a session name");
  });
});

// The store returns a bulk filter as its fields; the console says it (the CLI prints it) and words the refusals.
describe("bulkFilterWords", () => {
  it("says one clause per criterion given, in filter order, and nothing for one not given", () => {
    const all = { agentClass: "Support", incidentReason: "loop", openOnly: true, status: "running_runs" as const, stuckRule: "no_progress" as const };
    expect(bulkFilterWords(all)).toBe("class Support, incident reason loop (open), status running_runs, stuck rule no_progress");
    expect(bulkFilterWords({ incidentReason: "loop", openOnly: undefined })).toBe("incident reason loop");
    expect(bulkFilterWords({ status: "open_incidents", openOnly: false })).toBe("status open_incidents");
  });
  it("puts the filter in the no-match refusal, and the actor and role in the role refusal", () => {
    expect(noBulkTargetsSentence({ agentClass: "Support", openOnly: undefined })).toBe(
      "No agent matches this filter (class Support), so no batch was started.",
    );
    expect(bulkRoleRefusalSentence({ email: "v@example.com", role: "viewer" })).toMatch(
      /^Refused: v@example\.com has the viewer role; bulk actions need operator\./,
    );
  });
});

// A bulk target comes with which criteria it met and the counts behind them; the console says them in one line.
describe("bulkMatchWords", () => {
  const t = { agentClass: "Support", stuck: null };
  it("says one clause per criterion met, in filter order, and marks a count the store stopped at", () => {
    const matched = {
      agentClass: true,
      incidentReason: { reason: "loop", openOnly: true, count: 2, capped: false },
      status: { status: "running_sessions" as const, count: 100, capped: true },
    };
    expect(bulkMatchWords({ ...t, matched })).toBe("class Support; 2 open incident(s) with reason loop; 100+ running session(s)");
    expect(
      bulkMatchWords({ ...t, matched: { agentClass: false, incidentReason: { reason: "loop", openOnly: false, count: 1, capped: false }, status: null } }),
    ).toBe("1 incident(s) with reason loop");
  });
});
