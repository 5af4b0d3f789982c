import { describe, expect, it } from "vitest";
import { incidentStatusLabel } from "../../console/words";
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
