import { describe, expect, it } from "vitest";
import { type RoleRules, hasRole, readAuthConfig, roleFor } from "../../../worker/auth";

const rules: RoleRules = { operator: ["alice@example.com", "*@sre.example.com"], viewer: ["*@example.com", "group:oncall-readers"] };
const base = { ACCESS_TEAM_DOMAIN: "t.cloudflareaccess.com", ACCESS_AUD: "aud", CSRF_SECRET: "s".repeat(32) };

describe("roles", () => {
  it("maps exact emails, *@domain and groups; operator wins over viewer", () => {
    expect(roleFor(rules, { email: "ALICE@example.com" })).toBe("operator");
    expect(roleFor(rules, { email: "dana@sre.example.com" })).toBe("operator");
    expect(roleFor(rules, { email: "bob@example.com" })).toBe("viewer");
    expect(roleFor(rules, { email: "x@partner.org", groups: ["Oncall-Readers"] })).toBe("viewer");
    expect(roleFor(rules, { email: "x@partner.org", groups: ["other"] })).toBeNull();
    expect(roleFor(rules, { email: "eve@eu.sre.example.com" })).toBeNull();
    expect(roleFor(rules, { email: "eve@notexample.com" })).toBeNull();
    expect(roleFor(rules, { email: "alice@example.com.evil.org" })).toBeNull();
  });

  it("operator implies viewer, not the other way round", () => {
    expect(hasRole("operator", "viewer")).toBe(true);
    expect(hasRole("operator", "operator")).toBe(true);
    expect(hasRole("viewer", "viewer")).toBe(true);
    expect(hasRole("viewer", "operator")).toBe(false);
  });

  it("validates ROLES: JSON object of known roles with email, *@domain or group: entries", () => {
    const ok = readAuthConfig({ ...base, ROLES: JSON.stringify({ operator: [" Alice@Example.com "], viewer: ["*@example.com", "group:sre"] }) });
    expect(ok).toMatchObject({ ok: true, config: { roles: { operator: ["alice@example.com"], viewer: ["*@example.com", "group:sre"] } } });

    const problems = (ROLES: string) => {
      const r = readAuthConfig({ ...base, ROLES });
      return r.ok ? [] : r.problems.map((p) => `${p.setting} ${p.problem}`);
    };
    expect(problems('{"operator":["*example.com"]}')).toEqual(['ROLES "*example.com" is not an email, "*@domain" or "group:<name>" (at operator.0)']);
    expect(problems('{"admin":["a@b.c"]}')[0]).toMatch(/^ROLES .*admin/);
    expect(problems("{}")).toEqual(["ROLES grants no one a role"]);
    expect(problems('["a@b.c"]')[0]).toMatch(/^ROLES /);
  });
});
