import { z } from "zod";
import { BadRequest } from "./errors";

/**
 * Zod building blocks for list filters. Filters usually come from a URL, so
 * every field accepts strings, treats "" as "not set", and fails with a
 * message that names the field and what it accepts.
 */

const unset = (v: unknown) => (v === "" || v === null ? undefined : v);

/** An optional exact-match text filter. */
export function text(name: string) {
  return z.preprocess(
    unset,
    z
      .string({ error: `${name} must be text` })
      .max(500, { error: `${name} is longer than 500 characters` })
      .optional(),
  );
}

/** An optional filter that must be one of `values`. */
export function oneOf<const T extends readonly [string, ...string[]]>(name: string, values: T) {
  return z.preprocess(
    unset,
    z
      .enum(values, { error: (iss) => `${name} must be one of ${values.join(", ")} (got ${JSON.stringify(iss.input)})` })
      .optional(),
  );
}

/** An optional true/false filter ("true"/"false"/"1"/"0" from a URL too). */
export function flag(name: string) {
  return z.preprocess(
    unset,
    z
      .unknown()
      .transform((v, ctx) => {
        if (v === undefined || typeof v === "boolean") return v;
        if (v === "true" || v === "1") return true;
        if (v === "false" || v === "0") return false;
        ctx.addIssue({ code: "custom", message: `${name} must be true or false (got ${JSON.stringify(v)})` });
        return z.NEVER;
      }),
  );
}

/** An optional instant: epoch milliseconds (number or digits) or an ISO date. */
export function instant(name: string) {
  return z.preprocess(
    unset,
    z
      .unknown()
      .transform((v, ctx) => {
        if (v === undefined) return undefined;
        const n = typeof v === "number" ? v : typeof v === "string" ? (/^\d+$/.test(v.trim()) ? Number(v) : Date.parse(v)) : Number.NaN;
        if (Number.isFinite(n) && n >= 0 && Number.isInteger(n)) return n;
        ctx.addIssue({ code: "custom", message: `${name} must be epoch milliseconds or an ISO date such as 2026-11-01T12:00:00Z (got ${JSON.stringify(v)})` });
        return z.NEVER;
      }),
  ) as z.ZodType<number | undefined, unknown>;
}

/** since ≤ until, when both are set. */
export function sinceBeforeUntil<T extends { since?: number; until?: number }>(f: T, ctx: z.RefinementCtx): void {
  if (f.since !== undefined && f.until !== undefined && f.since > f.until) ctx.addIssue({ code: "custom", message: "since must not be later than until" });
}

/** Parses filters with `schema`; any problem is a BadRequest naming every bad field. */
export function parseFilters<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  throw new BadRequest(r.error.issues.map((i) => i.message).join("; "));
}
