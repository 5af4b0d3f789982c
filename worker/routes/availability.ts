import { adminErrorWords } from "../../console/admin-words";
import { type ActionAvailability, NO_MIXIN_SENTENCE } from "../../console/components/actions";
import type { ResolveAvailability } from "../../console/components/resolve-op";
import type { StatusOutput } from "../../src/admin-rpc/contract";
import { consoleAdminClient } from "../admin-client";
import type { ConsoleContext } from "./context";

const TERMINATED = "This agent is terminated: there is nothing to force idle and its alarm will not run recovery, so no actions are offered.";

/**
 * Refusals that say the console cannot reach this agent at all (no binding it may use, a sub-agent the SDK's
 * bridge does not reach, or another Worker's agent than the binding's): every action would be refused the same way, so none is offered.
 */
const UNREACHABLE_KINDS = new Set(["not_addressable", "no_binding", "nested_sub_agent", "other_worker"]);

/** What an agent's refusal says: its code, and where it has them its facts' kind and those facts in words. */
export type Refusal = { code: string; kind?: string; words?: string };

/** Which agent actions a page offers, from the agent's status or the typed error it answered with. */
export function agentActionsFrom(agentClass: string, state: { status: StatusOutput } | Refusal): ActionAvailability {
  if ("code" in state) {
    if (state.kind && UNREACHABLE_KINDS.has(state.kind))
      return { kind: "read_only", why: `No actions are offered: ${state.words ?? "the console cannot reach this agent"}.` };
    return state.code === "unsupported" ? { kind: "read_only", why: NO_MIXIN_SENTENCE(agentClass) } : { kind: "actions", capabilities: null };
  }
  if (state.status.status === "terminated") return { kind: "read_only", why: TERMINATED };
  return { kind: "actions", capabilities: state.status.capabilities ?? null };
}

/**
 * Whether the agent can take an op resolution: its admin mixin reports `capabilities.resolveOps` (its
 * onAdminResolveOp hook). When it could not be asked (evicted, slow), the control is offered and the
 * agent's own answer is shown.
 */
export function resolveFrom(agentClass: string, state: { status: StatusOutput } | Refusal): ResolveAvailability {
  if ("code" in state) {
    if (state.kind && UNREACHABLE_KINDS.has(state.kind))
      return { kind: "read_only", why: `Its ops cannot be resolved from the console: ${state.words ?? "the console cannot reach this agent"}.` };
    return state.code === "unsupported" ? { kind: "read_only", why: NO_MIXIN_SENTENCE(agentClass) } : { kind: "offer" };
  }
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
  const state = r.ok ? { status: r.value } : { code: r.error.code, kind: r.error.facts?.kind, words: adminErrorWords(r.error) };
  return { actions: agentActionsFrom(agentClass, state), resolve: resolveFrom(agentClass, state) };
}
