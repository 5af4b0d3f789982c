/** Bindings and settings the console Worker and its agents read. One place, so every room agrees on names. */
declare global {
  namespace Cloudflare {
    interface Env extends ConsoleEnv {}
  }
}

export type Env = Cloudflare.Env;

type ConsoleEnv = {
  DB: D1Database;
  TELEMETRY_QUEUE: Queue<unknown>;
  BACKUPS: R2Bucket;
  ASSETS?: Fetcher;
  /** Days of history to keep (cron retention). */
  RETENTION_DAYS?: string;
  /** OTLP/HTTP traces endpoint, e.g. https://api.example-apm.com/v1/traces. A secret; unset means no export. */
  OTLP_ENDPOINT?: string;
  /** OTLP headers, `key=value,key2=value2` (a secret). */
  OTLP_HEADERS?: string;
  OTEL_SERVICE_NAME?: string;
  /** "on" lets the demo driver run the demo fleet (npm start sets it). */
  DEMO_FLEET?: string;
  DEMO_FLEET_SIZE?: string;
  DemoFiberAgent: DurableObjectNamespace<import("./demo/fiber-agent").DemoFiberAgent>;
};

/** Queue names as declared in wrangler.jsonc. */
export const TELEMETRY_QUEUE_NAME = "agent-telemetry";
export const TELEMETRY_DLQ_NAME = "agent-telemetry-dlq";
