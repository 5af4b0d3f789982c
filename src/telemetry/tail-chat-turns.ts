import { BoundedMap, idString } from "./bounded-map.js";
import type { TelemetryEvent } from "./envelope.js";
import type { Masker } from "./redact.js";
import { CHAT_RECOVERY_TASK_NAME } from "./sdk-names.js";
import { capText } from "./sdk-payloads.js";

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
 * A top-level AIChatAgent (@cloudflare/ai-chat 0.12) publishes no request id for its turns at all: no chat:turn
 * events, an empty `message:response`, and a Tasks run per turn run (its carrier, `chat_<nonce>` of
 * `__cf_internal_chat_turn`) whose events carry only that run id. So the carrier's id is the turn's identity there:
 *
 * - a carrier accepted in an agent that never published `chat:turn:start` (Think publishes one before each of its
 *   carriers) is the start of a turn named by the carrier's id, unless it is accepted inside the attempt of the
 *   SDK's chat recovery Task (`__cf_internal_chat_recovery`) after a `chat:recovery:scheduled`: then it is that user
 *   turn's next run (the recovery Task's attempt runs the recovery up to the model's first call);
 * - the first `chat:recovery:detected|attempt|scheduled` of a user turn is published while its run's carrier is the
 *   one attempting (an eviction's replay, or the stall watchdog), so the request id the SDK names there (the root of
 *   its incident id) is that carrier's turn;
 * - the carrier's completion is the run's end (it completes whether the run ended or was routed into recovery), as
 *   a `chat.turn.finished` with what the run published: `message:error` (status `error`, with its text), else
 *   `message:response` (status `completed`: the SDK publishes it for an aborted stream too, so an abort reads
 *   completed here), else `unknown`; `recovering` / `sealed` as for any turn.
 *
 * Only carriers whose acceptance this isolate saw are taken for runs: a carrier's later events alone read the same for
 * a Think turn replayed after the tail isolate was replaced, so they are left as they were.
 *
 * What it knows lives in the console's tail isolate: the messages of one recovery can span invocations (a recovery
 * scheduled in one, its turn run in the next), so a tail isolate replaced between them leaves that recovery turn
 * unlinked; it then shows as a chat turn of its own, named by its own request id.
 */

/** Entries kept per map; older ones are forgotten first (a recovery long over needs none). */
const MAX_TRACKED = 5000;

const str = idString;

