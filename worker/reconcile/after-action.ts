import type { Source } from "@agent-oncall/telemetry";
import type { AdminActionName } from "../../src/admin-rpc/actions";
import type { VerifiedForceIdleOutput } from "../../src/admin-rpc/contract";
import type { UnconfirmedRun } from "../../src/store/read-models/open-work";
import type { Env } from "../env";
import { type AgentReconciliation, reconcileAgent } from "./agent";
import { PAGE_RECONCILE_AFTER_MS } from "./pass";

/**
 * What the console's rows say after an action, read from the agent rather than waited for: force idle stops work
 * through the SDK's own cancel, whose event on the tail path cannot say how the work ended (a managed fiber's
 * `fiber:run:failed` reads the same for a throw and a cancel), and the action's own word ranks below it. So once
 * the action answered, its one target is reconciled: the runs it ended are read back as the SDK records them (dated,
 * which outranks the event's unconfirmed end), and the rest of its open work is judged as a page visit judges it.
 */

/** The actions after which their target is reconciled, and the runs each reads back (from its verified answer). */
const READ_BACK: Partial<Record<AdminActionName, (value: unknown) => UnconfirmedRun[]>> = {
  force_idle: (value) => ((value as Partial<VerifiedForceIdleOutput>).ended ?? []).map((r) => ({ kind: r.kind, runId: r.runId })),
};

/** A pause before asking an agent force idle evicts right after answering (contract: `evicted`), so the ask meets a fresh instance. */
const AFTER_EVICTION_MS = 100;

/**
 * Reconciles `target` after `action` answered `value` (ok or partial), for the actions READ_BACK names; null for
 * the others. Never throws: a failure does not make the action fail. It is noted, in the reconciliation record when
 * the agent could not answer (reconcileAgent) and in the log when the console's own store or Queue failed.
 */
export async function reconcileAfterAction(env: Env, action: AdminActionName, target: Source, value: unknown): Promise<AgentReconciliation | null> {
  const readBack = READ_BACK[action];
  if (!readBack) return null;
  try {
    if ((value as { evicted?: unknown } | null)?.evicted === true) await new Promise((r) => setTimeout(r, AFTER_EVICTION_MS));
    return await reconcileAgent(env, target, { minAgeMs: PAGE_RECONCILE_AFTER_MS, readBack: readBack(value) });
  } catch (e) {
    console.error(`[reconcile] after ${action} on ${target.agentClass}/${target.agentName}: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
}
