import type { ChatAgent } from "./chat";
import type { DemoFiberAgent } from "./demo/fiber-agent";
import type { DemoSessionAgent } from "./demo/session-agent";
import type { SessionAgent } from "./session";

/**
 * The demo fleet Worker's bindings: its agents, the telemetry Queue producer
 * (read by the telemetry mixin) and R2 for workspace backups. It knows nothing
 * of the console, which binds these agents by script_name.
 */
declare global {
  namespace Cloudflare {
    interface Env extends FleetEnv {}
  }
}

export type Env = Cloudflare.Env;

type FleetEnv = {
  TELEMETRY_QUEUE: Queue<unknown>;
  BACKUPS: R2Bucket;
  /** OTLP/HTTP traces endpoint of your APM and its headers (secrets); unset means no export. */
  OTLP_ENDPOINT?: string;
  OTLP_HEADERS?: string;
  /** The Worker's version (wrangler `version_metadata`): its id goes on every telemetry event. */
  CF_VERSION_METADATA?: WorkerVersionMetadata;
  /** Sessions in the demo fleet (default 4). */
  DEMO_FLEET_SIZE?: string;
  SessionAgent: DurableObjectNamespace<SessionAgent>;
  DemoSessionAgent: DurableObjectNamespace<DemoSessionAgent>;
  DemoFiberAgent: DurableObjectNamespace<DemoFiberAgent>;
  ChatAgent: DurableObjectNamespace<ChatAgent>;
};
