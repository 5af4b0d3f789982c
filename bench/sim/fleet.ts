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
import { fnv64, type TailItem, tailEventId } from "@agent-oncall/telemetry/tail";
import { SeededRandom } from "../../test/fixtures/seeded-random";
import { FloorCounter } from "./floor";
import { type CapturePath, LIFE_SHAPES, type LifeShape, type Mix } from "./mix";

/**
 * A simulated fleet: each agent lives the mix's shapes of work (a fiber with its stashes, a session turn with its
 * paid ops, a chat turn, a recovery, an exhaustion…) as valid contract events, shipped the way the mix's capture
 * path ships them:
 * - tail (the default): a life runs in one or more invocations of its agent (a recovery's events arrive in a later
 *   one, after the eviction); each invocation is a trace item, and the console's tail handler sends one Queue
 *   message per item that has events, unnumbered, with ids derived from the item (tailEventId), when the
 *   invocation ends. Every event is sent (a stash is the agent's own diagnostics message: nothing coalesces).
 * - outbox: numbered per agent (`seq`) and packed per agent per flush (packBodies): one Queue message holds one
 *   agent's flush. As the telemetry does, a fiber's checkpoints coalesce to the newest per flush (a held
 *   `fiber.stashed` is replaced by the next one, unless another event of that fiber came between), and numbers are
 *   given after that, so a coalesced checkpoint takes none.
 * Steady state from the first second: each agent's lives are a Poisson process started a warm-up before the run
 * (at least the longest life), and only events from the run's start on are sent, so the run begins with lives
 * under way at every phase, as a fleet that was already running has them. Time is generated slice by slice, so a
 * long run never holds its whole stream.
 */

/** The fleet's agent number `i`: its class (round robin over the mix's) and name. */
export const fleetAgent = (mix: Mix, i: number, namePrefix: string): Source => ({
  agentClass: mix.agentClasses[i % mix.agentClasses.length]!,
  agentName: `${namePrefix}-${String(i).padStart(5, "0")}`,
});

/**
 * The agent names' prefix of one simulator run, by seed and capture: `npm run bench` runs each mix on both tails with
 * one seed in one store, and agents a first run left in the registry would skew the second's (known-agents.ts). The
 * same length on every capture, so the runs' bytes compare.
 */
export const runNamePrefix = (seed: number, capture: CapturePath): string => `sim${seed}${capture.slice(0, 1)}`;

/**
 * A Queue message of the fleet: when it is sent (a tail item's delivery, or an outbox flush), its body and its events'
 * times. `deliveredAt` is the first send, kept when a retry moves `sendAt` (the lag split measures from it).
 */
export type SimMessage = { sendAt: number; body: string; bytes: number; eventTimes: number[]; deliveredAt?: number };

/** One event of a life: its offset from the life's start, and the invocation (trace item) of the life it lands in. */
type Draft = { dt: number; item: number; type: TelemetryEvent["type"]; corr: TelemetryEvent["corr"]; payload: unknown };

/** From the end of an agent's invocation to its trace item's Queue message being sent by the console's tail handler. */
export const TAIL_DELIVERY_MS = 50;

/**
 * The streaming tail's Queue messages for one invocation's events (worker/tail-stream.ts): each event reaches the
 * stream handler `deliveryMs` after it happened; a flush goes `flushMs` after the first event it holds, at `flushMax`
 * events, or at the invocation's end (its last event's delivery, the outcome), whichever is first.
 */
export function streamFlushes(
  events: readonly TelemetryEvent[],
  s: { deliveryMs: number; flushMs: number; flushMax: number },
): { sendAt: number; events: TelemetryEvent[] }[] {
  const out: { sendAt: number; events: TelemetryEvent[] }[] = [];
  if (!events.length) return out;
  const end = events.at(-1)!.time + s.deliveryMs;
  let i = 0;
  while (i < events.length) {
    const deadline = events[i]!.time + s.deliveryMs + s.flushMs;
    const group: TelemetryEvent[] = [];
    while (i < events.length && group.length < s.flushMax && events[i]!.time + s.deliveryMs <= deadline) group.push(events[i++]!);
    const full = group.length >= s.flushMax;
    const sendAt = full ? group.at(-1)!.time + s.deliveryMs : Math.min(deadline, end);
    out.push({ sendAt, events: group });
  }
  return out;
}

