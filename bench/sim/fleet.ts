import {
  EXHAUSTION_REASONS,
  fiberIncidentId,
  newEventId,
  packBodies,
  SCHEMA_VERSION,
  type Source,
  type TelemetryEvent,
  turnIncidentId,
  utf8Length,
} from "@agent-oncall/telemetry";
import { SeededRandom } from "../../test/fixtures/seeded-random";
import { FloorCounter } from "./floor";
import { LIFE_SHAPES, type LifeShape, type Mix } from "./mix";

/**
 * A simulated fleet: each agent lives the mix's shapes of work (a fiber with its stashes, a session turn with its
 * paid ops, a chat turn, a recovery, an exhaustion…) as valid contract events, numbered per agent (`seq`, as the
 * outbox numbers them) and packed per agent per flush the way the outbox ships them (packBodies): one Queue
 * message holds one agent's flush. As the telemetry does, a fiber's checkpoints coalesce to the newest per flush
 * (a held `fiber.stashed` is replaced by the next one, unless another event of that fiber came between), and
 * numbers are given after that, so a coalesced checkpoint takes none. Time is generated slice by slice, so a long run never holds its whole stream.
 */

/** One Queue message as the agent side sends it: when it is sent, its JSON text, and when each of its events happened. */
/** The fleet's agent number `i`: its class (round robin over the mix's) and name. */
export const fleetAgent = (mix: Mix, i: number, namePrefix: string): Source => ({
  agentClass: mix.agentClasses[i % mix.agentClasses.length]!,
  agentName: `${namePrefix}-${String(i).padStart(5, "0")}`,
});

export type SimMessage = { sendAt: number; body: string; bytes: number; eventTimes: number[] };

type Draft = { dt: number; type: TelemetryEvent["type"]; corr: TelemetryEvent["corr"]; payload: unknown };

/** What the fleet gives the console pages to open: ids that exist in the simulated store. */
export type Picks = { incidentId: string | null; fiberId: string | null; sessionName: string | null };

type Agent = {
  src: Source;
  seq: number;
  turnSeq: number;
  nextLifeAt: number;
  /** Events of lives under way, by time. */
  pending: TelemetryEvent[];
  /** The flush under way: its first event's time, its events (null: a checkpoint coalesced away) and the held checkpoint per fiber. */
  flush: { start: number; events: (TelemetryEvent | null)[]; held: Map<string, number> } | null;
};

const hex = (r: SeededRandom, n: number) => {
  let s = "";
  for (let i = 0; i < n; i++) s += "0123456789abcdef"[Math.floor(r.next() * 16)];
  return s;
};
const between = (r: SeededRandom, [lo, hi]: readonly [number, number]) => r.int(lo, hi);

const JOBS = ["nightly-sync", "ingest-batch", "reindex", "crawl-site", "summarise", "invoice-run"];
const TOOLS = ["tool.search_docs", "tool.lookup_order", "tool.charge_card", "tool.send_email", "model.call"];
const MODELS = ["scripted-small", "scripted-large"];

/** Builds one life's events as offsets from its start. */
class LifeWriter {
  readonly out: Draft[] = [];
  t = 0;
  constructor(
    readonly r: SeededRandom,
    readonly mix: Mix,
  ) {}
  ev(type: Draft["type"], corr: Draft["corr"], payload: unknown, gapMs: readonly [number, number] = [5, 50]): void {
    this.t += this.r.int(gapMs[0], gapMs[1]);
    this.out.push({ dt: this.t, type, corr, payload });
  }
  snapshot(step: number): { preview: string; bytes: number; truncated: boolean } {
    const n = between(this.r, this.mix.snapshotChars);
    const base = JSON.stringify({ step, cursor: `part-${step * 17}`, processed: step * this.r.int(10, 900) });
    const preview = (base + "x".repeat(Math.max(0, n - base.length))).slice(0, Math.max(n, 2));
    return { preview, bytes: preview.length, truncated: false };
  }
  usage(corr: Draft["corr"], extra: Record<string, unknown> = {}): void {
    this.ev(
      "model.usage",
      corr,
      { inputTokens: this.r.int(200, 8_000), outputTokens: this.r.int(20, 1_500), model: this.r.pick(MODELS), ...extra },
      [200, 3_000],
    );
  }
}

