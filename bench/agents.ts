import { withTelemetry } from "@agent-oncall/telemetry";
import { Agent } from "agents";
import type { Env } from "../worker/env";

/** The same fiber work for both agents: a few checkpoints around some CPU work. */
async function work(stash: (d: unknown) => void, steps: number): Promise<number> {
  let acc = 0;
  for (let i = 0; i < steps; i++) {
    for (let j = 0; j < 2_000; j++) acc = (acc * 31 + j) % 1_000_003;
    stash({ step: i, acc });
  }
  return acc;
}

/** Runs `n` fibers back to back inside the agent and returns the elapsed ms (no RPC in the measurement). */
async function loop(run: (steps: number) => Promise<number>, n: number, steps: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < n; i++) await run(steps);
  return performance.now() - t;
}

/** Plain agents-SDK agent. */
export class BenchPlainAgent extends Agent<Env> {
  run(steps: number): Promise<number> {
    return this.runFiber("bench", (ctx) => work((d) => ctx.stash(d), steps));
  }
  loop(n: number, steps: number): Promise<number> {
    return loop((s) => this.run(s), n, steps);
  }
}

/** The same agent with the telemetry mixin. */
export class BenchTelemetryAgent extends withTelemetry(Agent<Env>) {
  run(steps: number): Promise<number> {
    return this.runFiber("bench", (ctx) => work((d) => ctx.stash(d), steps));
  }
  loop(n: number, steps: number): Promise<number> {
    return loop((s) => this.run(s), n, steps);
  }
  async settle() {
    await this.telemetry.settle();
    return this.telemetry.stats();
  }
}
