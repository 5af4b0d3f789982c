import { beforeAll, describe, expect, it } from "vitest";
import type { RefusalBody } from "../../../worker/http/refusal";
import { publishEnvTeamKeys } from "../access-tokens";
import { mustTestId } from "../html";
import { auditOf, call, csrfFor, csrfFromPage, expectStillRunning, getText, ORIGIN, type StalledSession, stalledSession, USERS } from "./harness";

// CSRF on the real Worker: the operator is allowed to act, so every refusal here is the CSRF check's.

const ACTIONS = [
  { path: "/actions/force-idle", action: "force_idle" },
  { path: "/actions/trigger-alarm", action: "trigger_alarm" },
] as const;

let victim: StalledSession;
let operatorToken: string;
let viewerToken: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  victim = await stalledSession("csrf-victim");
  [operatorToken, viewerToken] = await Promise.all([csrfFor("operator"), csrfFor("viewer")]);
});

const form = (agentName: string, reason: string, extra: Record<string, string> = {}) =>
  new URLSearchParams({ agentClass: "FaultySessionAgent", agentName, reason, ...extra }).toString();
const FORM_TYPE = { "Content-Type": "application/x-www-form-urlencoded" };

type Refusal = {
  name: string;
  code: "csrf_missing" | "csrf_invalid" | "csrf_origin";
  headers: () => Record<string, string>;
  field?: () => string;
  message: string;
};

const tamper = (t: string) => `${t.slice(0, -3)}${t.endsWith("AAA") ? "BBB" : "AAA"}`;

const REFUSALS: Refusal[] = [
  { name: "no token", code: "csrf_missing", headers: () => ({ Origin: ORIGIN }), message: "it carried no security token" },
  {
    name: "the viewer's token (another user)",
    code: "csrf_invalid",
    headers: () => ({ Origin: ORIGIN, "X-CSRF-Token": viewerToken }),
    message: "issued to another user",
  },
  {
    name: "the viewer's token in the _csrf field",
    code: "csrf_invalid",
    headers: () => ({ Origin: ORIGIN }),
    field: () => viewerToken,
    message: "issued to another user",
  },
  { name: "a tampered token", code: "csrf_invalid", headers: () => ({ Origin: ORIGIN, "X-CSRF-Token": tamper(operatorToken) }), message: "not valid for you" },
  {
    name: "a foreign Origin",
    code: "csrf_origin",
    headers: () => ({ Origin: "https://evil.example", "X-CSRF-Token": operatorToken }),
    message: `sent from https://evil.example, not from ${ORIGIN}`,
  },
  {
    name: "a cross-site request without Origin",
    code: "csrf_origin",
    headers: () => ({ "Sec-Fetch-Site": "cross-site", "X-CSRF-Token": operatorToken }),
    message: "did not say which site sent it",
  },
  { name: "no Origin at all", code: "csrf_origin", headers: () => ({ "X-CSRF-Token": operatorToken }), message: "did not say which site sent it" },
];

describe("the CSRF token a page hands out", () => {
  it("is in <body hx-headers> of every page, the same as /api/csrf gives, and differs per user", async () => {
    for (const path of ["/", "/incidents", "/runs", `/sessions/${encodeURIComponent(victim.name)}`, "/audit"]) {
      expect(csrfFromPage((await getText(path, "operator")).text)).toBe(operatorToken);
    }
    const api = await call("/api/csrf", { as: "operator" });
    expect(api.headers.get("content-type")).toMatch(/application\/json/);
    expect(await api.json()).toEqual({ token: operatorToken, user: { email: USERS.operator, role: "operator", via: "access" } });
    expect(viewerToken).not.toBe(operatorToken);
  });
});

describe.each(ACTIONS)("POST $path", ({ path, action }) => {
  it.each(REFUSALS)("refuses $name with 403 and leaves the agent untouched", async (r) => {
    for (const accept of ["application/json", "text/html"]) {
      const body = form(victim.name, `csrf probe: ${r.name}`, r.field ? { _csrf: r.field() } : {});
      const res = await call(path, { as: "operator", method: "POST", headers: { ...FORM_TYPE, ...r.headers(), Accept: accept }, body });
      expect(res.status).toBe(403);
      if (accept === "application/json") {
        const json = (await res.json()) as RefusalBody;
        expect(json.error.code).toBe(r.code);
        expect(json.error.message).toContain(r.message);
      } else {
        const page = await res.text();
        expect(mustTestId(page, "auth-problem").attrs["data-code"]).toBe(r.code);
        expect(mustTestId(page, "auth-problem-message").text).toContain(r.message);
      }
    }
    await expectStillRunning(victim);
    expect(await auditOf(victim.name)).toEqual([]);
  });

  it("runs with a valid token from the page and the same Origin, and audits it", async () => {
    const target = await stalledSession(`csrf-${action}`);
    const res = await call(path, {
      as: "operator",
      method: "POST",
      headers: { ...FORM_TYPE, Origin: ORIGIN, "X-CSRF-Token": operatorToken, Accept: "application/json" },
      body: form(target.name, `csrf ok ${action}`),
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { ok: boolean; value: { before: { status: string }; after: { status: string } } };
    expect(json.ok).toBe(true);
    expect(json.value.before.status).toBe("running");
    if (action === "force_idle") expect(json.value.after.status).toBe("idle");
    expect(await auditOf(target.name)).toEqual([{ actor: USERS.operator, role: "operator", action, reason: `csrf ok ${action}`, result: "ok", error: null }]);
  });
});

describe("other ways a browser sends the token", () => {
  it("accepts the _csrf form field with Sec-Fetch-Site: same-origin (a plain HTML form)", async () => {
    const target = await stalledSession("csrf-field");
    const res = await call("/actions/force-idle", {
      as: "operator",
      method: "POST",
      headers: { ...FORM_TYPE, "Sec-Fetch-Site": "same-origin" },
      body: form(target.name, "plain form", { _csrf: operatorToken }),
    });
    expect(res.status).toBe(200);
    expect(mustTestId(await res.text(), "action-result").attrs).toMatchObject({ "data-ok": "true", "data-action": "force_idle" });
    expect(await target.stub.status()).toBe("idle");
    expect(await auditOf(target.name)).toEqual([
      { actor: USERS.operator, role: "operator", action: "force_idle", reason: "plain form", result: "ok", error: null },
    ]);
  });

  it("checks every POST, even to paths that do not exist", async () => {
    for (const path of ["/incidents", "/actions/no-such-action", "/nowhere"]) {
      const refused = await call(path, { as: "operator", method: "POST", headers: { Origin: ORIGIN } });
      expect(refused.status).toBe(403);
      expect(mustTestId(await refused.text(), "auth-problem").attrs["data-code"]).toBe("csrf_missing");
      const allowed = await call(path, { as: "operator", method: "POST", headers: { Origin: ORIGIN, "X-CSRF-Token": operatorToken } });
      expect(allowed.status).toBe(404);
    }
  });
});