/** One thing the console pages open: its id and its agent, as the console's own links carry them. */
export type Pick = { id: string; agentClass: string; agentName: string };

/** What the fleet gives the console pages to open: ids that exist in the simulated store, with their agents. */
export type Picks = { incident: Pick | null; fiber: Pick | null; session: Pick | null };

type Agent = {
  src: Source;
  /** Its Durable Object id (the trace item's, tail path). */
  objectId: string;
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
  /** The invocation the next event lands in (cut() starts a new one). */
  item = 0;
  constructor(
    readonly r: SeededRandom,
    readonly mix: Mix,
  ) {}
  ev(type: Draft["type"], corr: Draft["corr"], payload: unknown, gapMs: readonly [number, number] = [5, 50]): void {
    this.t += this.r.int(gapMs[0], gapMs[1]);
    this.out.push({ dt: this.t, item: this.item, type, corr, payload });
  }
  /** The agent was evicted or went to sleep: what follows arrives in a later invocation (its alarm's, or the next call's). */
  cut(): void {
    this.item++;
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
      if (w.out.at(-1)?.type === "task.waiting") w.cut();
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
          w.cut();
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
      w.cut();
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
      // Evicted mid-stream: the recovery runs in the alarm's invocation, each further attempt after another eviction.
      w.cut();
      w.ev("chat.recovery.detected", corr, { ...base, attempt: 1 }, [500, 5_000]);
      const attempts = shape === "chatRecovery" ? 1 : 3;
      for (let a = 1; a <= attempts; a++) {
        if (a > 1) w.cut();
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

/**
 * Mean events per life of the mix's weighted shapes, and the longest life, estimated from a fixed sample (so the rate
 * comes out as asked, and the warm-up covers every life under way when the run starts).
 */
export function lifeStats(mix: Mix, samples = 4_000): { meanEvents: number; longestMs: number } {
  const r = new SeededRandom(7);
  const shapes = weightedShapes(mix);
  let n = 0;
  let longestMs = 0;
  for (let i = 0; i < samples; i++) {
    const w = new LifeWriter(r, mix);
    writeLife(r.weighted(shapes), w, { src: { agentClass: "A", agentName: "a" }, turnSeq: 0 });
    n += w.out.length;
    longestMs = Math.max(longestMs, w.t);
  }
  return { meanEvents: n / samples, longestMs };
}

/** Mean events per life of the mix's weighted shapes (lifeStats). */
export const meanEventsPerLife = (mix: Mix, samples = 4_000): number => lifeStats(mix, samples).meanEvents;

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

/** Events per second of the run, by the second they happened in (index 0 = the run's first second). */
export type RateBySecond = number[];

/** The mean rate (events/s) of each fifth of a run of `seconds`, from per-second counts. */
export function ratePerFifth(bySecond: RateBySecond, seconds: number): number[] {
  const fifth = seconds / 5;
  return [0, 1, 2, 3, 4].map((k) => {
    let n = 0;
    for (let s = Math.floor(k * fifth); s < Math.floor((k + 1) * fifth); s++) n += bySecond[s] ?? 0;
    return n / (Math.floor((k + 1) * fifth) - Math.floor(k * fifth) || 1);
  });
}

/**
 * The fleet's event stream. `t0` is the wall-clock epoch of simulated time 0, the run's start: events carry real
 * times, so ingest's time window accepts them and the console shows them as recent.
 */
export class Fleet {
  readonly agents: Agent[];
  readonly picks: Picks;
  readonly capture: CapturePath;
  private readonly r: SeededRandom;
  private readonly shapes: (readonly [LifeShape, number])[];
  /** Mean gap between two lives of one agent, in ms. */
  private readonly lifeGapMs: number;
  /** How long before the run the fleet's lives start (at least the longest life): events before t0 are not sent. */
  readonly warmupMs: number;
  /** Tail path: trace items (their events, and when their message is sent) not sent yet. */
  private tailPending: { sendAt: number; events: TelemetryEvent[] }[] = [];
  /** Events sent (after coalescing, outbox path). */
  events = 0;
  /** Events that happened from t0 on, per second (before coalescing): what the fleet offers. */
  readonly emittedBySecond: RateBySecond = [];
  /** What a store writing only state changes would write for these events (floor.ts). */
  readonly floor = new FloorCounter();
  /** Checkpoints coalesced away before numbering (never sent; outbox path). */
  coalesced = 0;
  messages = 0;
  /** Tail path: trace items (invocations) that carried events of the run. */
  items = 0;
  bytes = 0;

  constructor(
    readonly mix: Mix,
    private readonly opts: {
      agents: number;
      ratePerAgentPerMinute: number;
      t0: number;
      seed: number;
      namePrefix: string;
      capture?: CapturePath;
      /** The console's streaming flush (its configuration's, worker/config.ts): needed by the streaming capture. */
      streamFlush?: { flushMs: number; flushMax: number };
    },
  ) {
    this.r = new SeededRandom(opts.seed);
    this.capture = opts.capture ?? mix.capture;
    this.shapes = weightedShapes(mix);
    const stats = lifeStats(mix);
    this.lifeGapMs = (60_000 * stats.meanEvents) / opts.ratePerAgentPerMinute;
    // Both tails warm up alike, so they run the very same lives and give the same ids (a streaming flush pending at
    // the run's start is at most its flush time late to be counted: lives before t0 send nothing of their own).
    this.warmupMs = Math.ceil(stats.longestMs + (this.capture === "outbox" ? mix.outbox.flushDelayMs : TAIL_DELIVERY_MS));
    this.agents = Array.from({ length: opts.agents }, (_, i) => {
      const src = fleetAgent(mix, i, opts.namePrefix);
      return {
        src,
        objectId: fnv64(`${src.agentClass}\0${src.agentName}`).repeat(4),
        seq: 0,
        turnSeq: 0,
        // A Poisson process from the warm-up's start: its first life an exponential gap in, like every later one.
        nextLifeAt: opts.t0 - this.warmupMs + this.gap(),
        pending: [],
        flush: null,
      };
    });
    this.picks = { incident: null, fiber: null, session: null };
  }

  private gap(): number {
    return -Math.log(1 - this.r.next()) * this.lifeGapMs;
  }

  /** Every message sent before `until` (epoch ms), in send order. */
  /** The streaming flush the fleet was given; streaming without one would quietly send as the classic tail does. */
  private streamFlush(): { flushMs: number; flushMax: number } {
    if (!this.opts.streamFlush) throw new Error("the streaming capture needs the console's flush (opts.streamFlush: worker/config.ts, worker/tail-stream.ts)");
    return this.opts.streamFlush;
  }

  advance(until: number): SimMessage[] {
    return this.capture === "outbox" ? this.advanceOutbox(until) : this.advanceTail(until);
  }

  /** Counts an event the fleet offers (from t0 on) in its second. */
  private offered(time: number): boolean {
    if (time < this.opts.t0) return false;
    const s = Math.floor((time - this.opts.t0) / 1000);
    this.emittedBySecond[s] = (this.emittedBySecond[s] ?? 0) + 1;
    return true;
  }

  /** Tail path: each life's invocations become trace items; an item's events are one message when it ends. */
  private advanceTail(until: number): SimMessage[] {
    for (const a of this.agents) {
      while (a.nextLifeAt < until) {
        const start = a.nextLifeAt;
        const w = new LifeWriter(this.r, this.mix);
        const shape = this.r.weighted(this.shapes);
        writeLife(shape, w, a);
        this.pick(shape, a, w.out);
        a.nextLifeAt += this.gap();
        for (let k = 0; k <= w.item; k++) {
          const drafts = w.out.filter((d) => d.item === k);
          if (!drafts.length) continue;
          const times = drafts.map((d) => Math.floor(start + d.dt));
          // The item as the runtime hands it over: this agent's object, this invocation's start.
          const item: TailItem = {
            scriptName: "sim-fleet",
            durableObjectId: a.objectId,
            eventTimestamp: times[0]!,
            truncated: false,
            entrypoint: a.src.agentClass,
          };
          const all = drafts.map((d, index) => {
            const time = times[index]!;
            const e = { v: SCHEMA_VERSION, id: "", time, type: d.type, source: a.src, corr: d.corr, payload: d.payload } as TelemetryEvent;
            e.id = tailEventId(item, index, time, JSON.stringify([d.type, d.corr, d.payload]));
            return e;
          });
          // Classic: one message when the invocation ends (its last event). Streaming: the stream handler's flushes.
          const groups =
            this.capture === "streaming" && this.mix.streaming
              ? streamFlushes(all, { deliveryMs: this.mix.streaming.deliveryMs, ...this.streamFlush() })
              : [{ sendAt: times.at(-1)! + TAIL_DELIVERY_MS, events: all }];
          for (const g of groups) {
            const events = g.events.filter((e) => this.offered(e.time));
            if (events.length) this.tailPending.push({ sendAt: g.sendAt, events });
          }
        }
      }
    }
    const due = this.tailPending.filter((m) => m.sendAt < until).sort((x, y) => x.sendAt - y.sendAt);
    this.tailPending = this.tailPending.filter((m) => m.sendAt >= until);
    this.items += due.length;
    return due.flatMap((m) => this.ship(m.events, m.sendAt, (e) => JSON.stringify(e)));
  }

  /** Outbox path: numbered, packed per agent per flush, checkpoints coalesced. */
  private advanceOutbox(until: number): SimMessage[] {
    const out: SimMessage[] = [];
    const delay = this.mix.outbox.flushDelayMs;
    for (const a of this.agents) {
      let added = false;
      while (a.nextLifeAt < until) {
        const w = new LifeWriter(this.r, this.mix);
        const shape = this.r.weighted(this.shapes);
        writeLife(shape, w, a);
        for (const d of w.out) {
          const time = Math.floor(a.nextLifeAt + d.dt);
          if (!this.offered(time)) continue;
          a.pending.push({ v: SCHEMA_VERSION, id: newEventId(time), time, type: d.type, source: a.src, corr: d.corr, payload: d.payload } as TelemetryEvent);
        }
        this.pick(shape, a, w.out);
        added = true;
        a.nextLifeAt += this.gap();
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

  /**
   * The run ends at `end` (after advance(end)): every event that happened before it still leaves, in the message it
   * would have left in (a trace item's when its invocation ends, cut to what happened before the end; a flush
   * closed), so what the run stores is what it offered, not less by the lives the end cut in half.
   */
  finish(end: number): SimMessage[] {
    if (this.capture !== "outbox") {
      const due = this.tailPending
        .map((m) => ({ sendAt: m.sendAt, events: m.events.filter((e) => e.time < end) }))
        .filter((m) => m.events.length)
        .sort((x, y) => x.sendAt - y.sendAt);
      this.tailPending = [];
      this.items += due.length;
      return due.flatMap((m) => this.ship(m.events, m.sendAt, (e) => JSON.stringify(e)));
    }
    const out: SimMessage[] = [];
    for (const a of this.agents) {
      a.pending = [];
      if (a.flush) out.push(...this.close(a));
    }
    return out.sort((x, y) => x.sendAt - y.sendAt);
  }

  /** Whether any agent still has events or an open flush (after the last life started). */
  get drained(): boolean {
    return !this.tailPending.length && this.agents.every((a) => !a.pending.length && !a.flush);
  }

  /** Stops new lives: what is under way still finishes (so the store is not left with lives cut in half). */
  stopLives(): void {
    for (const a of this.agents) a.nextLifeAt = Number.POSITIVE_INFINITY;
  }

  private close(a: Agent): SimMessage[] {
    const f = a.flush!;
    a.flush = null;
    const kept = f.events.filter((e): e is TelemetryEvent => e !== null);
    this.coalesced += f.events.length - kept.length;
    return this.ship(kept, f.start + this.mix.outbox.flushDelayMs, (e) => JSON.stringify({ ...e, seq: ++a.seq }));
  }

  /** Events leaving as Queue messages at `sendAt`, packed as both paths pack them (several only past the message budget). */
  private ship(kept: TelemetryEvent[], sendAt: number, text: (e: TelemetryEvent) => string): SimMessage[] {
    this.floor.message(kept);
    const times = kept.map((e) => e.time);
    const bodies = packBodies(kept.map(text));
    this.events += times.length;
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
    const of = (id: string | undefined): Pick | null => (id ? { id, agentClass: a.src.agentClass, agentName: a.src.agentName } : null);
    if (shape === "chatExhaustion") p.incident ??= of(drafts.find((d) => d.corr.incidentId)?.corr.incidentId);
    if (shape === "fiberRecovery") p.fiber ??= of(drafts[0]?.corr.fiberId);
    // The sim's sessions are named after their agent (one per agent).
    if (shape === "sessionTurn") p.session ??= of(drafts.find((d) => d.corr.sessionName)?.corr.sessionName);
  }
}
