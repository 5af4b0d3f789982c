/**
 * Local-dev front door of `npm start` / `npm run dev:with`: one `wrangler dev` runs this gateway, the console
 * and your Worker, and only the first config gets the HTTP port. Requests under APP_PREFIX (default /app) go to
 * your Worker with the prefix removed; everything else goes to the console. Never deployed.
 */
type GatewayEnv = { CONSOLE: Fetcher; APP: Fetcher; APP_PREFIX?: string };

export default {
  fetch(request, env) {
    const prefix = env.APP_PREFIX ?? "/app";
    const url = new URL(request.url);
    if (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`)) {
      url.pathname = url.pathname.slice(prefix.length) || "/";
      return env.APP.fetch(new Request(url, request));
    }
    return env.CONSOLE.fetch(request);
  },
} satisfies ExportedHandler<GatewayEnv>;
