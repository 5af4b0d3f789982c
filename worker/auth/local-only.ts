import { hostnameOfHostHeader, isLoopbackAddress, isLoopbackHostname } from "./loopback";

/** What a refused visitor reads: dev mode has no sign-in, so it must never answer anyone but this machine. */
export const DEV_MODE_LOCAL_ONLY_MESSAGE =
  "This console runs in local development mode (no sign-in), which only answers on the machine it runs on: open it at http://127.0.0.1 or http://localhost, with its port. To serve it under any other address, use Cloudflare Access (AUTH_MODE=access).";

/**
 * Why a request must not be served in dev mode, or `undefined` when it is local. Every name the request
 * gives for the console must be loopback: the URL, the `Host` header and any `X-Forwarded-Host`. A
 * DNS-rebinding page in a browser sends its own domain as Host, and a deployed Worker is reached under a
 * public name, so both are refused. `CF-Connecting-IP`, when present, must be loopback too: Cloudflare's
 * edge sets it to the visitor's address, which also catches a tunnel that rewrites Host to localhost.
 */
export function notLocalReason(request: Request): string | undefined {
  const urlHost = new URL(request.url).hostname;
  if (!isLoopbackHostname(urlHost)) return `the request URL names ${urlHost}`;

  const host = request.headers.get("Host");
  if (host !== null) {
    const name = hostnameOfHostHeader(host);
    if (name === undefined || !isLoopbackHostname(name)) return `the Host header is ${JSON.stringify(host.slice(0, 100))}`;
  }

  const forwarded = request.headers.get("X-Forwarded-Host");
  if (forwarded !== null) {
    for (const value of forwarded.split(",")) {
      const name = hostnameOfHostHeader(value);
      if (name === undefined || !isLoopbackHostname(name)) return `X-Forwarded-Host is ${JSON.stringify(forwarded.slice(0, 100))}`;
    }
  }

  const client = request.headers.get("CF-Connecting-IP");
  if (client !== null && !isLoopbackAddress(client)) return `the client address is ${client.slice(0, 60)}`;
  return undefined;
}
