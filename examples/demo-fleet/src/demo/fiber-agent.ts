import { withAdminRpc } from "@agent-oncall/admin-rpc";
import { withTelemetry } from "@agent-oncall/telemetry";
import { otlpTracing } from "@agent-oncall/telemetry/otlp";
import { Agent, type FiberRecoveryContext } from "agents";
import type { Env } from "../env";

/**
 * A small demo agent: runs fibers that checkpoint as they go, sometimes fail,
 * and sometimes get evicted mid-run and recover on the next alarm.
 */
export class DemoFiberAgent extends withAdminRpc(withTelemetry(Agent<Env>, { tracing: otlpTracing })) {
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
    // Resume from the checkpoint as a fresh, short fiber.
    const snap = (ctx.snapshot ?? {}) as { step?: number };
    await this.runFiber(`${ctx.name}:resumed`, async (f) => {
      f.stash({ resumedFrom: snap.step ?? 0, note: "resumed after eviction" });
    });
  }
}
