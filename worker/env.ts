/**
 * The console Worker's bindings and vars, as `wrangler types` generates them from wrangler.jsonc
 * (worker/worker-configuration.d.ts: `npm run types:generate`, checked by `npm run types:check`).
 * Settings, vars and secrets alike, are read through worker/config.ts, never from env directly.
 */
export type Env = Cloudflare.Env;