/** One life of `shape` for `agent` (turnSeq is bumped for session shapes). */
function writeLife(shape: LifeShape, w: LifeWriter, agent: { src: Source; turnSeq: number }): void {
  const { r, mix } = w;
  const { agentClass, agentName } = agent.src;
  const fiberId = hex(r, 21);
  const stashes = (fiber: Draft["corr"], name: string, kind?: "fiber" | "managed_fiber") => {
    for (let i = 1, n = between(r, mix.stashes); i <= n; i++)
      w.ev("fiber.stashed", fiber, { fiberName: name, snapshot: w.snapshot(i), ...(kind ? { kind } : {}) }, [100, 2_500]);
  };
  switch (shape) {
    case "runFiber": {
      const name = r.pick(JOBS);
      const corr = { fiberId, traceId: hex(r, 32) };
      w.ev("fiber.started", corr, { fiberName: name, kind: "fiber" }, [0, 0]);
      stashes(corr, name, "fiber");
      if (r.chance(mix.fiberFailRate))
        w.ev("fiber.failed", corr, { fiberName: name, kind: "fiber", error: "upstream timed out after 30000 ms", elapsedMs: w.t }, [100, 3_000]);
      else w.ev("fiber.completed", corr, { fiberName: name, kind: "fiber", elapsedMs: w.t }, [100, 3_000]);
      return;
    }
    case "managedFiber": {
      const name = r.pick(JOBS);
      const corr = { fiberId };
      w.ev("fiber.started", corr, { fiberName: name, managed: true, kind: "managed_fiber", fiberStatus: "running" }, [0, 0]);
      stashes(corr, name, "managed_fiber");
      w.ev("fiber.completed", corr, { fiberName: name, managed: true, kind: "managed_fiber", fiberStatus: "completed", elapsedMs: w.t }, [100, 3_000]);
      return;
    }
    case "task": {
      const corr = { taskId: `task_${hex(r, 16)}` };
      const definition = r.pick(["reindex-docs", "nightly-report", "sync-crm"]);
      w.ev("task.accepted", corr, { definition }, [0, 0]);
      w.ev("task.attempt.started", corr, { definition, attempt: 1, step: "load" });
      if (r.chance(0.2))
        w.ev(
          "task.waiting",
          corr,
          { definition, attempt: 1, step: "wait-upstream", reason: "waiting for the export", wakeAt: Date.now() + 60_000 },
          [200, 2_000],
        );
      w.ev("task.completed", corr, { definition, attempt: 1, step: "done", statusMessage: "done" }, [500, 5_000]);
      return;
    }
    case "chatTurn": {
      const corr = { requestId: `req_${hex(r, 16)}`, traceId: hex(r, 32) };
      w.ev("chat.turn.started", corr, { trigger: "submit", generation: 1 }, [0, 0]);
      for (let i = 0, n = between(r, mix.modelCallsPerChatTurn); i < n; i++) w.usage(corr);
      w.ev("chat.turn.finished", corr, { status: "completed", durationMs: w.t }, [50, 500]);
      return;
    }
    case "sessionTurn":
    case "ambiguousOp": {
      const turnSeq = ++agent.turnSeq;
      const ses = { sessionName: agentName };
      const fiber = { fiberId, sessionName: agentName };
      w.ev("session.status_running", ses, { turnSeq }, [0, 0]);
      w.ev("fiber.started", fiber, { fiberName: "session-turn", kind: "fiber" }, [1, 20]);
      const ops = between(r, mix.opsPerTurn);
      for (let i = 0; i < ops; i++) {
        const op = { opId: `op_${hex(r, 32)}`, sessionName: agentName };
        const opKind = r.pick(TOOLS);
        w.ev("op.started", op, { opKind, turnSeq, idempotent: opKind !== "tool.charge_card" }, [50, 800]);
        if (shape === "ambiguousOp" && i === ops - 1) {
          // Evicted while the paid op ran: the turn is recovered, the op is ambiguous.
          const inc = { incidentId: turnIncidentId(agentClass, agentName, turnSeq), sessionName: agentName };
          w.ev("fiber.interrupted", fiber, { fiberName: "session-turn", kind: "fiber" }, [100, 2_000]);
          w.ev("session.status_rescheduled", ses, { turnSeq, recoveryCount: 1, detail: "evicted mid-turn" }, [500, 5_000]);
          w.ev("op.ambiguous", op, { opKind, turnSeq, detail: "started before an eviction; no completion recorded" }, [5, 50]);
          w.ev("fiber.recovery.detected", { ...fiber, incidentId: inc.incidentId }, { fiberName: "session-turn", kind: "fiber" }, [5, 50]);
          w.ev(
            "fiber.recovery.handled",
            { ...fiber, incidentId: inc.incidentId },
            { fiberName: "session-turn", kind: "fiber", status: "recovered" },
            [50, 500],
          );
          w.ev("session.status_idle", ses, { turnSeq }, [100, 1_000]);
          return;
        }
        w.usage(op, { turnSeq });
        w.ev("op.completed", op, { opKind, turnSeq, resultRef: `res_${hex(r, 12)}` }, [10, 200]);
      }
      stashes(fiber, "session-turn");
      w.ev("fiber.completed", fiber, { fiberName: "session-turn", kind: "fiber", elapsedMs: w.t }, [5, 100]);
      w.ev("session.status_idle", ses, { turnSeq }, [1, 20]);
      return;
    }
    case "fiberRecovery": {
      const name = r.pick(JOBS);
      const corr = { fiberId };
      const inc = { fiberId, incidentId: fiberIncidentId(agentClass, agentName, fiberId) };
      w.ev("fiber.started", corr, { fiberName: name, kind: "fiber" }, [0, 0]);
      stashes(corr, name, "fiber");
      w.ev("fiber.interrupted", corr, { fiberName: name, kind: "fiber" }, [100, 2_000]);
      w.ev("fiber.recovery.detected", inc, { fiberName: name, kind: "fiber" }, [1_000, 10_000]);
      w.ev("fiber.recovery.attempt", inc, { fiberName: name, kind: "fiber" }, [5, 400]);
      w.ev("fiber.recovery.handled", inc, { fiberName: name, kind: "fiber", status: "recovered" }, [200, 5_000]);
      return;
    }
    case "chatRecovery":
    case "chatExhaustion": {
      const requestId = `req_${hex(r, 16)}`;
      const incidentId = `${requestId}:msg_${hex(r, 12)}`;
      const turn = { requestId };
      const corr = { incidentId, requestId };
      const base = { maxAttempts: 3, recoveryKind: "continue" as const, rootRequestId: requestId };
      w.ev("chat.turn.started", turn, { trigger: "submit", generation: 1 }, [0, 0]);
      w.usage(turn);
      w.ev("chat.recovery.detected", corr, { ...base, attempt: 1 }, [500, 5_000]);
      const attempts = shape === "chatRecovery" ? 1 : 3;
      for (let a = 1; a <= attempts; a++) {
        w.ev("chat.recovery.scheduled", corr, { ...base, attempt: a }, [5, 100]);
        w.ev("chat.recovery.attempt", corr, { ...base, attempt: a }, [500, 3_000]);
        w.usage(corr, { attempt: a });
      }
      if (shape === "chatRecovery") {
        w.ev("chat.recovery.completed", corr, { ...base, attempt: 1 }, [100, 2_000]);
        w.ev("chat.turn.finished", turn, { status: "completed", durationMs: w.t }, [5, 100]);
      } else {
        const partial = "Partial answer before the stream stalled ".repeat(3);
        w.ev(
          "chat.recovery.exhausted",
          corr,
          { ...base, attempt: 3, reason: r.pick(EXHAUSTION_REASONS), partialText: { preview: partial, bytes: partial.length, truncated: false } },
          [1_000, 10_000],
        );
        w.ev("chat.turn.finished", turn, { status: "error", durationMs: w.t, error: "recovery exhausted", sealed: true }, [5, 100]);
      }
      return;
    }
    case "backup": {
      const handle = `bk_${hex(r, 16)}`;
      w.ev(
        "backup.created",
        { sessionName: agentName },
        { handle, tenant: "acme", environment: "prod", sessionName: agentName, expiresAt: Date.now() + 7 * 86_400_000, bytes: r.int(1_000, 500_000) },
        [0, 0],
      );
      return;
    }
  }
}

