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

/**
 * A list given as comma-separated text (`a,b`) or as an array, validated by `list`: blanks are dropped, and an
 * absent or empty value is undefined, so `list` decides whether the filter is required.
 */
export function commaList<S extends z.ZodType>(list: S) {
  return z.preprocess(
    (v) =>
      v === undefined || v === null || v === ""
        ? undefined
        : typeof v === "string"
          ? v
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean)
          : v,
    list,
  );
}

/** An optional filter that must be one of `values`. */
export function oneOf<const T extends readonly [string, ...string[]]>(name: string, values: T) {
  return z.preprocess(unset, z.enum(values, { error: (iss) => `${name} must be one of ${values.join(", ")} (got ${JSON.stringify(iss.input)})` }).optional());
}

/** An optional true/false filter ("true"/"false"/"1"/"0" from a URL too). */
export function flag(name: string) {
  return z.preprocess(
    unset,
    z.unknown().transform((v, ctx) => {
      if (v === undefined || typeof v === "boolean") return v;
      if (v === "true" || v === "1") return true;
      if (v === "false" || v === "0") return false;
      ctx.addIssue({ code: "custom", message: `${name} must be true or false (got ${JSON.stringify(v)})` });
      return z.NEVER;
    }),
  );
}

/** The relative times list pages offer as presets (`since=1h`): any `<n>m`, `<n>h`, `<n>d` or `<n>w` is accepted. */
export const TIME_PRESETS = ["15m", "1h", "6h", "24h", "7d"] as const;

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
/** The longest relative time accepted (a year): anything longer is a typo, not a window. */
const MAX_RELATIVE_MS = 366 * UNIT_MS.d;

/**
 * A relative time ("15m", "1h", "24h", "7d", "2w") as milliseconds before now, or null when `s` is not one.
 * Kept relative in URLs, so a shared link means "the last hour" whenever it is opened.
 */
export function relativeMs(s: string): number | null {
  const m = /^(\d{1,6})\s*([mhdw])$/.exec(s.trim().toLowerCase());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms > 0 && ms <= MAX_RELATIVE_MS ? ms : null;
}

/**
 * Reads an instant from input: a relative time before `now` (see relativeMs), epoch milliseconds (a number or
 * digits) or an ISO date. Null when it is none of these.
 */
export function resolveInstant(v: unknown, now = Date.now()): number | null {
  if (typeof v === "string") {
    const rel = relativeMs(v);
    if (rel !== null) return now - rel;
  }
  const n = typeof v === "number" ? v : typeof v === "string" ? (/^\d+$/.test(v.trim()) ? Number(v) : Date.parse(v)) : Number.NaN;
  return Number.isFinite(n) && n >= 0 && Number.isInteger(n) ? n : null;
}

/**
 * An optional instant: a relative time resolved against the clock when parsed (15m, 1h, 6h, 24h, 7d…),
 * epoch milliseconds (number or digits) or an ISO date.
 */
export function instant(name: string) {
  return z.preprocess(
    unset,
    z.unknown().transform((v, ctx) => {
      if (v === undefined) return undefined;
      const t = resolveInstant(v);
      if (t !== null) return t;
      ctx.addIssue({
        code: "custom",
        message: `${name} must be a relative time such as ${TIME_PRESETS.join(", ")}, epoch milliseconds, or an ISO date such as 2026-11-01T12:00:00Z (got ${JSON.stringify(v)})`,
      });
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
