/**
 * The text a dead letter keeps of a message body, whatever the body is. JSON
 * text is kept as sent; bytes (ArrayBuffer, typed arrays) as base64 with their
 * size; structured-clone values JSON cannot hold (Map, Set, BigInt, nested
 * bytes) in a tagged form, where plain JSON.stringify would have written `{}`.
 */

/** Bodies are kept whole up to this many characters; D1 rows may be 2 MB, Queue messages are at most 128 KB anyway. */
export const MAX_BODY_CHARS = 256_000;
/** Bytes of a binary body kept (as base64): every byte of any Queue message. */
export const MAX_BINARY_BYTES = 128 * 1024;

/** 120000 → "120,000". */
export const thousands = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** Why a binary body is refused. */
export function binaryReason(body: ArrayBuffer | ArrayBufferView): string {
  return `binary body (${body.constructor?.name ?? "ArrayBuffer"}, ${thousands(body.byteLength)} bytes): the console accepts events as JSON text or JSON values; the bytes are kept here as base64`;
}

/** True for an ArrayBuffer or a view on one (typed arrays, DataView). */
export function isBinary(v: unknown): v is ArrayBuffer | ArrayBufferView {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

function bytesOf(v: ArrayBuffer | ArrayBufferView): Uint8Array {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

function base64(bytes: Uint8Array): string {
  let bin = "";
  // Chunked: String.fromCharCode(...all) would exceed the argument limit on large bodies.
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** A binary value as JSON-able data: its type, size, and bytes as base64 (capped, saying so). */
export function binaryRecord(v: ArrayBuffer | ArrayBufferView): { binary: string; bytes: number; base64: string; truncated: boolean } {
  const bytes = bytesOf(v);
  return {
    binary: v.constructor?.name ?? "ArrayBuffer",
    bytes: bytes.byteLength,
    base64: base64(bytes.subarray(0, MAX_BINARY_BYTES)),
    truncated: bytes.byteLength > MAX_BINARY_BYTES,
  };
}

/** Values JSON would lose, tagged so a person reading the dead letter sees what was sent. */
function tagged(_key: string, v: unknown): unknown {
  if (typeof v === "bigint") return { $bigint: v.toString() };
  if (isBinary(v)) return binaryRecord(v);
  if (v instanceof Map) return { $map: [...v.entries()] };
  if (v instanceof Set) return { $set: [...v.values()] };
  if (v instanceof RegExp) return { $regexp: String(v) };
  if (v instanceof Error) return { $error: `${v.name}: ${v.message}` };
  if (v === undefined) return { $undefined: true };
  if (typeof v === "number" && !Number.isFinite(v)) return { $number: String(v) };
  return v;
}

/**
 * Best-effort text of a message body (or one item of a packed body) for the
 * dead-letter table. `whole` is the text of the message an item came in, kept
 * instead when the item cannot be serialised (too deep for JSON.stringify).
 * Never throws.
 */
export function bodyText(body: unknown, whole?: string): string {
  let s: string;
  if (typeof body === "string") s = body;
  else {
    try {
      s = JSON.stringify(body, tagged) ?? String(body);
    } catch (e) {
      // A cycle or a structure too deep to serialise: say so rather than lose the letter.
      const why = `[not serialisable: ${e instanceof Error ? e.message : String(e)}]`;
      s = whole === undefined ? `${why} ${safeString(body)}` : `${why} the whole message it came in: ${whole}`;
    }
  }
  return s.length > MAX_BODY_CHARS ? `${s.slice(0, MAX_BODY_CHARS)}… [truncated ${s.length - MAX_BODY_CHARS} chars]` : s;
}

function safeString(v: unknown): string {
  try {
    return String(v).slice(0, 200);
  } catch {
    return "";
  }
}

/** The `type` field of a body, if it has one, so dead letters can be grouped. */
export function bodyType(body: unknown): string | null {
  const t = body && typeof body === "object" && !isBinary(body) ? (body as { type?: unknown }).type : undefined;
  return typeof t === "string" ? t.slice(0, 200) : null;
}
