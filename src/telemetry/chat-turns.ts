import { BoundedMap, idString } from "./bounded-map.js";
import type { TelemetryEvent } from "./envelope.js";
import type { SqlLike } from "./outbox.js";
import { CHAT_TURN_NAME, isInternalSdkName } from "./sdk-names.js";

/**
 * One user turn, however many times the SDK runs it. Think and AIChatAgent recover an interrupted or stalled chat
 * turn by running a NEW turn (its own request id) that continues it, driven by an internal Tasks run; the SDK's
 * events name each piece by its own id. Only the agent can say which user turn a piece belongs to (the SDK's
 * `recoveryRootRequestId`), so this class, fed every normalised SDK event in order, stamps:
 *
 * - `rootRequestId` on the events of a recovery turn, its fibers and stashes, its chat-recovery events and the
 *   SDK's recovery Tasks runs (`internal`, with the incident id: their waits, interruptions and failures are
 *   evidence on its timeline; their acceptance, start and completion say nothing new and are dropped), so the
 *   console folds them into the user's turn;
 * - `turnAttempt` on a recovery turn's start: which run of the user's turn it is (2 for its first recovery),
 *   counted durably in the agent's SQLite (one row per turn under recovery, removed when its recovery ends);
 * - `recovering` / `sealed` on a turn's finish and `sealed` on a chat-recovery failure, where the SDK had already
 *   scheduled recovery for the turn (its status then is not the turn's end) or exhausted it (its end is the
 *   exhaustion);
 * - `corr.requestId` on the events of the Tasks run that carries a chat turn, from the run's own metadata, so its
 *   interruptions are on the turn's timeline. For agents that report no chat:turn events (AIChatAgent), that
 *   run's acceptance is the turn's start; its attempt starts and completion say nothing and are dropped, as is
 *   its acceptance where the SDK reported the turn's start itself (Think).
 *
 * Where the root comes from, most direct first: the SDK's own payload (chat:recovery:exhausted carries it), the
 * snapshot the SDK hands the recovery hook (`noteRecoveredTurn`), the recovery Task's input (its
 * `originalRequestId`), the SDK's recovery root while a recovery callback runs (`ChatTurnProbe.activeRecoveryRoot`),
 * and the incident id, which the SDK builds as `<root>:<latest user message id>`.
 */

/** What the agent can tell about its chat turns that the SDK's events do not carry (see with-telemetry.ts). */
export type ChatTurnProbe = {
  /** The user turn a recovery under way continues (the SDK's recovery root while a recovery callback runs). */
  activeRecoveryRoot(): string | null;
  /** A Tasks run's metadata and input (its row exists while any of its events is emitted). */
  taskRun(runId: string): { metadata: unknown; input: unknown } | null;
};

/** Entries kept per map; older ones are forgotten first (a turn whose events all came long ago needs none). */
const MAX_TRACKED = 1000;
const RUNS_TABLE = "cf_telemetry_turn_runs";
/** A counted turn nobody finished (the SDK sweeps its recovery records after an hour without activity) is dropped. */
const RUNS_TTL_MS = 60 * 60_000;
/**
 * A carrier's events that say nothing about its turn: its attempt starting and its completion (the turn reports
 * its own end, or `onChatResponse` does). Its acceptance is the turn's start only where the SDK reports none.
 */
const CARRIER_SILENT = new Set<TelemetryEvent["type"]>(["task.attempt.started", "task.completed"]);

const str = idString;
const obj = (v: unknown): Record<string, unknown> | null => {
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
};

/**
 * The request id and recovery root the SDK wrote into a chat turn's recovery snapshot: an envelope whose one
 * object value carries `requestId` and `recoveryRootRequestId` (Think's `__cfThinkChatFiberSnapshot`,
 * AIChatAgent's `__cfAIChatFiberSnapshot`, agents 0.32).
 */
export function chatSnapshotRoot(snapshot: unknown): { requestId: string; root: string } | null {
  const envelope = obj(snapshot);
  if (!envelope) return null;
  for (const [key, inner] of Object.entries(envelope)) {
    if (!key.endsWith("ChatFiberSnapshot")) continue;
    const s = obj(inner);
    const requestId = str(s?.requestId);
    const root = str(s?.recoveryRootRequestId);
    if (requestId && root) return { requestId, root };
  }
  return null;
}

