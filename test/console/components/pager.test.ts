import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { Pager } from "../../../console/components/pager";

// A timeline's page reads a bounded number of segments, so it can come back short while more events follow: the
// pager must say so and link on, never let a short page pass for the end of the timeline.

async function render(props: Parameters<typeof Pager>[0]): Promise<string> {
  return String(await jsx(Pager, props).toString());
}

describe("timeline pager", () => {
  it("a short page with a cursor is marked partial and links to the older events", async () => {
    const html = await render({ path: "/sessions/s1", query: {}, next: "CUR", hasCursor: false, timeline: { dir: "older", shown: 3, limit: 50 } });
    expect(html).toContain('data-partial="true"');
    expect(html).toContain('data-testid="timeline-partial"');
    expect(html).toMatch(/<a href="\/sessions\/s1\?cursor=CUR" rel="next" data-testid="timeline-more">older events/);
  });

  it("a full page with a cursor links on without the partial note; the last page says the list ended", async () => {
    const full = await render({
      path: "/incidents/i",
      query: { agentClass: "A" },
      next: "CUR",
      hasCursor: true,
      timeline: { dir: "later", shown: 50, limit: 50 },
    });
    expect(full).toContain('data-partial="false"');
    expect(full).not.toContain("timeline-partial");
    expect(full).toContain('data-testid="timeline-more">later events');
    const last = await render({ path: "/incidents/i", query: {}, next: null, hasCursor: true, timeline: { dir: "later", shown: 2, limit: 50 } });
    expect(last).toContain('data-partial="false"');
    expect(last).not.toContain("timeline-more");
  });

  it("a list's pager (no timeline) keeps its plain next link and no partial marker", async () => {
    const html = await render({ path: "/runs", query: {}, next: "CUR", hasCursor: false });
    expect(html).not.toContain("data-partial");
    expect(html).toContain("next page");
  });
});
