import { type ActionAvailability, NO_MIXIN_SENTENCE } from "../../console/components/actions";
import type { ResolveAvailability } from "../../console/components/resolve-op";
import type { StatusOutput } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import type { ConsoleContext } from "./context";

const TERMINATED = "This agent is terminated: there is nothing to force idle and its alarm will not run recovery, so no actions are offered.";

/** Which agent actions a page offers, from the agent's status or the typed error it answered with. */
export function agentActionsFrom(agentClass: string, state: { status: StatusOutput } | { code: string }): ActionAvailability {
  if ("code" in state)
    return state.code === "unsupported" ? { kind: "read_only", why: NO_MIXIN_SENTENCE(agentClass) } : { kind: "actions", capabilities: null };
  if (state.status.status === "terminated") return { kind: "read_only", why: TERMINATED };
  return { kind: "actions", capabilities: state.status.capabilities ?? null };
}

/**
 * Whether the agent can take an op resolution: its admin mixin reports `capabilities.resolveOps` (its
 * onAdminResolveOp hook). When it could not be asked (evicted, slow), the control is offered and the
 * agent's own answer is shown.
 */
export function resolveFrom(agentClass: string, state: { status: StatusOutput } | { code: string }): ResolveAvailability {
  if ("code" in state) return state.code === "unsupported" ? { kind: "read_only", why: NO_MIXIN_SENTENCE(agentClass) } : { kind: "offer" };
  const caps = state.status.capabilities;
  if (caps && !caps.resolveOps) {
    return {
      kind: "read_only",
      why: `${agentClass} does not implement onAdminResolveOp, so its ops cannot be resolved from the console; resolve them in the agent's own ledger.`,
    };
  }
  return { kind: "offer" };
}

/**
 * Asks the agent (a read, allowed to viewers) what it can do now, for a page about one agent: the agent
 * actions and the op resolution it offers. Never throws: a sick agent gets the controls and answers itself.
 */
export async function askAgent(
  c: ConsoleContext,
  agentClass: string,
  agentName: string,
): Promise<{ actions: ActionAvailability; resolve: ResolveAvailability }> {
  const admin = consoleAdminClient(c.env, { email: c.var.user.email, role: c.var.user.role });
  const r = await admin.status({ agentClass, agentName });
  const state = r.ok ? { status: r.value } : { code: r.error.code };
  return { actions: agentActionsFrom(agentClass, state), resolve: resolveFrom(agentClass, state) };
}
