import { describe, expect, it } from "vitest";
import { hasRole, matchesRolePattern, parseEmail, type RoleRules, readAuthConfig, roleFor } from "../../../worker/auth";

const rules: RoleRules = { operator: ["alice@example.com", "*@sre.example.com"], viewer: ["*@example.com", "group:oncall-readers"] };
const base = { ACCESS_TEAM_DOMAIN: "t.cloudflareaccess.com", ACCESS_AUD: "aud", CSRF_SECRET: "s".repeat(32) };
const KELVIN = "\u212A"; // KELVIN SIGN, which NFKC and toLowerCase() both fold into the letter k

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

  it("matches a table of emails against *@acme.com, an exact email and a group", () => {
    const table: [pattern: string, email: string, groups: string[], matches: boolean][] = [
      ["*@acme.com", "a@acme.com", [], true],
      ["*@acme.com", "A@ACME.COM", [], true],
      ["*@acme.com", "  a@acme.com \n", [], true],
      ["*@ACME.com", "a@acme.com", [], true],
      ["*@acme.com", "a@evil.com@acme.com", [], false],
      ["*@acme.com", "a@acme.com@evil.com", [], false],
      ["*@acme.com", "a@sub.acme.com", [], false],
      ["*@acme.com", "a@acme.com.evil.org", [], false],
      ["*@acme.com", "a@notacme.com", [], false],
      ["*@acme.com", "a@acme.com.", [], false],
      ["*@acme.com", "acme.com", [], false],
      ["*@acme.com", "@acme.com", [], false],
      ["*@acme.com", "a@ac me.com", [], false],
      ["*@acme.com", "a@acme\u200B.com", [], false], // zero-width space
      ["*@acme.com", "a\uFF20acme.com", [], false], // fullwidth @ folds into @
      ["*@acme.com", "a@\uFF41cme.com", [], false], // fullwidth a folds into a
      ["*@kelvin.com", `a@${KELVIN}elvin.com`, [], false],
      ["*@kelvin.com", "a@kelvin.com", [], true],
      ["kim@acme.com", `${KELVIN}im@acme.com`, [], false],
      ["*@acme.com", "\u0130@acme.com", [], false], // İ lower-cases to i + a combining dot
      ["*@bücher.example", "a@bu\u0308cher.example", [], true], // the same domain, decomposed: NFKC makes them equal
      ["alice@acme.com", "Alice@Acme.Com", [], true],
      ["alice@acme.com", "alice@acme.co", [], false],
      ["alice@acme.com", "xalice@acme.com", [], false],
      ["group:oncall", "z@other.org", ["OnCall"], true],
      ["group:oncall", "z@other.org", [" oncall "], true],
      ["group:on call", "z@other.org", ["On Call"], true],
      ["group:oncall", "z@other.org", ["oncall-2"], false],
      ["group:kube", "z@other.org", [`${KELVIN}ube`], false],
      ["group:oncall", "group:oncall", [], false], // the email is not consulted for groups
      ["*@acme.com", "z@other.org", ["acme.com"], false], // nor groups for domains
    ];
    for (const [pattern, email, groups, expected] of table) {
      expect(matchesRolePattern(pattern, { email, groups }), `${pattern} vs ${JSON.stringify(email)} ${JSON.stringify(groups)}`).toBe(expected);
    }
  });

  it("parses an email into one normalised address with exactly one @", () => {
    expect(parseEmail("  Alice@Example.COM ")).toEqual({ ok: true, value: { address: "alice@example.com", local: "alice", domain: "example.com" } });
    expect(parseEmail("a@evil.com@acme.com")).toEqual({ ok: false, problem: "has more than one @" });
    expect(parseEmail(`a@${KELVIN}elvin.com`)).toEqual({ ok: false, problem: "contains U+212A, a character that imitates plain ASCII" });
    expect(parseEmail("no-at-sign")).toEqual({ ok: false, problem: "has no @" });
  });

  it("operator implies viewer, not the other way round", () => {
    expect(hasRole("operator", "viewer")).toBe(true);
    expect(hasRole("operator", "operator")).toBe(true);
    expect(hasRole("viewer", "viewer")).toBe(true);
    expect(hasRole("viewer", "operator")).toBe(false);
  });

  it("validates ROLES: JSON object of known roles with email, *@domain or group: entries, normalised", () => {
    const ok = readAuthConfig({ ...base, ROLES: JSON.stringify({ operator: [" Alice@Example.com "], viewer: ["*@Example.com", "GROUP:SRE Team"] }) });
    expect(ok).toMatchObject({ ok: true, config: { roles: { operator: ["alice@example.com"], viewer: ["*@example.com", "group:sre team"] } } });

    const problems = (ROLES: string) => {
      const r = readAuthConfig({ ...base, ROLES });
      return r.ok ? [] : r.problems.map((p) => `${p.setting} ${p.problem}`);
    };
    expect(problems('{"operator":["*example.com"]}')).toEqual([
      'ROLES "*example.com" is not an email, "*@domain" or "group:<name>" (it uses * other than as "*@domain") (at operator.0)',
    ]);
    expect(problems('{"viewer":["a@evil.com@acme.com"]}')).toEqual([
      'ROLES "a@evil.com@acme.com" is not an email, "*@domain" or "group:<name>" (it has more than one @) (at viewer.0)',
    ]);
    expect(problems(JSON.stringify({ viewer: [`*@${KELVIN}elvin.com`] }))[0]).toContain("contains U+212A, a character that imitates plain ASCII");
    expect(problems('{"viewer":["*@"]}')[0]).toContain("(it is empty)");
    expect(problems('{"viewer":["group:"]}')[0]).toContain("(it is empty)");
    expect(problems('{"admin":["a@b.c"]}')[0]).toMatch(/^ROLES .*admin/);
    expect(problems("{}")).toEqual(["ROLES grants no one a role"]);
    expect(problems('["a@b.c"]')[0]).toMatch(/^ROLES /);
  });
});
