/**
 * Loopback host names: 127.0.0.0/8, ::1, `localhost` and `*.localhost` (RFC 6761 reserves it for the
 * loopback interface, and browsers resolve it there without asking DNS, so a rebinding domain cannot use it).
 */

/** A Host header value: a bracketed IPv6 literal or an LDH/dotted name, with an optional port. Nothing else (no userinfo, path or spaces). */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Whether a host name (as in `URL.hostname`: lower case, IPv6 in brackets) is the loopback interface.
 * IPv4-mapped forms (`[::ffff:127.0.0.1]`) and trailing dots are refused: they are not what a local
 * browser sends, and refusing is the safe side.
 */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === "[::1]" || host === "localhost") return true;
  if (host.endsWith(".localhost"))
    return host
      .slice(0, -".localhost".length)
      .split(".")
      .every((l) => LABEL.test(l));
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return !!octets && octets.slice(1).every((o) => Number(o) <= 255);
}

/**
 * The host name a `Host` (or `X-Forwarded-Host`) header names, normalised the way URLs are (so `127.1`
 * becomes `127.0.0.1`), or `undefined` when the value is not a plain host[:port].
 */
export function hostnameOfHostHeader(value: string): string | undefined {
  const trimmed = value.trim();
  if (!HOST_HEADER.test(trimmed)) return undefined;
  try {
    return new URL(`http://${trimmed}/`).hostname;
  } catch {
    return undefined;
  }
}

/** Whether an IP address text (as in `CF-Connecting-IP`) is a loopback address. */
export function isLoopbackAddress(ip: string): boolean {
  const value = ip.trim().toLowerCase();
  return value === "::1" || (/^[\d.]+$/.test(value) && isLoopbackHostname(value));
}
