/**
 * Optional signed events: HMAC-SHA256 (WebCrypto) with a secret shared by the
 * agents' Worker and the console (`TELEMETRY_SIGNING_SECRET` on both).
 *
 * What is signed: the event's JSON text as `JSON.stringify` writes it, without
 * the signature. The sender signs the exact text it ships (the stored text with
 * its outbox number added as `"seq"`, seq.ts, so the number is covered too), and adds
 * the signature as a last field, `"sig":"hmac-sha256=<base64url>"`. The
 * verifier removes `sig` from the parsed event and serialises the rest with
 * `JSON.stringify`, which gives back the signed text byte for byte (parse then
 * stringify is a fixed point of stringify's output). So what is verified is
 * exactly what ingest goes on to interpret.
 *
 * It proves an event came from a holder of the secret, not which agent sent
 * it: agents sharing a secret can still claim each other's names (the console
 * keys its rows by agent, so that cannot change another agent's rows).
 */

/** The wire field that carries the signature. */
export const SIGNATURE_FIELD = "sig";
const PREFIX = "hmac-sha256=";

const encoder = new TextEncoder();

/** The HMAC key for a shared secret. */
export function signingKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

function toBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]{43}$/.test(s)) return null; // 32 bytes
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/**
 * Signs one event's JSON text (an object as JSON.stringify wrote it) and
 * returns it with `"sig"` added as its last field.
 */
export async function signEventText(text: string, key: CryptoKey): Promise<string> {
  if (!text.startsWith("{") || !text.endsWith("}") || text === "{}") return text;
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
  return `${text.slice(0, -1)},"${SIGNATURE_FIELD}":"${PREFIX}${toBase64Url(mac)}"}`;
}

/** What a signature check found. */
export type SignatureVerdict = "valid" | "missing" | "invalid";

/** Checks the `sig` of a parsed event against the rest of it. Never throws. */
export async function verifyEventSignature(event: Record<string, unknown>, key: CryptoKey): Promise<SignatureVerdict> {
  const sig = event[SIGNATURE_FIELD];
  if (sig === undefined) return "missing";
  if (typeof sig !== "string" || !sig.startsWith(PREFIX)) return "invalid";
  const mac = fromBase64Url(sig.slice(PREFIX.length));
  if (!mac) return "invalid";
  const { [SIGNATURE_FIELD]: _sig, ...rest } = event;
  try {
    return (await crypto.subtle.verify("HMAC", key, mac, encoder.encode(JSON.stringify(rest)))) ? "valid" : "invalid";
  } catch {
    return "invalid";
  }
}