export class ChatTurns {
  /** request id → the user turn it runs for (only where they differ). */
  readonly #root = new BoundedMap<string>(MAX_TRACKED);
  /** incident id → the user turn it recovers. */
  readonly #incidentRoot = new BoundedMap<string>(MAX_TRACKED);
  /** Tasks run id → what it is: a chat turn's carrier (its request id) or the SDK's other machinery. */
  readonly #taskRuns = new BoundedMap<{ requestId: string | null; root: string | null; incidentId: string | null; carrier: boolean }>(MAX_TRACKED);
  /** Request ids whose chat:turn:start the SDK reported (Think does; AIChatAgent does not). */
  readonly #native = new BoundedMap<true>(MAX_TRACKED);
  /** User turns with a recovery scheduled and not yet started, and those whose recovery the SDK exhausted. */
  readonly #recovering = new BoundedMap<true>(MAX_TRACKED);
  readonly #sealed = new BoundedMap<true>(MAX_TRACKED);
  #runsReady = false;
  /** The last failure the SDK reported for a request (chat:request:failed), for a finish that names none. */
  readonly #failure = new BoundedMap<string>(MAX_TRACKED);

  constructor(
    private readonly probe: ChatTurnProbe,
    private readonly sql: SqlLike | null,
  ) {}

  /** The user turn `requestId` runs for. */
  rootOf(requestId: string): string {
    return this.#root.get(requestId) ?? requestId;
  }

  /** The recovery hook got a chat turn's snapshot: it names the turn and the user turn it runs for. */
  noteRecoveredTurn(snapshot: unknown): void {
    const s = chatSnapshotRoot(snapshot);
    if (s && s.root !== s.requestId) this.#root.set(s.requestId, s.root);
  }

  /**
   * The SDK reported a chat request's failure (`chat:request:failed`, with its error, already masked and capped):
   * Think's turn then finishes `error` without saying why; its finish carries this error instead.
   */
  noteFailure(requestId: string, error: string): void {
    this.#failure.set(requestId, error);
  }

  /**
   * Stamps one normalised SDK event (mutating it) with what this agent knows of the turn it belongs to.
   * Returns false when the event says nothing the console needs (a carrier's redundant lifecycle).
   */
  annotate(e: TelemetryEvent): boolean {
    const p = e.payload as Record<string, unknown>;
    const req = e.corr.requestId;
    switch (e.type) {
      case "chat.turn.started": {
        if (!req) return true;
        this.#native.set(req, true);
        this.#startTurn(req, p);
        return true;
      }
      case "chat.turn.finished": {
        if (!req) return true;
        this.#finishTurn(req, p);
        return true;
      }
      case "fiber.started":
      case "fiber.completed":
      case "fiber.failed":
      case "fiber.interrupted":
      case "fiber.stashed":
        if (req && p.kind === "chat_turn") this.#stampRoot(req, p);
        return true;
      default:
        if (e.type.startsWith("task.")) return this.#task(e, p);
        if (e.type.startsWith("chat.recovery.")) this.#recovery(e, p);
        return true;
    }
  }

  /**
   * The SDK's word on how a chat turn ended, for agents whose SDK reports no chat:turn:finish (AIChatAgent's
   * `onChatResponse` result): the event to ship in its shape, or null when the SDK reported it itself.
   */
  responseAsFinish(result: { requestId?: unknown; status?: unknown; error?: unknown; continuation?: unknown }): Record<string, unknown> | null {
    const requestId = str(result.requestId);
    const status = str(result.status);
    if (!requestId || !status || this.#native.has(requestId)) return null;
    return {
      requestId,
      status,
      ...(typeof result.error === "string" ? { error: result.error } : {}),
      ...(result.continuation === true ? { continuation: true } : {}),
    };
  }

  #startTurn(req: string, p: Record<string, unknown>): void {
    const active = this.probe.activeRecoveryRoot();
    const root = active && active !== req ? active : this.#root.get(req);
    if (!root) return;
    this.#root.set(req, root);
    this.#recovering.delete(root);
    p.rootRequestId = root;
    const n = this.#countRun(root);
    if (n !== null) p.turnAttempt = n;
  }

  #finishTurn(req: string, p: Record<string, unknown>): void {
    const failure = this.#failure.get(req);
    this.#failure.delete(req);
    if (p.status === "error" && p.error === undefined && failure) p.error = failure;
    const root = this.rootOf(req);
    if (root !== req) p.rootRequestId = root;
    if (this.#sealed.has(root)) p.sealed = true;
    else if (this.#recovering.has(root)) p.recovering = true;
  }

  #stampRoot(req: string, p: Record<string, unknown>): void {
    const root = this.rootOf(req);
    if (root !== req) p.rootRequestId = root;
  }

