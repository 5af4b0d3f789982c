import type { Source } from "@agent-oncall/telemetry";
import { TELEMETRY_QUIET_MS } from "../../src/store/read-models/blocked-agents";
import { allowedAgentClasses } from "../admin-client";
import type { Env } from "../env";
import { consoleStoreFromEnv } from "../store";

/**
 * How long after the console last heard from a class it still asks one of its agents why. A Worker that lost its
 * Queue binding or whose Queue refuses sends is found within a pass of going quiet; past this, a class that is
 * simply unused is not woken every pass for nothing.
 */
export const QUIET_CLASS_HORIZON_MS = 24 * 60 * 60_000;

/**
 * One agent per quiet class, for reconciliation to ask: reconciliation otherwise only asks agents with stale open
 * work or missing events, so a Worker whose pipeline broke while its agents had nothing open would look idle, not
 * broken (its agents' events wait in their outboxes, unseen). A class is quiet when the console has heard nothing
 * from any of its agents for TELEMETRY_QUIET_MS (a busy class proves its pipeline with every event), up to
 * QUIET_CLASS_HORIZON_MS. The agent asked is the class's most recently seen one (most likely awake), and only if
 * it was not asked within `askedAfter` (the reconcile age), so a quiet class costs one status call per reconcile age,
 * not per pass. `answered`: classes some agent of which already answered in this pass: another of the same Worker
 * would say the same.
 *
 * Reads, per allowed class: one agents row per store partition, and one reconciliations row.
 */
export async function quietClassTargets(env: Env, now: number, askedAfter: number, answered: ReadonlySet<string>): Promise<Source[]> {
  const store = consoleStoreFromEnv(env, now);
  const out: Source[] = [];
  for (const agentClass of allowedAgentClasses(env)) {
    if (answered.has(agentClass)) continue;
    const [newest] = (await store.agents.list({ agentClass }, { limit: 1 })).items;
    if (!newest) continue;
    // From the stored last_seen, which can be up to a step early (src/store/heard-from.ts): a class may be asked while
    // an agent of it sent events in the last step. That costs one status call per reconcile age; counting from the
    // latest it may have heard would find a broken Worker a step later.
    const quietFor = now - newest.lastSeen;
    if (quietFor < TELEMETRY_QUIET_MS || quietFor > QUIET_CLASS_HORIZON_MS) continue;
    const target = { agentClass, agentName: newest.agentName };
    const last = await store.agents.lastReconciliation(target);
    if (last && last.askedAt >= askedAfter) continue;
    out.push(target);
  }
  return out;
}
