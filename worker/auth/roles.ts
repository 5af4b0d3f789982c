import { z } from "zod";
import { normalizeGroupName, normalizeIdentifier, type Parsed, parseDomain, parseEmail } from "./identity";
import type { Role } from "./types";

/**
 * One entry of a role list in ROLES (all normalised as in identity.ts: trim, NFKC, lower case):
 * - `alice@example.com`  exactly that email
 * - `*@sre.example.com`  any email at exactly that domain (not its subdomains)
 * - `group:<name or id>`  any member of that Access group (needs a `groups` claim in the token)
 */
export type RolePattern = { kind: "email"; address: string } | { kind: "domain"; domain: string } | { kind: "group"; name: string };

const GROUP_PREFIX = "group:";

/** Parses one ROLES entry; the problem names what is wrong with it. */
export function parseRolePattern(raw: string): Parsed<RolePattern> {
  const text = raw.trim();
  if (text.toLowerCase().startsWith(GROUP_PREFIX)) {
    const name = normalizeGroupName(text.slice(GROUP_PREFIX.length));
    return name.ok ? { ok: true, value: { kind: "group", name: name.value } } : name;
  }
  if (text.startsWith("*@")) {
    const normalized = normalizeIdentifier(text.slice(2));
    if (!normalized.ok) return normalized;
    const domain = parseDomain(normalized.value);
    return domain.ok ? { ok: true, value: { kind: "domain", domain: domain.value } } : domain;
  }
  if (text.includes("*")) return { ok: false, problem: 'uses * other than as "*@domain"' };
  const email = parseEmail(text);
  return email.ok ? { ok: true, value: { kind: "email", address: email.value.address } } : email;
}

/** The text form a parsed pattern is kept in (the normalised entry). */
const patternText = (p: RolePattern) => (p.kind === "email" ? p.address : p.kind === "domain" ? `*@${p.domain}` : `${GROUP_PREFIX}${p.name}`);

const rolePattern = z.string().transform((raw, ctx) => {
  const parsed = parseRolePattern(raw);
  if (parsed.ok) return patternText(parsed.value);
  ctx.issues.push({ code: "custom", input: raw, message: `${JSON.stringify(raw)} is not an email, "*@domain" or "group:<name>" (it ${parsed.problem})` });
  return z.NEVER;
});

/** Schema of the parsed ROLES JSON, e.g. `{"operator":["alice@example.com"],"viewer":["*@example.com"]}`. Entries come out normalised. */
export const RoleRulesSchema = z
  .strictObject({
    operator: z.array(rolePattern).default([]),
    viewer: z.array(rolePattern).default([]),
  })
  .refine((r) => r.operator.length + r.viewer.length > 0, { error: "grants no one a role" });

export type RoleRules = z.infer<typeof RoleRulesSchema>;

/** The identity facts roles are matched against: the token's email and its Access groups, as received. */
export type RoleSubject = { email: string; groups?: readonly string[] };

/** A subject parsed once: the email (or nothing, when it is not a single plain address) and normalised group names. */
type ParsedSubject = { email?: string; domain?: string; groups: Set<string> };

function parseSubject(subject: RoleSubject): ParsedSubject {
  const email = parseEmail(subject.email);
  const groups = new Set<string>();
  for (const g of subject.groups ?? []) {
    const name = normalizeGroupName(g);
    if (name.ok) groups.add(name.value); // a lookalike group name matches nothing
  }
  return email.ok ? { email: email.value.address, domain: email.value.domain, groups } : { groups };
}

function matches(pattern: RolePattern, s: ParsedSubject): boolean {
  switch (pattern.kind) {
    case "group":
      return s.groups.has(pattern.name);
    case "domain":
      return s.domain !== undefined && s.domain === pattern.domain;
    case "email":
      return s.email !== undefined && s.email === pattern.address;
  }
}

/**
 * Whether one ROLES entry matches the subject. Both sides are normalised and compared whole: an email
 * that is not exactly one plain address (two `@`, lookalike characters) matches no email or domain entry.
 */
export function matchesRolePattern(pattern: string, subject: RoleSubject): boolean {
  const parsed = parseRolePattern(pattern);
  return parsed.ok && matches(parsed.value, parseSubject(subject));
}

/** The strongest role the rules grant the subject, or `null` when none does. Operator implies viewer. */
export function roleFor(rules: RoleRules, subject: RoleSubject): Role | null {
  const s = parseSubject(subject);
  const any = (patterns: string[]) =>
    patterns.some((p) => {
      const parsed = parseRolePattern(p);
      return parsed.ok && matches(parsed.value, s);
    });
  if (any(rules.operator)) return "operator";
  if (any(rules.viewer)) return "viewer";
  return null;
}

/** Whether a user holding `actual` may do what needs `required`. */
export function hasRole(actual: Role, required: Role): boolean {
  return actual === "operator" || required === "viewer";
}
