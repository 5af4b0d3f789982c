import { utf8Length } from "./pack.js";
import type { Preview } from "./payloads.js";
import { labelForKey, marker, maskBuiltIn, SECRET_KEY } from "./secret-patterns.js";

/** Default number of characters kept in a preview. */
export const PREVIEW_CHARS = 240;
/** Cap on any single string field in a payload. */
export const FIELD_CHARS = 2000;
/**
 * How far past the kept part a preview is masked. Masking the whole of a
 * multi-megabyte snapshot would cost the agent time for characters nobody sees;
 * a secret that starts in the kept part is masked as long as it ends within
 * this margin (or is a PEM block or a quoted value, which are masked to the end).
 */
export const MASK_MARGIN_CHARS = 64 * 1024;

/** UTF-8 byte length of a string (counted without encoding it: pack.ts utf8Length). */
export const byteLength = utf8Length;

/** Replaces credential-looking substrings of a text with `[masked: …]` markers. */
export type Masker = (text: string) => string;

/**
 * Extra things to mask, on top of the built-in credential shapes: a RegExp
 * (flags kept, always applied globally) or a string, masked wherever it occurs
 * literally. Each match becomes `[masked: custom]`.
 */
export type RedactPatterns = ReadonlyArray<RegExp | string>;

const CUSTOM = marker("custom");

function toGlobal(p: RegExp | string): RegExp {
  if (typeof p === "string") return new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "g");
  return new RegExp(p.source, `${p.flags.replace(/[gy]/g, "")}g`);
}

/**
 * A masker with the built-in credential shapes plus `extra` patterns. Keep extra
 * RegExps linear (no nested quantifiers over overlapping classes): they run on
 * every preview, and text reaching them may be shaped by an attacker.
 */
export function createMasker(extra: RedactPatterns = []): Masker {
  const custom = extra.filter((p) => (typeof p === "string" ? p.length > 0 : p instanceof RegExp)).map(toGlobal);
  if (!custom.length) return maskBuiltIn;
  return (text) => {
    let out = maskBuiltIn(text);
    // An empty match would put a marker between every character; only real matches are masked.
    for (const re of custom) out = out.replace(re, (m) => (m.length ? CUSTOM : m));
    return out;
  };
}

/** Masks the built-in credential shapes (API keys, tokens, JWTs, private keys, URL and key=value credentials). */
export const maskSecrets: Masker = maskBuiltIn;

/**
 * Parses extra patterns from an env var (`TELEMETRY_REDACT_PATTERNS`): a JSON
 * array of RegExp sources, each either bare (`"acct_[0-9]{8}"`) or in literal
 * form with flags (`"/internal-[a-z]+/i"`); a value that is not a JSON array is
 * one RegExp source. Entries that do not compile are skipped and reported to
 * `onInvalid`, so a typo never breaks the agent.
 */
export function parseRedactPatterns(raw: unknown, onInvalid?: (entry: string, error: string) => void): RegExp[] {
  if (typeof raw !== "string" || !raw.trim()) return [];
  let entries: unknown[] = [raw.trim()];
  if (raw.trim().startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(raw);
      entries = Array.isArray(parsed) ? parsed : [raw.trim()];
    } catch (e) {
      onInvalid?.(raw, `not a JSON array: ${e instanceof Error ? e.message : String(e)}`);
      return [];
    }
  }
  const out: RegExp[] = [];
  for (const entry of entries) {
    if (typeof entry !== "string" || !entry) continue;
    const literal = /^\/(.+)\/([a-z]*)$/s.exec(entry);
    try {
      out.push(literal ? new RegExp(literal[1]!, literal[2]) : new RegExp(entry));
    } catch (e) {
      onInvalid?.(entry, e instanceof Error ? e.message : String(e));
    }
  }
  return out;
}

/** Serialises any value for preview purposes without throwing (cycles, BigInt). */
export function safeStringify(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    // The fast path: plain data. Only cycles and BigInts need the replacer below.
    return JSON.stringify(value) ?? "";
  } catch {
    /* fall through */
  }
  try {
    const seen = new WeakSet<object>();
    return (
      JSON.stringify(value, (_k, v) => {
        if (typeof v === "bigint") return v.toString();
        if (typeof v === "object" && v !== null) {
          if (seen.has(v)) return "[circular]";
          seen.add(v);
        }
        return v;
      }) ?? ""
    );
  } catch {
    return String(value);
  }
}

/** Cuts masked text to `chars`, never through the middle of a marker (half a marker reads like data). */
function cut(masked: string, chars: number): string {
  const head = masked.slice(0, chars);
  const open = head.lastIndexOf("[masked: ");
  return open >= 0 && head.indexOf("]", open) < 0 && masked.indexOf("]", open) >= chars ? head.slice(0, open) : head;
}

/**
 * A masked, truncated preview of text or JSON, with the original size. Masks
 * first, then truncates, so a secret at the cut keeps none of its characters.
 */
export function toPreview(value: unknown, chars = PREVIEW_CHARS, mask: Masker = maskSecrets): Preview {
  const text = safeStringify(value);
  const bytes = byteLength(text);
  const window = chars + MASK_MARGIN_CHARS;
  const masked = mask(text.length > window ? text.slice(0, window) : text);
  const truncated = text.length > window || masked.length > chars;
  return { preview: truncated ? cut(masked, chars) : masked, bytes, truncated };
}

/** Masks, then caps, a free-text field (error messages and the like), saying how much was cut. */
export function capField(s: string, chars = FIELD_CHARS, mask: Masker = maskSecrets): string {
  const window = chars + MASK_MARGIN_CHARS;
  const masked = mask(s.length > window ? s.slice(0, window) : s);
  if (masked.length <= chars && s.length <= window) return masked;
  const kept = cut(masked, chars);
  const dropped = masked.length - kept.length + Math.max(0, s.length - window);
  return `${kept}… [truncated ${dropped} chars]`;
}

// Pure: dropped from bundles that never call maskJson (a user's agent Worker).
const SECRET_KEY_NAME = /* @__PURE__ */ new RegExp(`${SECRET_KEY.source}$|^authorization$|^cookie$`, "i");
const MAX_DEPTH = 64;

/**
 * Masks a JSON value (a parsed snapshot): every string with `mask`, and the
 * whole string or number under a key that names a secret (`password`,
 * `apiKey`, `authorization`, …). Returns a new value; the input is untouched.
 */
export function maskJson(value: unknown, mask: Masker = maskSecrets): unknown {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return mask(v);
    if (v === null || typeof v !== "object") return v;
    // Deeper than any real snapshot: mask it as text rather than recurse without bound.
    if (depth > MAX_DEPTH) return mask(safeStringify(v));
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const label = SECRET_KEY_NAME.test(k) ? labelForKey(k) : null;
      // A number under a *token key is a count (maxToken: 512), not a credential.
      const secret = label !== null && (typeof x === "string" ? !x.startsWith("[masked: ") : typeof x === "number" && label !== "token");
      // defineProperty: a "__proto__" key in parsed JSON stays data, never a prototype.
      Object.defineProperty(out, mask(k), { value: secret ? marker(label) : walk(x, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return walk(value, 0);
}
