import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { ListPager, Pager } from "../../../console/components/pager";

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

  it("a list page shorter than its size with a next page says it stopped reading early; an empty one says none was in what it read", async () => {
    const short = await render({ path: "/runs", query: { outcome: "completed" }, next: "CUR", hasCursor: false, list: { noun: "runs", shown: 47, limit: 50 } });
    expect(short).toContain('data-partial="true"');
    expect(short).toContain('data-testid="list-partial"');
    expect(short).toContain("This page stopped reading before it was full: older runs may follow.");
    expect(short).toContain('href="/runs?outcome=completed&amp;cursor=CUR" rel="next"');
    const empty = await render({ path: "/runs", query: {}, next: "CUR", hasCursor: true, list: { noun: "runs", shown: 0, limit: 50 } });
    expect(empty).toContain("None in the runs this page read");
    const full = await render({ path: "/runs", query: {}, next: "CUR", hasCursor: false, list: { noun: "runs", shown: 50, limit: 50 } });
    expect(full).toContain('data-partial="false"');
    expect(full).not.toContain("list-partial");
    const last = await render({ path: "/runs", query: {}, next: null, hasCursor: true, list: { noun: "runs", shown: 3, limit: 50 } });
    expect(last).not.toContain("list-partial");
    expect(last).toContain("end of list");
  });

  it("a list's foot says no row matches only when the list ended empty, and tells the pager the page's size", async () => {
    const foot = async (items: unknown[], next: string | null, query: Record<string, string> = {}, empty: string | null = "No runs match.") =>
      String(await jsx(ListPager, { path: "/runs", query, page: { items, next }, noun: "runs", empty }).toString());
    const ended = await foot([], null);
    expect(ended).toContain("No runs match.");
    expect(ended).toContain("end of list");
    const emptyButMore = await foot([], "CUR");
    expect(emptyButMore).not.toContain("No runs match.");
    expect(emptyButMore).toContain("None in the runs this page read");
    // The page's size is the query's limit: 3 rows of a page of 3 are a full page, 3 of the default 50 a short one.
    expect(await foot([1, 2, 3], "CUR", { limit: "3" })).toContain('data-partial="false"');
    expect(await foot([1, 2, 3], "CUR")).toContain('data-partial="true"');
    // A list that shows its own empty state passes null.
    expect(await foot([], null, {}, null)).not.toContain('<p class="muted">');
  });
});
