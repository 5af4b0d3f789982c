import { beforeAll, describe, expect, it } from "vitest";
// The file the browser loads to decide what htmx may swap in (it sets globalThis.consoleResponses).
import "../../../console/static/response-text.js";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call, csrfFor, escapeHtml, ORIGIN, postForm, uid } from "./harness";

// An htmx request that fails puts its answer into the page (4xx refusals are swapped in for the person who
// clicked). Whatever the Worker answers — our fragment or a plain-text refusal — what reaches the page is
// escaped: either hono/jsx escaped it on the server, or response-text.js turns the text into text.

type Responses = { swappableBody(status: number, contentType: string | null, body: unknown): string };
const { swappableBody } = (globalThis as unknown as { consoleResponses: Responses }).consoleResponses;

const MARKUP = `<img src=x onerror=alert(1)>#${uid()}`;
const HX = { "HX-Request": "true" };

/** What htmx would put into the page for this response. */
async function swapped(res: Response): Promise<string> {
  return swappableBody(res.status, res.headers.get("content-type"), await res.text());
}

/** How response-text.js shows a plain-text answer: the line, escaped, in an alert paragraph. */
const asAlert = (line: string) => `<p class="error-message" role="alert">${escapeHtml(line)}</p>`;

function expectNoMarkup(html: string) {
  expect(html).not.toMatch(/<img/i);
  expect(html).not.toMatch(/<[a-z][^>]*\son[a-z]+=/i);
}

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("a failed action, as htmx sees it", () => {
  it("an unknown agent: the refusal fragment shows the name escaped", async () => {
    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "ProbeAgent", agentName: MARKUP, reason: "try" },
      { csrf: await csrfFor("operator"), headers: HX },
    );
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await swapped(res);
    expect(page.startsWith("<div")).toBe(true);
    expect(mustTestId(page, "action-result").attrs).toMatchObject({ "data-ok": "false", "data-action": "force_idle", "data-code": "not_found" });
    expect(page).toContain(escapeHtml(MARKUP));
    expectNoMarkup(page);
  });

  it("invalid input: the refusal fragment says what is missing", async () => {
    const res = await postForm(
      "/actions/trigger-alarm",
      "operator",
      { agentClass: "ProbeAgent", reason: "try" },
      { csrf: await csrfFor("operator"), headers: HX },
    );
    expect(res.status).toBe(400);
    const result = mustTestId(await swapped(res), "action-result");
    expect(result.attrs).toMatchObject({ "data-ok": "false", "data-action": "trigger_alarm", "data-code": "invalid_input" });
    // The sentence names the missing field.
    expect(result.text).toContain("agentName");
  });

  it("a CSRF refusal comes as plain text (from auth) and is shown as text, markup and all", async () => {
    // The Origin is quoted in the message: a plain-text body must never be parsed as HTML.
    const origin = `https://evil.example/${MARKUP}`;
    const res = await postForm(
      "/actions/force-idle",
      "operator",
      { agentClass: "ProbeAgent", agentName: "x", reason: "r" },
      { csrf: await csrfFor("operator"), origin, headers: HX },
    );
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const line = await res.clone().text();
    // The sentence quotes both origins; the page shows it as text.
    expect(line).toContain(origin);
    expect(line).toContain(ORIGIN);
    const page = await swapped(res);
    expect(page).toBe(asAlert(line));
    expectNoMarkup(page);
  });

  it("a refusal for a viewer is shown escaped", async () => {
    const res = await postForm(
      "/actions/force-idle",
      "viewer",
      { agentClass: "ProbeAgent", agentName: MARKUP, reason: "r" },
      { csrf: await csrfFor("viewer"), headers: HX },
    );
    expect(res.status).toBe(403);
    const page = await swapped(res);
    expect(mustTestId(page, "action-result").attrs["data-code"]).toBe("not_permitted");
    expectNoMarkup(page);
  });
});

describe("a failed fragment request", () => {
  it("a 404 answered as one line of text shows as text", async () => {
    const res = await call(`/sessions/${encodeURIComponent(MARKUP)}/nope`, { as: "viewer", headers: HX });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const line = await res.clone().text();
    const page = await swapped(res);
    expect(page).toBe(asAlert(line));
    expectNoMarkup(page);
  });

  it("a sign-in refusal (no token) shows as text", async () => {
    const res = await call("/partials/overview", { headers: HX });
    expect(res.status).toBe(401);
    const line = await res.clone().text();
    expect(line).not.toBe("");
    const page = await swapped(res);
    expect(page).toBe(asAlert(line));
  });
});
