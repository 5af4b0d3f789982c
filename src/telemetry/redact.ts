import type { Preview } from "./payloads.js";

/** Default number of characters kept in a preview. */
export const PREVIEW_CHARS = 240;
/** Cap on any single string field in a payload. */
export const FIELD_CHARS = 2000;

const encoder = new TextEncoder();

/** UTF-8 byte length of a string. */
export function byteLength(s: string): number {
  return encoder.encode(s).byteLength;
}

/**
 * Patterns that look like credentials. Masked before anything leaves the agent,
 * because partial model output often echoes tool inputs.
 */
const SECRET_PATTERNS: RegExp[] = [
  /\b(sk|pk|rk)[-_][A-Za-z0-9_-]{16,}\b/g, // provider API keys
  /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/gi, // bearer tokens
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, // JWTs
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
  /\b[0-9a-f]{40,}\b/gi, // long hex secrets
];

/** Replaces credential-looking substrings with a marker. */
export function maskSecrets(s: string): string {
  let out = s;
  for (const re of SECRET_PATTERNS) out = out.replace(re, "[redacted]");
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

/** A masked, truncated preview of text or JSON, with the original size. */
export function toPreview(value: unknown, chars = PREVIEW_CHARS): Preview {
  const text = safeStringify(value);
  const bytes = byteLength(text);
  const truncated = text.length > chars;
  return { preview: maskSecrets(truncated ? text.slice(0, chars) : text), bytes, truncated };
}

/** Caps and masks a free-text field (error messages and the like). */
export function capField(s: string, chars = FIELD_CHARS): string {
  const masked = maskSecrets(s);
  return masked.length > chars ? `${masked.slice(0, chars)}… [truncated ${masked.length - chars} chars]` : masked;
}
