import type { Source } from "@agent-oncall/telemetry";
import type { ConsoleConfig } from "../config";
import type { Env } from "../env";
import { consoleStoreFromEnv } from "../store";
import { type AgentReconciliation, GAP_FILL_RECENT, type ReconcileOptions, reconcileAgent } from "./agent";
import { quietClassTargets } from "./quiet-classes";

/** Reconciliation settings (worker/config.ts: RECONCILE_AFTER_MINUTES, RECONCILE_BATCH). */
export type ReconcileSettings = ConsoleConfig["reconcile"];

/** How long after its last event the agent page's reconciliation may judge work (events may still be in flight before). */
export const PAGE_RECONCILE_AFTER_MS = 60_000;

/**
 * One cron pass: the agents whose runs, sessions or incidents have been open
 * longer than `afterMs` without an event or a confirmation, oldest first, at
 * most `batch` of them; then the agents some of whose events never arrived (a
 * sequence gap), at most `batch` more, whose recent runs are filled in from
 * what they record; then one agent of each class the console has heard nothing
 * from for a while (quiet-classes.ts). Each is asked in turn. Returns what each said.
 */
export async function reconcileStale(env: Env, settings: ReconcileSettings, now = Date.now()): Promise<AgentReconciliation[]> {
  const before = now - settings.afterMs;
  const store = consoleStoreFromEnv(env, now);
  const [stale, gaps] = await Promise.all([store.reconcile.stale(before, settings.batch), store.reconcile.gapsDue(before, settings.batch)]);
  const key = (a: { agentClass: string; agentName: string }) => JSON.stringify([a.agentClass, a.agentName]);
  const gapped = new Set(gaps.map(key));
  const agents = [...stale, ...gaps.filter((g) => !stale.some((s) => key(s) === key(g)))].map(({ agentClass, agentName }) => ({ agentClass, agentName }));
  const out: AgentReconciliation[] = [];
  // One at a time: a pass is background work, and a sick agent's timeout must not multiply.
  for (const a of agents)
    out.push(
      await ask(env, a, {
        now,
        minAgeMs: settings.afterMs,
        unknownAfterMs: settings.unknownAfterMs,
        ...(gapped.has(key(a)) ? { fillRecent: GAP_FILL_RECENT } : {}),
      }),
    );
  // Then one agent of each class gone quiet, so a Worker whose telemetry broke while nothing was open is asked too.
  const answered = new Set(out.filter((r) => r.error === null).map((r) => r.target.agentClass));
  for (const a of await quietClassTargets(env, now, before, answered)) out.push(await ask(env, a, { now, minAgeMs: settings.afterMs }));
  return out;
}

/** Asks one agent (reconcileAgent). The admin client answers typed errors; a throw is the store or the Queue failing: noted, and the pass goes on. */
async function ask(env: Env, a: Source, opts: ReconcileOptions): Promise<AgentReconciliation> {
  try {
    return await reconcileAgent(env, a, opts);
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    await consoleStoreFromEnv(env)
      .reconcile.record({ ...a, askedAt: opts.now ?? Date.now(), findings: 0, error })
      .catch(() => {});
    return { target: a, findings: [], error, telemetry: null };
  }
}
