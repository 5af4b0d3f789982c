import { z } from "zod";
import type { Role } from "./types";

/**
 * One entry of a role list in ROLES:
 * - `alice@example.com`  exactly that email (case-insensitive)
 * - `*@sre.example.com`  any email at exactly that domain (not its subdomains)
 * - `group:<name or id>`  any member of that Access group (needs a `groups` claim in the token)
 */
const rolePattern = z
  .string()
  .trim()
  .toLowerCase()
  .refine((p) => /^(\*|[^\s@*]+)@[^\s@*]+$|^group:\S.*$/.test(p), {
    error: (issue) => `${JSON.stringify(issue.input)} is not an email, "*@domain" or "group:<name>"`,
  });

/** Schema of the parsed ROLES JSON, e.g. `{"operator":["alice@example.com"],"viewer":["*@example.com"]}`. */
export const RoleRulesSchema = z
  .strictObject({
    operator: z.array(rolePattern).default([]),
    viewer: z.array(rolePattern).default([]),
  })
  .refine((r) => r.operator.length + r.viewer.length > 0, { error: "grants no one a role" });

export type RoleRules = z.infer<typeof RoleRulesSchema>;

/** The identity facts roles are matched against. */
export type RoleSubject = { email: string; groups?: readonly string[] };

/** Whether one ROLES entry matches the subject. */
export function matchesRolePattern(pattern: string, subject: RoleSubject): boolean {
  const email = subject.email.toLowerCase();
  if (pattern.startsWith("group:")) {
    const group = pattern.slice("group:".length);
    return (subject.groups ?? []).some((g) => g.toLowerCase() === group);
  }
  if (pattern.startsWith("*@")) return email.slice(email.lastIndexOf("@")) === pattern.slice(1);
  return email === pattern;
}

/** The strongest role the rules grant the subject, or `null` when none does. Operator implies viewer. */
export function roleFor(rules: RoleRules, subject: RoleSubject): Role | null {
  if (rules.operator.some((p) => matchesRolePattern(p, subject))) return "operator";
  if (rules.viewer.some((p) => matchesRolePattern(p, subject))) return "viewer";
  return null;
}

/** Whether a user holding `actual` may do what needs `required`. */
export function hasRole(actual: Role, required: Role): boolean {
  return actual === "operator" || required === "viewer";
}