/** Mean events per life of the mix's weighted shapes, estimated from a fixed sample (so the rate comes out as asked). */
export function meanEventsPerLife(mix: Mix, samples = 4_000): number {
  const r = new SeededRandom(7);
  const shapes = weightedShapes(mix);
  let n = 0;
  for (let i = 0; i < samples; i++) {
    const w = new LifeWriter(r, mix);
    writeLife(r.weighted(shapes), w, { src: { agentClass: "A", agentName: "a" }, turnSeq: 0 });
    n += w.out.length;
  }
  return n / samples;
}

const weightedShapes = (mix: Mix) => LIFE_SHAPES.filter((s) => (mix.lives[s] ?? 0) > 0).map((s) => [s, mix.lives[s]!] as const);

/** The event types a mix produces, as shares of all events (from a fixed sample): printed so a mix can be checked against its source. */
export function typeShares(mix: Mix, samples = 4_000): Record<string, number> {
  const r = new SeededRandom(11);
  const shapes = weightedShapes(mix);
  const counts: Record<string, number> = {};
  let n = 0;
  for (let i = 0; i < samples; i++) {
    const w = new LifeWriter(r, mix);
    writeLife(r.weighted(shapes), w, { src: { agentClass: "A", agentName: "a" }, turnSeq: 0 });
    for (const d of w.out) counts[d.type] = (counts[d.type] ?? 0) + 1;
    n += w.out.length;
  }
  return Object.fromEntries(
    Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([t, c]) => [t, c / n]),
  );
}

