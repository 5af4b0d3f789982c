import { describe, expect, it } from "vitest";
import { chartSummary } from "../../../console/pages/overview";

// The overview chart's text alternative says what the chart shows.

describe("chartSummary", () => {
  it("gives each series' total and busiest interval", () => {
    expect(chartSummary({ series: { "chat.recovery.exhausted": [0, 2, 1], recovery: [4, 0, 0] } })).toBe(
      "Events in the last 24 hours. chat.recovery.exhausted: 3 in total, at most 2 in one interval; recovery: 4 in total, at most 4 in one interval.",
    );
  });

  it("says so when there is nothing to show", () => {
    expect(chartSummary({ series: {} })).toBe("No events in the last 24 hours.");
  });
});
