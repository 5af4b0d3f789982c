import { type AdminClientOptions, createAdminClient } from "../src/admin-rpc/client-entry";
import { writeAudit } from "../src/store/audit";
import { consoleConfig } from "./config";
import type { Env } from "./env";
import { consoleStoreFromEnv } from "./store";

/**
 * The console's admin client: the audited client of src/admin-rpc wired to the
 * console's D1 (audit log, agent registry), its telemetry Queue and the
 * Durable Object bindings of the agents it observes (wrangler.jsonc binds them
 * by class name, with script_name for agents in other Workers).
 */
export function consoleAdminClient(env: Env, identity: unknown, opts: AdminClientOptions = {}) {
  const agentClasses = allowedAgentClasses(env);
  return createAdminClient(
    {
      // The audit log is global (the home database); the registry row is in the agent's partition.
      audit: (entry) => writeAudit(env.DB, entry),
      agentClasses,
      isRegistered: async (agentClass, agentName) => Boolean(await consoleStoreFromEnv(env).agents.find({ agentClass, agentName })),
      namespace: (agentClass) => agentNamespace(env, agentClasses, agentClass),
      queue: env.TELEMETRY_QUEUE,
      // Ingest dead-letters unsigned events when the console has a signing secret: the console's own included.
      signingSecret: consoleConfig(env).ingest.signingSecret,
    },
    identity,
    opts,
  );
}

/**
 * The agent classes the console may address: the `AGENT_CLASSES` var (worker/config.ts refuses one naming a
 * console binding), a comma-separated list that wrangler.jsonc declares next to the Durable Object bindings
 * (scripts/wrangler-config.ts checks they match, and writes it for the configs it derives). Unset means none:
 * a binding is never guessed.
 */
export function allowedAgentClasses(env: Env): string[] {
  return consoleConfig(env).agentClasses;
}

/** The binding named after an allowed agent class. */
export function agentNamespace(env: Env, allowed: readonly string[], agentClass: string): DurableObjectNamespace | null {
  if (!allowed.includes(agentClass)) return null;
  const ns = (env as unknown as Record<string, unknown>)[agentClass];
  return ns && typeof ns === "object" ? (ns as DurableObjectNamespace) : null;
}
