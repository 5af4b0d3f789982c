import { describe, expect, it } from "vitest";
import { ChartData, PossibleLossesSection } from "../../../console/pages/overview";

// The overview chart's text alternative says what the chart shows, in words and as a table, and every number
// in it links to the events it counts (the events list, by type and time window).

/** The figure links of `html`: [figure, href] with the href's query decoded. */
function figures(html: string): [number, Record<string, string>][] {
  return [...html.matchAll(/<a href="([^"]*)" data-figure="(\d+)">/g)].map((m) => {
    const u = new URL(m[1]!.replace(/&amp;/g, "&"), "https://x");
    expect(u.pathname).toBe("/events");
    return [Number(m[2]), Object.fromEntries(u.searchParams)];
  });
}

describe("ChartData", () => {
  const hour = 3_600_000;
  const five = 300_000;
  const t0 = Date.UTC(2026, 10, 23, 10);
  it("gives each series' total and busiest interval, and the events per hour, each linked to its events", async () => {
    const buckets = [t0, t0 + five, t0 + hour];
    const html = String(await ChartData({ series: { buckets, series: { "chat.recovery.exhausted": [0, 2, 1], recovery: [4, 0, 0] } } as never }));
    expect(html).toContain('datetime="2026-11-23T10:00:00');
    const f = figures(html);
    const end = t0 + hour + five - 1;
    const types = { exhausted: "chat.recovery.exhausted", recovery: "chat.recovery.attempt,fiber.recovery.attempt" };
    expect(f).toEqual([
      // Totals over the whole window, and each series' busiest 5 minutes.
      [3, { type: types.exhausted, since: String(t0), until: String(end) }],
      [2, { type: types.exhausted, since: String(t0 + five), until: String(t0 + 2 * five - 1) }],
      [4, { type: types.recovery, since: String(t0), until: String(end) }],
      [4, { type: types.recovery, since: String(t0), until: String(t0 + five - 1) }],
      // Two hours had events: two table rows, one cell per series, each its hour (the last cut at the window's end).
      [2, { type: types.exhausted, since: String(t0), until: String(t0 + hour - 1) }],
      [4, { type: types.recovery, since: String(t0), until: String(t0 + hour - 1) }],
      [1, { type: types.exhausted, since: String(t0 + hour), until: String(end) }],
      [0, { type: types.recovery, since: String(t0 + hour), until: String(end) }],
    ]);
  });

  it("says so when there is nothing to show", async () => {
    const html = String(await ChartData({ series: { buckets: [t0], series: {} } as never }));
    expect(html).toContain('data-testid="chart-empty"');
    expect(html).not.toContain('data-testid="chart-table"');
  });
});

describe("PossibleLossesSection", () => {
  const none = {
    runs: { unknown: { n: 0, capped: false }, ended_unreported: { n: 0, capped: false } },
    lost: { byKind: { truncated: 0, unreadable: 0, refused: 0, undelivered: 0, ingest: 0 }, capped: false, rowsRead: 0 },
    unheardClasses: [] as string[],
    since: 1_000,
    rowsRead: 0,
  };

  it("when every part is zero, says what it counted, not that nothing was lost", async () => {
    const html = String(await PossibleLossesSection({ losses: none, hotWindowHours: 48 }));
    expect(html).toContain('data-testid="no-possible-losses"');
    expect(html).toContain("No possible losses in the last 24 h");
    expect(html).toContain("a loss nothing reported cannot be counted");
    expect(html).not.toContain("data-figure");
  });

  it("shows only the parts above zero, each linking to its list", async () => {
    const html = String(
      await PossibleLossesSection({
        losses: {
          ...none,
          runs: { ...none.runs, ended_unreported: { n: 2, capped: false } },
          lost: { ...none.lost, byKind: { ...none.lost.byKind, truncated: 1 } },
        },
        hotWindowHours: 48,
      }),
    );
    expect(html).not.toContain("no-possible-losses");
    const links = [...html.matchAll(/<a href="([^"]*)" data-figure="(\d+)"/g)].map((m) => [m[1]!.replace(/&amp;/g, "&"), m[2]]);
    expect(links).toEqual([
      ["/runs?outcome=ended_unreported", "2"],
      ["/dead-letters?kind=truncated&since=1000", "1"],
    ]);
    expect(html).not.toContain("loss-runs-unknown");
    expect(html).not.toContain("loss-unheard-classes");
  });
});