  #task(e: TelemetryEvent, p: Record<string, unknown>): boolean {
    const runId = e.corr.taskId;
    const definition = typeof p.definition === "string" ? p.definition : "";
    if (!runId || !isInternalSdkName(definition)) return true;
    let known = this.#taskRuns.get(runId);
    if (!known) {
      const row = this.probe.taskRun(runId);
      const meta = obj(row?.metadata);
      const data = obj(obj(row?.input)?.data);
      const carrier = definition === CHAT_TURN_NAME;
      const requestId = carrier ? str(meta?.requestId) : null;
      const incidentId = str(meta?.incidentId) ?? str(data?.incidentId);
      const root = carrier ? null : (str(data?.originalRequestId) ?? (incidentId ? (this.#incidentRoot.get(incidentId) ?? null) : null));
      if (incidentId && root) this.#incidentRoot.set(incidentId, root);
      known = { requestId, root, incidentId, carrier };
      this.#taskRuns.set(runId, known);
    }
    if (!known.carrier) {
      // The SDK's recovery transport (or other machinery): never a run of its own. Its acceptance, start and
      // completion repeat the chat.recovery.* events; its waits, interruptions and failures go on the incident's timeline.
      if (e.type === "task.accepted" || CARRIER_SILENT.has(e.type)) return false;
      p.internal = true;
      if (known.incidentId) e.corr.incidentId = known.incidentId.slice(0, 200);
      if (known.root) p.rootRequestId = known.root;
      return true;
    }
    const req = known.requestId;
    if (CARRIER_SILENT.has(e.type)) return false;
    if (!req) return e.type !== "task.accepted";
    e.corr.requestId = req;
    if (e.type !== "task.accepted") this.#stampRoot(req, p);
    else if (this.#native.has(req)) return false;
    // No chat:turn events from this SDK: the carrier's acceptance is the turn's start.
    else this.#startTurn(req, p);
    return true;
  }

  #recovery(e: TelemetryEvent, p: Record<string, unknown>): void {
    const inc = e.corr.incidentId;
    const req = e.corr.requestId;
    const given = str(p.rootRequestId);
    const active = this.probe.activeRecoveryRoot();
    const root =
      given ??
      (inc ? this.#incidentRoot.get(inc) : undefined) ??
      (req ? this.#root.get(req) : undefined) ??
      (req && inc?.startsWith(`${req}:`) ? req : undefined) ??
      active ??
      null;
    if (!root) return;
    if (inc) this.#incidentRoot.set(inc, root);
    p.rootRequestId = root;
    switch (e.type) {
      case "chat.recovery.scheduled":
        this.#recovering.set(root, true);
        break;
      case "chat.recovery.exhausted":
        this.#sealed.set(root, true);
        this.#recovering.delete(root);
        this.#forgetRuns(root);
        break;
      case "chat.recovery.failed":
        if (this.#sealed.has(root)) p.sealed = true;
        this.#recovering.delete(root);
        break;
      case "chat.recovery.completed":
      case "chat.recovery.skipped":
        this.#recovering.delete(root);
        this.#forgetRuns(root);
        break;
    }
  }

  /** Counts one more run of `root` (the turn itself is run 1) in the agent's SQLite, so an eviction keeps the count. */
  #countRun(root: string): number | null {
    if (!this.sql) return null;
    try {
      const now = Date.now();
      if (!this.#runsReady) {
        this.sql.exec(`CREATE TABLE IF NOT EXISTS ${RUNS_TABLE} (root TEXT PRIMARY KEY, runs INTEGER NOT NULL, at INTEGER NOT NULL)`);
        this.#runsReady = true;
      }
      this.sql.exec(`DELETE FROM ${RUNS_TABLE} WHERE at < ?`, now - RUNS_TTL_MS);
      const row = this.sql
        .exec<{ runs: number }>(
          `INSERT INTO ${RUNS_TABLE} (root, runs, at) VALUES (?, 2, ?) ON CONFLICT(root) DO UPDATE SET runs = runs + 1, at = excluded.at RETURNING runs`,
          root,
          now,
        )
        .toArray()[0];
      return row ? Number(row.runs) : null;
    } catch {
      return null;
    }
  }

  #forgetRuns(root: string): void {
    if (!this.sql) return;
    try {
      this.sql.exec(`DELETE FROM ${RUNS_TABLE} WHERE root = ?`, root);
    } catch {
      /* no table yet (nothing counted), or storage failed: a leftover row expires with RUNS_TTL_MS */
    }
  }
}

/**
 * A Tasks run's metadata and input, read from the SDK's own table (`cf_agents_task_runs`, agents 0.32): its events
 * carry neither, and the public `tasks.get` is asynchronous where events are handled synchronously. Null when the
 * run or the table is gone.
 */
export function readTaskRun(sql: SqlLike, runId: string): { metadata: unknown; input: unknown } | null {
  try {
    const [row] = sql
      .exec<{ metadata: string | null; input: string | null }>("SELECT metadata, input FROM cf_agents_task_runs WHERE run_id = ?", runId)
      .toArray();
    return row ? { metadata: row.metadata, input: row.input } : null;
  } catch {
    return null;
  }
}
