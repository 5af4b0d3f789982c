import { describe, expect, it } from "vitest";
import { stuckSubjectHref } from "../../../console/links";
import { stuckDetail } from "../../../console/stuck-words";
import { DEFAULT_STUCK_CONFIG, type StuckEntry } from "../../../src/store/read-models";
import { stuckAlert } from "../../../worker/alerts/stuck";

// A stuck finding becomes one alert per episode, worded by the console (console/stuck-words.ts) from the facts the
// store returns: the alert says what the stuck page says.

const MIN = 60_000;
const T = Date.UTC(2026, 10, 24, 12, 0, 0);
const entry: StuckEntry = {
  rule: "incident_no_attempt",
  agentClass: "LossyAgent",
  agentName: "a-1",
  subjectKind: "incident",
  subjectId: "inc-1",
  since: T,
  incidentKind: "chat",
  lastSeen: T,
  attempts: 2,
  confirmedAt: null,
};

describe("stuckAlert", () => {
  it("says the finding in the console's words, links its subject, and keeps one key per episode as time passes", () => {
    const now = T + 16 * MIN;
    const a = stuckAlert(entry, now, DEFAULT_STUCK_CONFIG);
    const detail = stuckDetail(entry, now, DEFAULT_STUCK_CONFIG);
    expect(detail).toContain("this chat incident is open after 2 attempts");
    expect(a).toMatchObject({
      kind: "stuck",
      title: "Stuck",
      summary: `incident inc-1: ${detail}`,
      path: stuckSubjectHref(entry),
      at: T,
      details: { rule: "incident_no_attempt", subjectKind: "incident", subjectId: "inc-1", detail },
    });
    // Later checks of the same episode word it afresh but are the same alert (deduplicated by key).
    expect(stuckAlert(entry, now + 30 * MIN, DEFAULT_STUCK_CONFIG).key).toBe(a.key);
    expect(stuckAlert({ ...entry, since: T + MIN, lastSeen: T + MIN }, now, DEFAULT_STUCK_CONFIG).key).not.toBe(a.key);
  });
});
