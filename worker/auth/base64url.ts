const URL_SAFE = /^[A-Za-z0-9_-]*$/;

/** Decodes unpadded base64url (RFC 7515 §2) to bytes; `undefined` when the text is not base64url. */
export function base64UrlToBytes(text: string): Uint8Array | undefined {
  if (!URL_SAFE.test(text) || text.length % 4 === 1) return undefined;
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  let binary: string;
  try {
    binary = atob(b64);
  } catch {
    return undefined;
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Encodes bytes as unpadded base64url. */
export function bytesToBase64Url(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (let i = 0; i < view.length; i++) binary += String.fromCharCode(view[i]!);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
