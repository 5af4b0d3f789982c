import { env } from "cloudflare:workers";
import { reconcileAgent } from "../../worker/reconcile/agent";

/**
 * Waits until the agent's stored events stop changing (the Queue delivers asynchronously): unchanged for about half a
 * second, since on a loaded machine a Queue batch can take several times its 50 ms timeout to arrive.
 */
async function quiet(agentName: string): Promise<void> {
  let last = -1;
  let stable = 0;
  for (let i = 0; i < 200 && stable < 6; i++) {
    const row = await env.DB.prepare("SELECT COUNT(*) AS n, MAX(received_at) AS at FROM events WHERE agent_name = ?")
      .bind(agentName)
      .first<{ n: number; at: number | null }>();
    const n = (row?.n ?? 0) * 1e13 + (row?.at ?? 0);
    stable = n === last ? stable + 1 : 0;
    last = n;
    await scheduler.wait(80);
  }
}

/**
 * "Quiet", as a real fleet gets after a while: every event delivered that was going to be, then one
 * reconciliation pass (the cron's, judged with no minimum age) unless the agent cannot be asked, then quiet again.
 */
export async function settle(s: { agentClass: string; agentName: string }, opts: { reconcile?: boolean } = {}): Promise<void> {
  await quiet(s.agentName);
  if (opts.reconcile !== false) await reconcileAgent(env, { agentClass: s.agentClass, agentName: s.agentName }, { now: Date.now() + 1, minAgeMs: 0 });
  await quiet(s.agentName);
}
