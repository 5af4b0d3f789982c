/**
 * Normalised identities for role matching: emails from Access tokens and ROLES, and group names.
 *
 * Normalisation is trim, Unicode NFKC, then lower case, so the same address written with different
 * Unicode forms or case compares equal. Folding is also a way in: the Kelvin sign (U+212A) becomes "k",
 * a fullwidth "＠" becomes "@", "İ" lower-cases to "i" plus a dot. So a non-ASCII character that
 * normalisation turns into ASCII is refused as a lookalike instead of being folded: `*@acme.com` then
 * only ever matches an address whose domain is, code point for code point, `acme.com`.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** A normalised email split at its one `@`. */
export type Email = { address: string; local: string; domain: string };

const INVISIBLE = /[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const DOMAIN = /^[\p{L}\p{M}\p{N}-]+(\.[\p{L}\p{M}\p{N}-]+)*$/u;
const ASCII = /\p{ASCII}/u;

const codePoint = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

/** The first non-ASCII character of `text` that NFKC or lower-casing turns into ASCII, if any. */
function lookalike(text: string): string | undefined {
  for (const ch of text) {
    if (ch.codePointAt(0)! > 0x7f && ASCII.test(ch.normalize("NFKC").toLowerCase())) return ch;
  }
  return undefined;
}

/** Trim, refuse invisible characters and ASCII lookalikes, then NFKC and lower-case. */
export function normalizeIdentifier(raw: string): Parsed<string> {
  const text = raw.trim();
  if (!text) return { ok: false, problem: "is empty" };
  if (INVISIBLE.test(text)) return { ok: false, problem: "contains spaces or invisible characters" };
  const fake = lookalike(text);
  if (fake) return { ok: false, problem: `contains ${codePoint(fake)}, a character that imitates plain ASCII` };
  return { ok: true, value: text.normalize("NFKC").toLowerCase() };
}

/** Checks a normalised domain: letters, digits and hyphens in dot-separated labels. */
export function parseDomain(normalized: string): Parsed<string> {
  return DOMAIN.test(normalized) ? { ok: true, value: normalized } : { ok: false, problem: "does not have a valid domain after the @" };
}

/**
 * Parses an email: exactly one `@`, a non-empty local part and a valid domain, normalised (see above).
 * `a@evil.com@acme.com` is refused rather than read as being at acme.com.
 */
export function parseEmail(raw: string): Parsed<Email> {
  const normalized = normalizeIdentifier(raw);
  if (!normalized.ok) return normalized;
  const address = normalized.value;
  const parts = address.split("@");
  if (parts.length !== 2) return { ok: false, problem: parts.length < 2 ? "has no @" : "has more than one @" };
  const [local, domain] = parts as [string, string];
  if (!local) return { ok: false, problem: "has nothing before the @" };
  const checked = parseDomain(domain);
  if (!checked.ok) return checked;
  return { ok: true, value: { address, local, domain } };
}

/** Normalises an Access group name or id; names may contain single spaces ("On-call SRE"), the rest as above. */
export function normalizeGroupName(raw: string): Parsed<string> {
  const words: string[] = [];
  for (const word of raw.trim().split(/ +/)) {
    const normalized = normalizeIdentifier(word);
    if (!normalized.ok) return normalized;
    words.push(normalized.value);
  }
  return { ok: true, value: words.join(" ") };
}
