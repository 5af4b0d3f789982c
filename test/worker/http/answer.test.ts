import { beforeAll, describe, expect, it } from "vitest";
import { type AnswerForm, answerForm, asksForJson } from "../../../worker/http/answer";
import { refusalBody } from "../../../worker/http/refusal";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { call, csrfFor, ORIGIN, postForm } from "../routes/harness";

const req = (path: string, headers: Record<string, string> = {}) => ({ path, header: (n: string) => new Headers(headers).get(n) ?? undefined });

describe("the one JSON-or-htmx rule", () => {
  it.each<[string, string, Record<string, string>, AnswerForm]>([
    ["a browser loading a page", "/runs", { Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" }, "page"],
    ["no Accept at all (curl)", "/runs", {}, "page"],
    ["anything (*/*)", "/runs", { Accept: "*/*" }, "page"],
    ["the CLI", "/runs", { Accept: "application/json" }, "json"],
    ["JSON in capitals", "/runs", { Accept: "Application/JSON" }, "json"],
    ["JSON preferred over HTML", "/runs", { Accept: "application/json, text/html;q=0.5" }, "json"],
    ["HTML preferred over JSON", "/runs", { Accept: "text/html, application/json;q=0.5" }, "page"],
    ["JSON refused (q=0)", "/runs", { Accept: "application/json;q=0" }, "page"],
    ["htmx", "/runs", { "HX-Request": "true" }, "fragment"],
    ["htmx that asks for JSON", "/runs", { "HX-Request": "true", Accept: "application/json" }, "json"],
    ["an HX-Request that is not htmx's", "/runs", { "HX-Request": "1" }, "page"],
    ["/api/* without Accept", "/api/csrf", {}, "json"],
    ["/api/* from htmx", "/api/agents/A/b", { "HX-Request": "true" }, "json"],
    ["a path that only starts like /api", "/apiary", {}, "page"],
  ])("%s → %s", (_what, path, headers, form) => {
    expect(answerForm(req(path, headers))).toBe(form);
  });

  it("reads an Accept header's weights", () => {
    expect(asksForJson(undefined)).toBe(false);
    expect(asksForJson("application/json;q=0.8, text/html;q=0.8")).toBe(true);
    expect(asksForJson("text/html;q=0.9, application/json;q=0.8")).toBe(false);
    expect(asksForJson("application/json;q=nonsense")).toBe(false);
  });
});

/** Asserts the one error body with this code, and returns it. */
async function expectRefusal(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = refusalBody.parse(await res.json());
  expect(body.error.code).toBe(code);
  return body;
}

describe("every family of route answers a refusal through the rule, with the one body", () => {
  beforeAll(async () => {
    await publishEnvTeamKeys();
  });
  const JSON_ACCEPT = { Accept: "application/json" };
  const HX = { "HX-Request": "true" };

  it("auth: an unsigned caller", async () => {
    await expectRefusal(await call("/runs", { headers: JSON_ACCEPT }), 401, "missing");
    await expectRefusal(await call("/api/csrf"), 401, "missing");
    const hx = await call("/runs", { headers: HX });
    expect([hx.status, hx.headers.get("content-type")]).toEqual([401, expect.stringMatching(/^text\/plain/)]);
    const page = await call("/runs");
    expect([page.status, page.headers.get("content-type")]).toEqual([401, expect.stringMatching(/^text\/html/)]);
  });

  it("CSRF: a change without a token", async () => {
    await expectRefusal(
      await call("/actions/force-idle", { as: "operator", method: "POST", headers: { ...JSON_ACCEPT, Origin: ORIGIN } }),
      403,
      "csrf_missing",
    );
  });

  it("pages: a page that does not exist, and bad input", async () => {
    await expectRefusal(await call("/no-such-page", { as: "viewer", headers: JSON_ACCEPT }), 404, "not_found");
    await expectRefusal(await call("/runs?limit=0", { as: "viewer", headers: JSON_ACCEPT }), 400, "invalid_input");
    const hx = await call("/no-such-page", { as: "viewer", headers: HX });
    expect([hx.status, hx.headers.get("content-type")]).toEqual([404, expect.stringMatching(/^text\/plain/)]);
    const page = await call("/no-such-page", { as: "viewer" });
    expect([page.status, page.headers.get("content-type")]).toEqual([404, expect.stringMatching(/^text\/html/)]);
  });

  it("actions: an admin error and a form that names no agent", async () => {
    const csrf = await csrfFor("operator");
    await expectRefusal(
      await postForm(
        "/actions/trigger-alarm",
        "operator",
        { agentClass: "ProbeAgent", agentName: "nobody-at-all", reason: "r" },
        { csrf, headers: JSON_ACCEPT },
      ),
      404,
      "not_found",
    );
    await expectRefusal(await postForm("/actions/trigger-alarm", "operator", { reason: "r" }, { csrf, headers: JSON_ACCEPT }), 400, "invalid_input");
    const hx = await postForm("/actions/trigger-alarm", "operator", { reason: "r" }, { csrf, headers: HX });
    expect(hx.status).toBe(400);
    expect(mustTestId(await hx.text(), "action-result").attrs).toMatchObject({ "data-ok": "false", "data-code": "invalid_input" });
  });

  it("bulk: a viewer may not start a batch", async () => {
    await expectRefusal(
      await postForm(
        "/bulk",
        "viewer",
        { agentClass: "ProbeAgent", action: "force_idle", reason: "r" },
        { csrf: await csrfFor("viewer"), headers: JSON_ACCEPT },
      ),
      403,
      "not_permitted",
    );
  });

  it("api: an agent the registry does not know, asked without an Accept header", async () => {
    await expectRefusal(await call("/api/agents/ProbeAgent/nobody-at-all", { as: "viewer" }), 404, "not_found");
  });

  it("the console's own: a method /health does not answer", async () => {
    const res = await call("/health", { method: "POST", headers: JSON_ACCEPT });
    await expectRefusal(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });
});
