import type { Context } from "hono";
import { getCookie } from "hono/cookie";

/** Header Cloudflare Access adds to every request it lets through to the origin. */
export const ACCESS_JWT_HEADER = "Cf-Access-Jwt-Assertion";
/** Cookie Access sets in the browser after sign-in. */
export const ACCESS_JWT_COOKIE = "CF_Authorization";

/** The Access JWT of the request: the `Cf-Access-Jwt-Assertion` header, else the `CF_Authorization` cookie. */
export function readAccessToken(c: Context): string | undefined {
  const header = c.req.header(ACCESS_JWT_HEADER)?.trim();
  if (header) return header;
  const cookie = getCookie(c, ACCESS_JWT_COOKIE)?.trim();
  return cookie || undefined;
}
