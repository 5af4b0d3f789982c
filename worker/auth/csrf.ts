import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { RefusalCode } from "../http/refusal";
import { base64UrlToBytes, bytesToBase64Url } from "./base64url";
import { respondProblem } from "./problem";
import type { AuthEnv } from "./types";

/** Header htmx (via `hx-headers`) and scripts send the token in. */
export const CSRF_HEADER = "X-CSRF-Token";
/** Form field plain HTML forms send the token in. */
export const CSRF_FIELD = "_csrf";
/** Tokens are bound to a time window of this length; the current and the previous window are accepted (4–8 h). */
export const CSRF_WINDOW_MS = 4 * 60 * 60_000;

const HMAC = { name: "HMAC", hash: "SHA-256" } as const;
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const encoder = new TextEncoder();
const secretKeys = new Map<string, CryptoKey>();
let isolateKey: CryptoKey | undefined;

/**
 * The HMAC key for CSRF tokens: derived from CSRF_SECRET, or, without a secret (only allowed in
 * AUTH_MODE=dev, see config.ts), a random key generated once per isolate. Such tokens stop verifying
 * when the isolate restarts (e.g. `wrangler dev` reloads) and are unknown to other isolates, which is
 * acceptable for local development and the reason production requires CSRF_SECRET.
 */
export async function csrfKey(secret?: string): Promise<CryptoKey> {
  if (secret === undefined) {
    if (isolateKey) return isolateKey;
    const generated = await crypto.subtle.generateKey(HMAC, false, ["sign", "verify"]);
    isolateKey ??= generated as CryptoKey;
    return isolateKey;
  }
  const cached = secretKeys.get(secret);
  if (cached) return cached;
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), HMAC, false, ["sign", "verify"]);
  secretKeys.set(secret, key);
  return key;
}

const message = (email: string, window: number) => encoder.encode(JSON.stringify(["csrf/v1", email.toLowerCase(), window]));

/** Issues a token bound to `email` and the time window containing `now`. */
export async function issueCsrfToken(key: CryptoKey, email: string, now = Date.now()): Promise<string> {
  const window = Math.floor(now / CSRF_WINDOW_MS);
  const mac = await crypto.subtle.sign("HMAC", key, message(email, window));
  return `${window.toString(36)}.${bytesToBase64Url(mac)}`;
}

/** Whether `token` was issued by `key` for `email` in the current or the previous window (constant-time MAC check). */
export async function verifyCsrfToken(key: CryptoKey, token: string, email: string, now = Date.now()): Promise<boolean> {
  const match = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return false;
  const window = parseInt(match[1]!, 36);
  const current = Math.floor(now / CSRF_WINDOW_MS);
  if (window !== current && window !== current - 1) return false;
  const mac = base64UrlToBytes(match[2]!);
  return !!mac && (await crypto.subtle.verify("HMAC", key, mac, message(email, window)));
}

/** The current user's CSRF token, to embed as `<input type="hidden" name="_csrf">`. Needs `auth()` before. */
export function csrfToken(c: Context<AuthEnv>): string {
  const token = c.get("csrfToken");
  if (!token) throw new Error("csrfToken(c) needs the auth() middleware to run first");
  return token;
}

/** `hx-headers` value carrying the token, e.g. `<body hx-headers={csrfHxHeaders(c)}>`. */
export function csrfHxHeaders(c: Context<AuthEnv>): string {
  return JSON.stringify({ [CSRF_HEADER]: csrfToken(c) });
}

/** Why the request's origin is not acceptable, or `undefined` when it is this site. */
function originProblem(c: Context): string | undefined {
  const expected = new URL(c.req.url).origin;
  const origin = c.req.header("Origin");
  if (origin !== undefined) return origin === expected ? undefined : `it was sent from ${origin}, not from ${expected}`;
  if (c.req.header("Sec-Fetch-Site") === "same-origin") return undefined;
  return "the browser did not say which site sent it (no Origin header)";
}

/** The submitted token: the header, else the `_csrf` form field. The body stays readable downstream (Hono caches it). */
async function submittedToken(c: Context): Promise<string | undefined> {
  const header = c.req.header(CSRF_HEADER)?.trim();
  if (header) return header;
  const type = (c.req.header("Content-Type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) return undefined;
  try {
    const field = (await c.req.parseBody())[CSRF_FIELD];
    return typeof field === "string" && field ? field.trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CSRF protection for POST, PUT, PATCH and DELETE: the request must come from this origin (`Origin`, or
 * `Sec-Fetch-Site: same-origin` when there is no Origin) and carry a valid token for the signed-in user
 * (`X-CSRF-Token` header or `_csrf` form field). Mount after `auth()`. Refusals are 403 with the reason.
 */
export function csrf(): MiddlewareHandler<AuthEnv> {
  return createMiddleware<AuthEnv>(async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const user = c.get("user");
    const key = c.get("csrfKey");
    if (!user || !key) throw new Error("csrf() needs the auth() middleware to run first");

    const refuse = (code: RefusalCode, message: string) => respondProblem(c, { status: 403, code, title: "Request refused", message, email: user.email });

    const badOrigin = originProblem(c);
    if (badOrigin) return refuse("csrf_origin", `This change was refused because ${badOrigin}. Changes are only accepted from the console's own pages.`);

    const token = await submittedToken(c);
    if (!token)
      return refuse(
        "csrf_missing",
        "This change was refused because it carried no security token (X-CSRF-Token header or _csrf form field). Reload the page and try again.",
      );
    if (!(await verifyCsrfToken(key, token, user.email)))
      return refuse(
        "csrf_invalid",
        "This change was refused because its security token is not valid for you: it has expired or was issued to another user. Reload the page and try again.",
      );

    return next();
  });
}
