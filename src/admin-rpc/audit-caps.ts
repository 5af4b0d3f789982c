import type { AuditRecord } from "./audit-record.js";

/**
 * Length caps on audit fields. Refused and invalid attempts are audited with
 * what the caller sent, so without caps one request could write a row of any
 * size (and a 20,000-character agent name was stored whole).
 */
export const AUDIT_LIMITS = {
  actor: 320,
  role: 32,
  targetClass: 200,
  targetName: 500,
  reason: 2000,
  error: 2000,
  /** Characters of before/after once serialised as JSON. */
  json: 8000,
} as const;

/** Cuts text to `max` characters with an explicit marker saying how much was cut. */
export function capText(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}… [cut: ${s.length - max} more chars]`;
}

/** A before/after value whose JSON exceeds `max` becomes an explicit stand-in with the start of that JSON. */
export function capJson(v: unknown, max: number): unknown {
  if (v === null || v === undefined) return null;
  let text: string;
  try {
    text = JSON.stringify(v) ?? "null";
  } catch (e) {
    return { cut: true, error: `not serialisable: ${e instanceof Error ? e.message : String(e)}`.slice(0, 200) };
  }
  return text.length <= max ? v : { cut: true, chars: text.length, preview: capText(text, max) };
}

/** Applies every cap to one audit record. */
export function capAuditRecord(e: AuditRecord): AuditRecord {
  return {
    ...e,
    actor: capText(e.actor, AUDIT_LIMITS.actor),
    role: capText(e.role, AUDIT_LIMITS.role),
    targetClass: capText(e.targetClass, AUDIT_LIMITS.targetClass),
    targetName: capText(e.targetName, AUDIT_LIMITS.targetName),
    reason: capText(e.reason, AUDIT_LIMITS.reason),
    error: e.error === null ? null : capText(e.error, AUDIT_LIMITS.error),
    before: capJson(e.before, AUDIT_LIMITS.json),
    after: capJson(e.after, AUDIT_LIMITS.json),
  };
}