/**
 * The fleet's event stream. `t0` is the wall-clock epoch of simulated time 0: events carry real times, so
 * ingest's time window accepts them and the console shows them as recent.
 */
export class Fleet {
  readonly agents: Agent[];
  readonly picks: Picks;
  private readonly r: SeededRandom;
  private readonly shapes: (readonly [LifeShape, number])[];
  /** Mean gap between two lives of one agent, in ms. */
  private readonly lifeGapMs: number;
  events = 0;
  /** What a store writing only state changes would write for these events (floor.ts). */
  readonly floor = new FloorCounter();
  /** Checkpoints coalesced away before numbering (never sent). */
  coalesced = 0;
  messages = 0;
  bytes = 0;

  constructor(
    readonly mix: Mix,
    opts: { agents: number; ratePerAgentPerMinute: number; t0: number; seed: number; namePrefix: string },
  ) {
    this.r = new SeededRandom(opts.seed);
    this.shapes = weightedShapes(mix);
    this.lifeGapMs = (60_000 * meanEventsPerLife(mix)) / opts.ratePerAgentPerMinute;
    this.agents = Array.from({ length: opts.agents }, (_, i) => ({
      src: fleetAgent(mix, i, opts.namePrefix),
      seq: 0,
      turnSeq: 0,
      // Spread first lives over one gap, so the fleet starts at its steady rate.
      nextLifeAt: opts.t0 + this.r.next() * this.lifeGapMs,
      pending: [],
      flush: null,
    }));
    this.picks = { incidentId: null, fiberId: null, sessionName: null };
  }

