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

/** The same agent with the telemetry mixin, its outbox written as `outboxWrites` says. */
function telemetryAgent(outboxWrites: "turn" | "flush") {
  return class extends withTelemetry(Agent<Env>, { outboxWrites }) {
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
  };
}

/** With the default outbox writes (each turn's events in that turn). */
export class BenchTelemetryAgent extends telemetryAgent("turn") {}
/** With `outboxWrites: "flush"`: what the outbox write costs runFiber, by difference. */
export class BenchTelemetryFlushAgent extends telemetryAgent("flush") {}

/** Counts the rows written by statements on the telemetry outbox's tables (any version), from the cursors. */
function countOutboxWrites(sql: SqlStorage): { rows: number } {
  const counter = { rows: 0 };
  const exec = sql.exec.bind(sql);
  (sql as { exec: SqlStorage["exec"] }).exec = ((query: string, ...bindings: unknown[]) => {
    const cursor = exec(query, ...bindings);
    if (query.includes("cf_telemetry_outbox")) counter.rows += cursor.rowsWritten;
    return cursor;
  }) as SqlStorage["exec"];
  return counter;
}

/**
 * Agents whose session turns are shaped like the demo fleet's SessionAgent: status running, a turn fiber that checkpoints as the
 * model streams, two model calls and one tool call as ops (op.started / op.completed, model.usage), status idle.
 * Every await is a real timer, so each step is its own turn of the event loop, as I/O makes it in the demo.
 */
function demoLikeAgent(outboxWrites: "turn" | "flush", flushDelayMs?: number) {
  return class extends withTelemetry(Agent<Env>, { outboxWrites, flushDelayMs }) {
    readonly #outboxWrites: { rows: number };
    constructor(ctx: DurableObjectState, env: Env) {
      super(ctx, env);
      this.#outboxWrites = countOutboxWrites(ctx.storage.sql);
    }

    async #op(kind: string, turnSeq: number, fiberId: string, usage: boolean): Promise<void> {
      const opId = crypto.randomUUID();
      this.telemetry.record("op.started", { opKind: kind, turnSeq }, { opId, sessionName: this.name, fiberId });
      await scheduler.wait(2);
      if (usage) this.telemetry.usage({ inputTokens: 900, outputTokens: 120 }, { sessionName: this.name, turnSeq, model: "bench" });
      this.telemetry.record("op.completed", { opKind: kind, turnSeq }, { opId, sessionName: this.name, fiberId });
    }

    async turn(turnSeq: number): Promise<void> {
      this.telemetry.record("session.status_running", { turnSeq }, { sessionName: this.name });
      await this.runFiber("session-turn", async (fiber) => {
        fiber.stash({ turnSeq, step: 1, streamedChars: 0 });
        for (let chunk = 1; chunk <= 4; chunk++) {
          await scheduler.wait(1);
          fiber.stash({ turnSeq, step: 1, streamedChars: chunk * 40 });
        }
        await this.#op("model.request", turnSeq, fiber.id, true);
        fiber.stash({ turnSeq, step: 2, pendingTool: "search" });
        await this.#op("tool.search", turnSeq, fiber.id, false);
        fiber.stash({ turnSeq, step: 3 });
        await this.#op("model.request", turnSeq, fiber.id, true);
      });
      this.telemetry.record("session.status_idle", { turnSeq }, { sessionName: this.name });
    }

    /** Runs `turns` turns `gapMs` apart and returns the outbox's rows written, the events sent and the Queue messages they went in. */
    async workload(turns: number, gapMs: number): Promise<{ rows: number; events: number; messages: number }> {
      for (let t = 1; t <= turns; t++) {
        await this.turn(t);
        await scheduler.wait(gapMs);
      }
      await this.telemetry.settle();
      const stats = this.telemetry.stats();
      return { rows: this.#outboxWrites.rows, events: stats.sent, messages: stats.messages };
    }
  };
}

/** The demo-like agent with the default outbox writes (each turn's events in that turn). */
export class BenchDemoLikeAgent extends demoLikeAgent("turn") {}
/** The same with `outboxWrites: "flush"`. */
export class BenchDemoLikeFlushAgent extends demoLikeAgent("flush") {}