/** The chat-recovery events the SDK publishes from inside the run it recovers (an eviction's replay, a stall). */
const NAMED_IN_RUN: ReadonlySet<string> = new Set(["chat.recovery.detected", "chat.recovery.attempt", "chat.recovery.scheduled"]);

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
  /** agent → true once it published `chat:turn:start` (Think): its carriers say nothing its turn events do not. */
  readonly #native = new BoundedMap<true>(MAX_TRACKED);
  /** agent + carrier: AIChatAgent carriers whose acceptance was seen here (only those are taken for turn runs). */
  readonly #aiCarriers = new BoundedMap<true>(MAX_TRACKED);
  /** agent → the AIChatAgent carrier whose attempt runs now (the SDK runs an agent's turns one at a time). */
  readonly #current = new BoundedMap<string>(MAX_TRACKED);
  /** agent → the chat recovery Task whose attempt runs now: a carrier accepted inside it is a recovery run. */
  readonly #inRecovery = new BoundedMap<string>(MAX_TRACKED);
  /** agent + carrier → what its running attempt published of how the run ended. */
  readonly #said = new BoundedMap<{ status: "completed" | "error"; error?: string }>(MAX_TRACKED);

  /**
   * Takes in an SDK message that is not shipped but tells how an AIChatAgent run ended (`message:response`,
   * `message:error`). `agentName` is the agent's key name (sub-agents.ts), as the shipped events carry it.
   */
  hear(type: string, agentClass: string, agentName: string, payload: Record<string, unknown>, worker: string | null, mask: Masker): void {
    if (type !== "message:response" && type !== "message:error") return;
    const agent = `${worker ?? ""}\0${agentClass}\0${agentName}`;
    const carrier = this.#current.get(agent);
    if (!carrier) return;
    const key = `${agent}\0${carrier}`;
    if (type === "message:error") this.#said.set(key, { status: "error", ...(capText(payload.error, mask) ? { error: capText(payload.error, mask)! } : {}) });
    else if (!this.#said.has(key)) this.#said.set(key, { status: "completed" });
  }

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
      this.#native.set(agent, true);
      if (req) this.#start(agent, req, p);
      return true;
    }
    if (e.type.startsWith("task.")) {
      if (p.kind === "chat_turn") return this.#carrier(agent, e, p);
      if (p.definition === CHAT_RECOVERY_TASK_NAME) this.#recoveryTask(agent, e);
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
    this.#nextRun(agent, root, p);
  }

  /** A recovery run of the user turn `root` started: it is no longer pending, and this is its next attempt. */
  #nextRun(agent: string, root: string, p: Record<string, unknown>): void {
    this.#pending.delete(agent);
    this.#recovering.delete(`${agent}\0${root}`);
    const n = (this.#runs.get(`${agent}\0${root}`) ?? 1) + 1;
    this.#runs.set(`${agent}\0${root}`, n);
    p.rootRequestId = root;
    p.turnAttempt = n;
  }

  /**
   * An event of the Tasks run carrying a chat turn. Think's are said by its chat:turn events (its acceptance, attempt
   * starts and completion are dropped; the rest stay evidence). A top-level AIChatAgent's carrier is its run, named
   * by the carrier's id (see the class comment): its acceptance starts the run, its completion ends it.
   */
  #carrier(agent: string, e: TelemetryEvent, p: Record<string, unknown>): boolean {
    const carrier = e.corr.taskId;
    const said = e.type === "task.accepted" || e.type === "task.attempt.started" || e.type === "task.completed";
    if (this.#native.has(agent) || !carrier) return !said;
    const key = `${agent}\0${carrier}`;
    // A carrier whose acceptance this isolate never saw may be anyone's (a Think turn's replay after the tail isolate
    // was replaced reads the same): it is left as it was, never taken for a turn.
    if (e.type !== "task.accepted" && !this.#aiCarriers.has(key)) return !said;
    e.corr.requestId = carrier;
    if (e.type === "task.accepted") {
      this.#aiCarriers.set(key, true);
      const root = this.#inRecovery.has(agent) ? this.#pending.get(agent) : undefined;
      if (root && root !== carrier) {
        this.#root.set(key, root);
        this.#nextRun(agent, root, p);
      } else this.#runs.set(key, this.#runs.get(key) ?? 1);
      return true;
    }
    if (e.type === "task.attempt.started") {
      this.#current.set(agent, carrier);
      this.#said.delete(key);
      return false;
    }
    const root = this.#rootOf(agent, carrier);
    if (root !== carrier) p.rootRequestId = root;
    const ends = e.type === "task.completed" || e.type === "task.failed" || e.type === "task.cancelled";
    if (ends && this.#current.get(agent) === carrier) this.#current.delete(agent);
    if (ends) this.#aiCarriers.delete(key);
    const sealed = this.#sealed.has(`${agent}\0${root}`);
    if (e.type !== "task.completed") return !(ends && sealed);
    const word = this.#said.get(key);
    this.#said.delete(key);
    const finish: Record<string, unknown> = { status: word?.status ?? "unknown", ...(word?.error ? { error: word.error } : {}) };
    if (root !== carrier) finish.rootRequestId = root;
    if (sealed) finish.sealed = true;
    else if (this.#recovering.has(`${agent}\0${root}`)) finish.recovering = true;
    Object.assign(e, { type: "chat.turn.finished", payload: finish, corr: { requestId: carrier, taskId: carrier } });
    return true;
  }

  /** The SDK's chat recovery Task: while its attempt runs, a carrier accepted is the recovery's run. */
  #recoveryTask(agent: string, e: TelemetryEvent): void {
    const run = e.corr.taskId;
    if (!run) return;
    if (e.type === "task.attempt.started") this.#inRecovery.set(agent, run);
    else if (e.type !== "task.accepted" && e.type !== "task.waiting" && this.#inRecovery.get(agent) === run) this.#inRecovery.delete(agent);
  }

  #recovery(agent: string, e: TelemetryEvent, p: Record<string, unknown>): void {
    const req = e.corr.requestId;
    const named = str(p.rootRequestId) ?? (req ? (this.#root.get(`${agent}\0${req}`) ?? null) : null) ?? incidentRoot(e.corr.incidentId, req);
    if (!named) return;
    // A top-level AIChatAgent's turn is named by its carrier: the request id the SDK names is learnt here, from the
    // carrier attempting when the turn's recovery began (see the class comment).
    const carrier = this.#current.get(agent);
    if (carrier && NAMED_IN_RUN.has(e.type) && !this.#root.has(`${agent}\0${named}`)) {
      const turn = this.#rootOf(agent, carrier);
      if (turn !== named) this.#root.set(`${agent}\0${named}`, turn);
    }
    const root = this.#rootOf(agent, named);
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
