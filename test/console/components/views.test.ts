import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import type { ViewsContext } from "../../../console/components/views";
import { Layout, type PageContext } from "../../../console/layout";

// Saved views in the page shell: the nav's menu lists the identity's views, a list page has the save form (team only
// for operators) and names the view it shows, with its clear control; a page without views context has none of it.

const base: PageContext = {
  user: { email: "a@example.com", role: "viewer" },
  devBanner: null,
  hxHeaders: "{}",
  csrfToken: "tok",
  pollSeconds: 5,
  traceUrl: null,
  now: 0,
};
const mine: ViewsContext["mine"] = [
  { viewId: "v1", name: "Open chat", list: "incidents", shelf: "personal" },
  { viewId: "v2", name: "Team running", list: "runs", shelf: "team" },
];

async function render(ctx: PageContext): Promise<string> {
  return String(await jsx(Layout, { ctx, title: "Incidents", active: "/incidents", children: jsx("p", {}, "body") }).toString());
}
const attr = (html: string, re: RegExp) => [...html.matchAll(re)].map((m) => m[1]);

describe("saved views in the layout", () => {
  it("list the identity's views in the nav, each at its permanent address", async () => {
    const html = await render({ ...base, views: { mine, here: null } });
    expect(html).toContain('data-testid="views-menu"');
    expect(attr(html, /<a href="([^"]+)" data-testid="view-link"/g)).toEqual(["/views/v1", "/views/v2"]);
    expect(attr(html, /data-testid="view-link" data-view-id="[^"]+" data-shelf="([^"]+)"/g)).toEqual(["personal", "team"]);
    // Not a list page: nothing to save.
    expect(html).not.toContain('data-testid="view-save"');
  });

  it("offer to save a list's filters (team views for operators only), with the CSRF token", async () => {
    const here = { list: "incidents" as const, query: "status=open", active: null };
    const viewer = await render({ ...base, views: { mine, here } });
    expect(viewer).toContain('data-testid="view-save"');
    expect(viewer).toContain('<input type="hidden" name="query" value="status=open"/>');
    expect(viewer).toContain('<input type="hidden" name="_csrf" value="tok"/>');
    expect(attr(viewer, /<option value="(personal|team)"/g)).toEqual(["personal"]);
    const operator = await render({ ...base, user: { email: "o@example.com", role: "operator" }, views: { mine, here } });
    expect(attr(operator, /<option value="(personal|team)"/g)).toEqual(["personal", "team"]);
    expect(viewer).not.toContain('data-testid="view-marker"');
  });

  it("name the view a list shows, with clear; and offer no save for a query too long to keep", async () => {
    const html = await render({ ...base, views: { mine, here: { list: "incidents", query: null, active: mine[0]! } } });
    expect(attr(html, /data-testid="view-marker" data-view-id="([^"]+)"/g)).toEqual(["v1"]);
    expect(html).toMatch(/<form method="post" action="\/views\/forget"[^>]*data-testid="view-marker"/);
    expect(html).toContain('data-testid="view-clear"');
    expect(html).not.toContain('data-testid="view-save"');
  });

  it("are absent where no views context was given (htmx fragments, error pages before auth)", async () => {
    const html = await render(base);
    expect(html).not.toContain("views-menu");
    expect(html).not.toContain("view-bar");
  });
});
