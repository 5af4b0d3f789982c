import { describe, expect, it } from "vitest";
import { ChartData } from "../../../console/pages/overview";

// The overview chart's text alternative says what the chart shows, in words and as a table.

describe("ChartData", () => {
  const hour = 3_600_000;
  const t0 = Date.UTC(2026, 10, 23, 10);
  it("gives each series' total and busiest interval, and the events per hour", async () => {
    const html = String(
      await ChartData({ series: { buckets: [t0, t0 + 300_000, t0 + hour], series: { "chat.recovery.exhausted": [0, 2, 1], recovery: [4, 0, 0] } } as never }),
    );
    expect(html).toContain("chat.recovery.exhausted 3");
    expect(html).toContain("peak 2 at");
    expect(html).toContain("recovery 4");
    expect(html).toContain('datetime="2026-11-23T10:00:00');
    // Two hours had events: two table rows.
    expect(html.match(/<tr><td>/g)?.length).toBe(2);
  });

  it("says so when there is nothing to show", async () => {
    const html = String(await ChartData({ series: { buckets: [t0], series: {} } as never }));
    expect(html).toContain("No events in the last 24 hours.");
  });
});
