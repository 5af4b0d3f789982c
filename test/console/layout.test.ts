import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import { asset } from "../../console/assets";
import { AdminActions } from "../../console/components/actions";
import { LAYOUT_SCRIPTS, Layout, type PageContext, SHORTCUTS } from "../../console/layout";

// The page shell's accessibility: a skip link first, the content as its target, the current page marked in the
// nav, a favicon, the shortcut help rendered hidden; and each admin action as one control.

const ctx: PageContext = {
  user: { email: "a@example.com", role: "operator" },
  devBanner: "Local dev auth",
  hxHeaders: "{}",
  csrfToken: "t",
  pollSeconds: 5,
  traceUrl: null,
  now: 0,
};

async function page(active: string): Promise<string> {
  return String(await jsx(Layout, { ctx, title: "Incidents", active, children: jsx("p", {}, "body") }).toString());
}

describe("the layout", () => {
  it("has a skip link as the first focusable element, aimed at <main id=content>", async () => {
    const html = await page("/incidents");
    const body = html.slice(html.indexOf("<body"));
    // The first link, button or field after <body> is the skip link (the dev banner is text only).
    expect(/<(a|button|input|select|textarea|summary)\b[^>]*>/.exec(body)![0]).toBe('<a class="skip-link" href="#content">');
    expect(body).toMatch(/<main id="content" tabindex="-1">/);
  });

  it("marks the active nav link, and only it, with aria-current=page", async () => {
    const html = await page("/incidents");
    expect(html.match(/aria-current="page"/g)).toHaveLength(1);
    expect(html).toContain('<a href="/incidents" class="active" aria-current="page">Incidents</a>');
    expect(await page("")).not.toContain("aria-current");
  });

  it("lists every page a person navigates to, Agents and Deploys among them, in the nav", async () => {
    const html = await page("/");
    const nav = html.slice(html.indexOf('<nav aria-label="Main">'), html.indexOf("</nav>"));
    const links = [...nav.matchAll(/<a href="([^"]+)"[^>]*>([^<]+)<\/a>/g)].map((m) => [m[1], m[2]]);
    expect(links).toContainEqual(["/agents", "Agents"]);
    expect(links).toContainEqual(["/deploys", "Deploys"]);
    expect(await page("/deploys")).toContain('<a href="/deploys" class="active" aria-current="page">Deploys</a>');
  });

  it("links the favicon and loads shortcuts.js with the other scripts", async () => {
    const html = await page("/");
    expect(html).toContain(`<link rel="icon" href="${asset("favicon.svg")}" type="image/svg+xml"/>`);
    expect(LAYOUT_SCRIPTS).toContain("shortcuts.js");
    for (const s of LAYOUT_SCRIPTS) expect(html).toContain(`<script src="${asset(s)}" defer=""></script>`);
  });

  it("renders the shortcut help hidden, listing every shortcut", async () => {
    const html = await page("/");
    expect(html).toMatch(/<div class="shortcut-help" id="shortcut-help" role="dialog" aria-modal="true" aria-labelledby="shortcut-help-title" hidden="">/);
    for (const [keys, what] of SHORTCUTS) {
      expect(html).toContain(what);
      for (const k of keys) expect(html).toContain(`<kbd>${k}</kbd>`);
    }
  });
});

describe("admin actions", () => {
  it("are one disclosure button each, controlling a hidden form", async () => {
    const html = String(
      await jsx(AdminActions, { agentClass: "A", agentName: "n", role: "operator", availability: { kind: "actions", capabilities: null } }).toString(),
    );
    // Outside the hidden forms, the only focusable elements are the disclosure buttons, one per agent action.
    const outsideForms = html.replace(/<form\b[\s\S]*?<\/form>/g, "");
    expect(outsideForms.match(/<(a|button|input|select|textarea|summary)\b[^>]*>/g)).toEqual([
      '<button type="button" data-disclosure="true" aria-expanded="false" aria-controls="action-form-force-idle">',
      '<button type="button" data-disclosure="true" aria-expanded="false" aria-controls="action-form-trigger-alarm">',
      '<button type="button" data-disclosure="true" aria-expanded="false" aria-controls="action-form-pause-recovery">',
      '<button type="button" data-disclosure="true" aria-expanded="false" aria-controls="action-form-resume-recovery">',
    ]);
    expect(html).toMatch(/<form id="action-form-force-idle" hidden="" hx-post="\/actions\/force-idle"/);
    expect(html).toMatch(/<form id="action-form-trigger-alarm" hidden="" hx-post="\/actions\/trigger-alarm"/);
    expect(html).not.toContain("<details");
    // An hours field is in the forms of the actions whose input has one (pause recovery), and only there.
    const withHours = [...html.matchAll(/<form id="action-form-([a-z-]+)"[\s\S]*?<\/form>/g)].filter((m) => m[0].includes('name="hours"')).map((m) => m[1]);
    expect(withHours).toEqual(["pause-recovery"]);
  });
});
