import { withAdminRpc } from "@agent-oncall/admin-rpc";
import { Agent, type FiberRecoveryContext } from "agents";
import type { Env } from "../env";

/**
 * A small demo agent: runs fibers that checkpoint as they go, sometimes fail,
 * and sometimes get evicted mid-run and recover on the next alarm.
 *
 * Adopted the recommended way: the admin mixin alone (for actions), no telemetry mixin. Its runs, failures,
 * evictions and recoveries reach the console through the Worker's `tail_consumers` line, as the SDK publishes them.
 * The SDK publishes nothing for `stash()`, so the console shows no stash snapshot for this class, and its events
 * carry no sequence numbers (no gap count). SessionAgent and ChatAgent stay on the opt-in outbox to show the other path.
 */
export class DemoFiberAgent extends withAdminRpc(Agent<Env>) {
  /** Runs one fiber of `steps` checkpoints; fails at the end when `fail` is set. */
  async runJob(input: { steps: number; fail?: boolean; label?: string }): Promise<{ fiberName: string; steps: number }> {
    const steps = Math.max(1, Math.min(50, Math.floor(input.steps)));
    const fiberName = `job:${input.label ?? "demo"}`;
    return this.runFiber(fiberName, async (ctx) => {
      for (let i = 1; i <= steps; i++) {
        ctx.stash({ step: i, of: steps, note: `processing chunk ${i}` });
        await scheduler.wait(5);
      }
      // "planned fault:" marks it in the runtime's log: the demo fails some jobs on purpose.
      if (input.fail) throw new Error(`planned fault: demo job ${fiberName} failed at step ${steps}`);
      return { fiberName, steps };
    });
  }

  /** Starts a long fiber and evicts this instance shortly after: the next alarm recovers it. */
  async runJobAndEvict(input: { label?: string }): Promise<void> {
    const fiberName = `job:${input.label ?? "long"}`;
    void this.runFiber(fiberName, async (ctx) => {
      ctx.stash({ step: 1, of: 10, note: "long job started; eviction expected" });
      await new Promise(() => {});
    }).catch(() => {});
    setTimeout(() => this.ctx.abort("planned fault: demo eviction"), 300);
  }

  override async onFiberRecovered(ctx: FiberRecoveryContext): Promise<void> {
    // Resume from the checkpoint as a fresh, short fiber of the same name: on the tail the SDK's messages say only
    // that the hook ran, and a run of the same name started inside it is how the console tells "resumed" (with a
    // link to the new run) from work the hook dropped, which it shows as unknown (docs/capture.md).
    const snap = (ctx.snapshot ?? {}) as { step?: number };
    await this.runFiber(ctx.name, async (f) => {
      f.stash({ resumedFrom: snap.step ?? 0, note: "resumed after eviction" });
    });
  }
}
