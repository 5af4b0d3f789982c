import { BoundedMap, idString } from "./bounded-map.js";
import type { TelemetryEvent } from "./envelope.js";

/**
 * One user turn, however many times the SDK runs it, for events captured from the tail (tail.ts). Think and
 * AIChatAgent recover an interrupted or stalled chat turn by running a NEW turn, under its own request id, that
 * continues it; a sub-agent runs each as a fiber `__cf_internal_chat_turn:<requestId>`. On the outbox path the agent
 * tells which user turn a recovery turn serves (chat-turns.ts reads the SDK's recovery root in the agent); at the
 * tail only the SDK's messages are there, and they carry the link in two places (agents 0.32, Think 0.23):
 *
 * - every `chat:recovery:*` message carries `incidentId`, which the SDK builds as `<recovery root>:<latest user
 *   message id>` (request ids are UUIDs or nanoids, without a colon), and `requestId`, the run being recovered;
 * - a recovery turn starts with `chat:turn:start` whose trigger is `recovery-continue` (`continuation: true`) or
 *   `recovery-retry` (`continuation: false`: it runs the user's message again), inside the recovery Task the SDK
 *   queued right after its `chat:recovery:scheduled`: the user turn scheduled last in that agent is the one it
 *   continues (the SDK runs an agent's turns one at a time, through its turn queue).
 *
 * This class, fed every captured event in order, stamps what chat-turns.ts stamps, so ingest folds them the same way:
 * `rootRequestId` on the events of a recovery turn (its start, finish and fiber) and on chat-recovery events,
 * `turnAttempt` on a recovery turn's start (2 for the first), `recovering` / `sealed` on a finish when the SDK had
 * already scheduled or exhausted the user turn's recovery. A chat-turn fiber's end after the SDK gave up on the turn
 * is dropped: the aborted recovery turn's fiber "completing" is not the turn's end (the exhaustion is).
 *
 * What it knows lives in the console's tail isolate: the messages of one recovery can span invocations (a recovery
 * scheduled in one, its turn run in the next), so a tail isolate replaced between them leaves that recovery turn
 * unlinked; it then shows as a chat turn of its own, named by its own request id.
 */

/** Entries kept per map; older ones are forgotten first (a recovery long over needs none). */
const MAX_TRACKED = 5000;

const str = idString;

/** The user turn an incident recovers, read from the id the SDK built: `<recovery root>:<latest user message id>`. */
export function incidentRoot(incidentId: string | undefined, requestId: string | undefined): string | null {
  if (!incidentId) return null;
  if (requestId && incidentId.startsWith(`${requestId}:`)) return requestId;
  const at = incidentId.indexOf(":");
  return at > 0 ? str(incidentId.slice(0, at)) : null;
}

export class TailChatTurns {
  /** agent + request id → the user turn it runs for (only where they differ). */
  readonly #root = new BoundedMap<string>(MAX_TRACKED);
  /** agent → the user turn whose recovery the SDK scheduled last and no recovery turn has started for yet. */
  readonly #pending = new BoundedMap<string>(MAX_TRACKED);
  /** agent + user turn → how many runs of it started (the turn itself is 1). */
  readonly #runs = new BoundedMap<number>(MAX_TRACKED);
  /** agent + user turn: recovery scheduled and not yet started; recovery exhausted. */
  readonly #recovering = new BoundedMap<true>(MAX_TRACKED);
  readonly #sealed = new BoundedMap<true>(MAX_TRACKED);

  /**
   * Stamps one normalised event (mutating it) with the user turn it belongs to. `worker` is the trace item's Worker
   * (null locally). Returns false when the event says nothing true of the turn (see the class comment).
   */
  annotate(e: TelemetryEvent, worker: string | null): boolean {
    const agent = `${worker ?? ""}\0${e.source.agentClass}\0${e.source.agentName}`;
    const p = e.payload as Record<string, unknown>;
    const req = e.corr.requestId;
    if (e.type.startsWith("chat.recovery.")) {
      this.#recovery(agent, e, p);
      return true;
    }
    if (e.type === "chat.turn.started") {
      if (req) this.#start(agent, req, p);
      return true;
    }
    if (e.type === "chat.turn.finished") {
      if (!req) return true;
      const root = this.#rootOf(agent, req);
      if (root !== req) p.rootRequestId = root;
      if (this.#sealed.has(`${agent}\0${root}`)) p.sealed = true;
      else if (this.#recovering.has(`${agent}\0${root}`)) p.recovering = true;
      return true;
    }
    if (e.type.startsWith("fiber.") && p.kind === "chat_turn" && req) {
      const root = this.#rootOf(agent, req);
      if (root !== req) p.rootRequestId = root;
      if ((e.type === "fiber.completed" || e.type === "fiber.failed") && this.#sealed.has(`${agent}\0${root}`)) return false;
    }
    return true;
  }

  #rootOf(agent: string, req: string): string {
    return this.#root.get(`${agent}\0${req}`) ?? req;
  }

  #start(agent: string, req: string, p: Record<string, unknown>): void {
    let root = this.#root.get(`${agent}\0${req}`) ?? null;
    // Think names a recovery turn by its trigger (`recovery-continue`, `recovery-retry`: a retry is not a
    // continuation); without a trigger, a continuation is taken for one.
    const trigger = typeof p.trigger === "string" ? p.trigger : null;
    if (!root && (trigger ? trigger.startsWith("recovery-") : p.continuation === true)) {
      root = this.#pending.get(agent) ?? null;
      if (root === req) root = null;
      if (root) this.#root.set(`${agent}\0${req}`, root);
    }
    if (!root) {
      this.#runs.set(`${agent}\0${req}`, this.#runs.get(`${agent}\0${req}`) ?? 1);
      return;
    }
    this.#pending.delete(agent);
    this.#recovering.delete(`${agent}\0${root}`);
    const n = (this.#runs.get(`${agent}\0${root}`) ?? 1) + 1;
    this.#runs.set(`${agent}\0${root}`, n);
    p.rootRequestId = root;
    p.turnAttempt = n;
  }

  #recovery(agent: string, e: TelemetryEvent, p: Record<string, unknown>): void {
    const req = e.corr.requestId;
    const root = str(p.rootRequestId) ?? (req ? (this.#root.get(`${agent}\0${req}`) ?? null) : null) ?? incidentRoot(e.corr.incidentId, req);
    if (!root) return;
    p.rootRequestId = root;
    if (req && req !== root) this.#root.set(`${agent}\0${req}`, root);
    const key = `${agent}\0${root}`;
    switch (e.type) {
      case "chat.recovery.scheduled":
        this.#pending.set(agent, root);
        this.#recovering.set(key, true);
        break;
      case "chat.recovery.exhausted":
        this.#sealed.set(key, true);
        this.#recovering.delete(key);
        break;
      case "chat.recovery.failed":
        if (this.#sealed.has(key)) p.sealed = true;
        this.#recovering.delete(key);
        break;
      case "chat.recovery.completed":
      case "chat.recovery.skipped":
        this.#recovering.delete(key);
        break;
    }
  }
}

/** The tail handler's memory of chat turns under recovery: one per console isolate (see the class comment). */
export const tailChatTurns = new TailChatTurns();