  /** Every message whose flush closes before `until` (epoch ms), in send order. */
  advance(until: number): SimMessage[] {
    const out: SimMessage[] = [];
    const delay = this.mix.flushDelayMs;
    for (const a of this.agents) {
      let added = false;
      while (a.nextLifeAt < until) {
        const w = new LifeWriter(this.r, this.mix);
        const shape = this.r.weighted(this.shapes);
        writeLife(shape, w, a);
        for (const d of w.out) {
          const time = Math.floor(a.nextLifeAt + d.dt);
          a.pending.push({ v: SCHEMA_VERSION, id: newEventId(time), time, type: d.type, source: a.src, corr: d.corr, payload: d.payload } as TelemetryEvent);
        }
        this.pick(shape, a, w.out);
        added = true;
        a.nextLifeAt += -Math.log(1 - this.r.next()) * this.lifeGapMs;
      }
      if (added) a.pending.sort((x, y) => x.time - y.time);
      let i = 0;
      for (; i < a.pending.length && a.pending[i]!.time < until; i++) {
        const e = a.pending[i]!;
        if (a.flush && e.time > a.flush.start + delay) out.push(...this.close(a));
        const f = (a.flush ??= { start: e.time, events: [] as (TelemetryEvent | null)[], held: new Map<string, number>() });
        const fiberId = e.corr.fiberId;
        if (fiberId) {
          const held = f.held.get(fiberId);
          if (e.type === "fiber.stashed" && held !== undefined) f.events[held] = null;
          if (e.type === "fiber.stashed") f.held.set(fiberId, f.events.length);
          else f.held.delete(fiberId);
        }
        f.events.push(e);
      }
      if (i) a.pending.splice(0, i);
      if (a.flush && a.flush.start + delay < until) out.push(...this.close(a));
    }
    return out.sort((x, y) => x.sendAt - y.sendAt);
  }

  /** Whether any agent still has events or an open flush (after the last life started). */
  get drained(): boolean {
    return this.agents.every((a) => !a.pending.length && !a.flush);
  }

  /** Stops new lives: what is under way still finishes (so the store is not left with lives cut in half). */
  stopLives(): void {
    for (const a of this.agents) a.nextLifeAt = Number.POSITIVE_INFINITY;
  }

  private close(a: Agent): SimMessage[] {
    const f = a.flush!;
    a.flush = null;
    const kept = f.events.filter((e): e is TelemetryEvent => e !== null);
    this.floor.message(kept);
    const times = kept.map((e) => e.time);
    // The outbox ships a flush as packed messages (several only past the Queue's message budget).
    const bodies = packBodies(kept.map((e) => JSON.stringify({ ...e, seq: ++a.seq })));
    const sendAt = f.start + this.mix.flushDelayMs;
    this.events += times.length;
    this.coalesced += f.events.length - kept.length;
    this.messages += bodies.length;
    let from = 0;
    return bodies.map((body) => {
      const n = bodies.length === 1 ? times.length : (JSON.parse(body) as unknown[]).length;
      const bytes = utf8Length(body);
      this.bytes += bytes;
      return { sendAt, body, bytes, eventTimes: times.slice(from, (from += n)) };
    });
  }

  private pick(shape: LifeShape, a: Agent, drafts: Draft[]): void {
    const p = this.picks;
    if (shape === "chatExhaustion") p.incidentId ??= drafts.find((d) => d.corr.incidentId)?.corr.incidentId ?? null;
    if (shape === "fiberRecovery") p.fiberId ??= drafts[0]?.corr.fiberId ?? null;
    if (shape === "sessionTurn") p.sessionName ??= a.src.agentName;
  }
}
