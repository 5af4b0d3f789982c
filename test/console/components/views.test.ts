import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { type ViewLink, ViewsMenuItems } from "../../../console/components/views";
import { Layout, type PageContext } from "../../../console/layout";

// Saved views in the page shell: the nav's menu loads the identity's views when first opened, a list page has the
// save form (team only for operators) and names the view it shows, with its clear control.

const base: PageContext = {
  user: { email: "a@example.com", role: "viewer" },
  devBanner: null,
  hxHeaders: "{}",
  csrfToken: "tok",
  pollSeconds: 5,
  traceUrl: null,
  now: 0,
};
const mine: ViewLink[] = [
  { viewId: "v1", name: "Open chat", list: "incidents", shelf: "personal" },
  { viewId: "v2", name: "Team running", list: "runs", shelf: "team" },
];

async function render(ctx: PageContext): Promise<string> {
  return String(await jsx(Layout, { ctx, title: "Incidents", active: "/incidents", children: jsx("p", {}, "body") }).toString());
}
const attr = (html: string, re: RegExp) => [...html.matchAll(re)].map((m) => m[1]);

describe("saved views in the layout", () => {
  it("have a nav menu on every page that loads the views when first opened, and links to the views page without script", async () => {
    const html = await render(base);
    expect(html).toMatch(/<details class="views-menu" data-testid="views-menu" hx-get="\/partials\/views" hx-trigger="toggle once"/);
    expect(html).toContain('<a href="/views">Manage views</a>');
    // Not a list page: nothing to save, no marker.
    expect(html).not.toContain('data-testid="view-save"');
    expect(html).not.toContain('data-testid="view-marker"');
  });

  it("list each view in the menu at its permanent address, personal and team", async () => {
    const html = String(await jsx(ViewsMenuItems, { views: mine }).toString());
    expect(attr(html, /<a href="([^"]+)" data-testid="view-link"/g)).toEqual(["/views/v1", "/views/v2"]);
    expect(attr(html, /data-testid="view-link" data-view-id="[^"]+" data-shelf="([^"]+)"/g)).toEqual(["personal", "team"]);
  });

  it("offer to save a list's filters (team views for operators only), with the CSRF token", async () => {
    const listView = { list: "incidents" as const, query: "status=open", active: null };
    const viewer = await render({ ...base, listView });
    expect(viewer).toContain('data-testid="view-save"');
    expect(viewer).toContain('<input type="hidden" name="query" value="status=open"/>');
    expect(viewer).toContain('<input type="hidden" name="_csrf" value="tok"/>');
    expect(attr(viewer, /<option value="(personal|team)"/g)).toEqual(["personal"]);
    const operator = await render({ ...base, user: { email: "o@example.com", role: "operator" }, listView });
    expect(attr(operator, /<option value="(personal|team)"/g)).toEqual(["personal", "team"]);
    expect(viewer).not.toContain('data-testid="view-marker"');
  });

  it("name the view a list shows, with clear; and offer no save for a query too long to keep", async () => {
    const html = await render({ ...base, listView: { list: "incidents", query: null, active: mine[0]! } });
    expect(attr(html, /data-testid="view-marker" data-view-id="([^"]+)"/g)).toEqual(["v1"]);
    expect(html).toMatch(/<form method="post" action="\/views\/forget"[^>]*data-testid="view-marker"/);
    expect(html).toContain('data-testid="view-clear"');
    expect(html).not.toContain('data-testid="view-save"');
  });
});
