import { type AdminClientOptions, createAdminClient } from "../src/admin-rpc/client-entry";
import { writeAudit } from "../src/store/audit";
import { findAgent } from "../src/store/read-models/agents";
import type { Env } from "./env";

/**
 * The console's admin client: the audited client of src/admin-rpc wired to the
 * console's D1 (audit log, agent registry), its telemetry Queue and the
 * Durable Object bindings of the agents it observes (wrangler.jsonc binds them
 * by class name, with script_name for agents in other Workers).
 */
export function consoleAdminClient(env: Env, identity: unknown, opts: AdminClientOptions = {}) {
  return createAdminClient(
    {
      audit: (entry) => writeAudit(env.DB, entry),
      isRegistered: async (agentClass, agentName) => Boolean(await findAgent(env.DB, agentClass, agentName)),
      namespace: (agentClass) => agentNamespace(env, agentClass),
      queue: env.TELEMETRY_QUEUE,
    },
    identity,
    opts,
  );
}

/** The binding named after an agent class, when it looks like a Durable Object namespace. */
function agentNamespace(env: Env, agentClass: string): DurableObjectNamespace | null {
  const ns = (env as unknown as Record<string, unknown>)[agentClass];
  return ns && typeof (ns as { idFromName?: unknown }).idFromName === "function" ? (ns as DurableObjectNamespace) : null;
}
