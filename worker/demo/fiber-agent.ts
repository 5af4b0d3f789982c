import { Agent } from "agents";
import { withTelemetry } from "../../src/telemetry";
import type { Env } from "../env";

/**
 * A small demo agent: runs fibers that checkpoint as they go, and sometimes
 * fail, so the console has real fiber events before the full runtime exists.
 */
export class DemoFiberAgent extends withTelemetry(Agent<Env>) {
  /** Runs one fiber of `steps` checkpoints; fails at the end when `fail` is set. */
  async runJob(input: { steps: number; fail?: boolean; label?: string }): Promise<{ fiberName: string; steps: number }> {
    const steps = Math.max(1, Math.min(50, Math.floor(input.steps)));
    const fiberName = `job:${input.label ?? "demo"}`;
    return this.runFiber(fiberName, async (ctx) => {
      for (let i = 1; i <= steps; i++) {
        ctx.stash({ step: i, of: steps, note: `processing chunk ${i}` });
        await scheduler.wait(5);
      }
      if (input.fail) throw new Error(`demo job ${fiberName} failed at step ${steps}`);
      return { fiberName, steps };
    });
  }
}
