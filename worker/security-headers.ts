import type { MiddlewareHandler } from "hono";

/**
 * The Content-Security-Policy of every console response. Scripts and styles come only from the
 * console's own static files (htmx, chart.js, console.js, console.css): no inline script, no inline
 * event handler, no eval, no inline <style>. chart.js sizes its canvas through element.style (CSSOM),
 * which style-src does not govern. Nothing may frame the console (its action forms must not be
 * clickjacked), forms post only to it, and <base> cannot redirect relative links.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * Powerful browser features the console never uses, denied to it and to anything it could embed: a script that
 * got in (or a compromised dependency) still cannot reach the camera, the microphone, the location, payments or
 * devices. Only features Chromium recognises are listed, so the header logs no "unrecognised feature" errors:
 * Chromium 156 does not know `bluetooth` or `web-share` (test/e2e/page-defects.e2e.test.ts listens for the warning).
 */
export const PERMISSIONS_POLICY = [
  "accelerometer",
  "autoplay",
  "camera",
  "display-capture",
  "encrypted-media",
  "fullscreen",
  "gamepad",
  "geolocation",
  "gyroscope",
  "hid",
  "idle-detection",
  "local-fonts",
  "magnetometer",
  "microphone",
  "midi",
  "payment",
  "picture-in-picture",
  "publickey-credentials-get",
  "screen-wake-lock",
  "serial",
  "usb",
  "xr-spatial-tracking",
]
  .map((feature) => `${feature}=()`)
  .join(", ");

/** HSTS for the production (Access) console: a year, subdomains included. */
export const STRICT_TRANSPORT_SECURITY = "max-age=31536000; includeSubDomains";

/** Headers every response of the console Worker carries, whatever produced it (page, fragment, JSON, refusal, 404, 500). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  // Older browsers that ignore frame-ancestors.
  "X-Frame-Options": "DENY",
  // Not no-referrer: under no-referrer a browser sends `Origin: null` on same-origin POSTs, and the
  // CSRF check needs the real Origin. same-origin still gives other sites (the APM links) nothing.
  "Referrer-Policy": "same-origin",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": PERMISSIONS_POLICY,
  // Every Worker answer is per user (pages carry the CSRF token, fragments and JSON carry fleet data).
  // Static files never reach the Worker: the assets binding serves them first, with their own caching.
  "Cache-Control": "no-store",
};

/**
 * Sets the security headers on every response, including errors and 404s: mount it first, before
 * auth and the routes. Strict-Transport-Security only outside dev mode and only over https, so a
 * local `AUTH_MODE=dev` console on http://127.0.0.1 never pins the browser to https.
 */
export function securityHeaders(): MiddlewareHandler<{ Bindings: { AUTH_MODE?: string } }> {
  return async (c, next) => {
    await next();
    const headers: Record<string, string> = { ...SECURITY_HEADERS };
    if (c.env?.AUTH_MODE !== "dev" && new URL(c.req.url).protocol === "https:") headers["Strict-Transport-Security"] = STRICT_TRANSPORT_SECURITY;
    const apply = () => {
      for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
    };
    try {
      apply();
    } catch {
      // A response passed through from fetch() has immutable headers: Hono's setter swaps in a mutable copy.
      c.res = new Response(c.res.body, c.res);
      apply();
    }
  };
}
