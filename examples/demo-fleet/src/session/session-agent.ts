import { type ResolveOpHookResult, type ResolveOpRequest, withAdminRpc } from "@agent-oncall/admin-rpc";
import { turnIncidentId, withTelemetry } from "@agent-oncall/telemetry";
import { otlpTracing } from "@agent-oncall/telemetry/otlp";
import { Agent, type FiberRecoveryContext } from "agents";
import type { Env } from "../env";
import type { ModelRequest, SessionModel, SessionTool } from "./model";
import { AmbiguousOpError, type LedgerOp, OpLedger, type OpPoint } from "./op-ledger";
import { DEFAULT_SCRIPT, ScriptedModel, type TurnScript } from "./scripted-model";
import { deriveStatus, type SessionStatus } from "./status";
import { ensureSessionTables, meta } from "./store";
import { Workspace } from "./workspace";

/** Fiber name of a session turn; recovery recognises turns by it. */
export const TURN_FIBER = "session-turn";
/** A turn is recovered at most this many times; the next recovery forces the session idle. */
export const MAX_TURN_RECOVERIES = 5;

/** What a session call answers: a value, or an error a person can read. */
export type SessionResult<T> = { ok: true; value: T } | { ok: false; error: { code: "terminated" | "busy" | "invalid_input" | "not_found"; message: string } };

/** Points in a turn where tests and the demo inject evictions. `turn_start` recurs on every recovery (a poison turn). */
export type TurnPoint = OpPoint | "turn_start" | "mid_stream" | "after_turn";

type TurnSnapshot = { turnSeq: number; step: number; pendingTool: string | null; streamedChars: number };

/**
 * The observed runtime: a session on the agents SDK whose status is derived,
 * whose turns run as durable fibers with checkpoints, recover at most five
 * times, and route every paid operation through the op ledger.
 * It stays on the opt-in telemetry mixin (outbox) while DemoFiberAgent shows the tail alone: its paid ops, session
 * statuses, stash snapshots and backups are facts the SDK does not publish.
 */
export class SessionAgent extends withAdminRpc(withTelemetry(Agent<Env>, { tracing: otlpTracing })) {
  #ready = false;
  #turns = new Map<number, AbortController>();
  #ledger?: OpLedger;

  /** Override to plug in a real model; the default is the scripted stand-in. */
  protected model(): SessionModel {
    return new ScriptedModel((turnSeq) => this.#scriptFor(turnSeq));
  }

  /** Override to add tools. Each declares whether its upstream is idempotent. */
  protected tools(): Record<string, SessionTool> {
    return {
      search: { idempotent: true, run: async (args) => ({ hits: [`result for ${String(args.q ?? "")}`] }) },
      write_note: {
        idempotent: true,
        run: async (args) => {
          this.workspace.write(String(args.path ?? "notes.md"), String(args.content ?? ""));
          return { written: String(args.path ?? "notes.md") };
        },
      },
      charge_card: { idempotent: false, run: async (args, key) => ({ charged: Number(args.amountCents ?? 0), receipt: `rcpt_${key.slice(3, 15)}` }) },
      send_email: { idempotent: false, run: async (args) => ({ sent: String(args.to ?? "") }) },
    };
  }

  /** Awaited at points of a turn where an eviction may land. A no-op here; tests and the demo override it. */
  protected faultPoint(_point: TurnPoint, _detail: { turnSeq: number; kind?: string }): void | Promise<void> {}

  /** Seconds of idleness before the workspace is backed up. */
  protected idleSnapshotSeconds(): number {
    return 60;
  }

  // ----- storage-backed facts -----

  #sql(): SqlStorage {
    const sql = this.ctx.storage.sql;
    if (!this.#ready) {
      ensureSessionTables(sql);
      this.#ready = true;
    }
    return sql;
  }

  get ledger(): OpLedger {
    this.#ledger ??= new OpLedger(this.#sql(), this.telemetry, this.name, (point, kind) => this.faultPoint(point, { turnSeq: this.#currentTurn() ?? 0, kind }));
    return this.#ledger;
  }

  get workspace(): Workspace {
    const sql = this.#sql();
    return new Workspace(
      sql,
      this.env.BACKUPS,
      { tenant: meta.get(sql, "tenant") ?? "default", environment: meta.get(sql, "environment") ?? "dev", sessionName: this.name },
      this.telemetry,
    );
  }

  /** The session's status, derived now from its facts. */
  status(): SessionStatus {
    const sql = this.#sql();
    const terminated = meta.get(sql, "terminated_at");
    const [runs] = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM cf_agents_runs").toArray();
    return deriveStatus({ terminatedAt: terminated ? Number(terminated) : null, runRows: Number(runs?.n ?? 0) });
  }

  /** Admin RPC hook: the same derivation. */
  adminDerivedStatus(): SessionStatus {
    return this.status();
  }

  #currentTurn(): number | null {
    const t = meta.get(this.#sql(), "turn_seq");
    return t ? Number(t) : null;
  }

  #scriptFor(turnSeq: number): TurnScript {
    const raw = meta.get(this.#sql(), `script:${turnSeq}`) ?? meta.get(this.#sql(), "script:default");
    return raw ? (JSON.parse(raw) as TurnScript) : DEFAULT_SCRIPT;
  }

  // ----- lifecycle -----

  override async onStart(): Promise<void> {
    // Warm-up: an empty workspace comes back from the latest unexpired backup. Never fatal.
    try {
      if (this.status() !== "terminated" && this.workspace.lastChange() === null) await this.workspace.restoreLatest();
      await this.workspace.sweepExpired();
    } catch (e) {
      console.warn(`[session ${this.name}] warm-up: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  // ----- RPC surface -----

  /** Sets where backups go. */
  async configure(input: { tenant?: string; environment?: string }): Promise<SessionResult<{ tenant: string; environment: string }>> {
    const sql = this.#sql();
    for (const k of ["tenant", "environment"] as const) {
      const v = input[k];
      if (v !== undefined) {
        if (typeof v !== "string" || !/^[\w.-]{1,100}$/.test(v))
          return { ok: false, error: { code: "invalid_input", message: `${k} must be 1-100 letters, digits, dots, dashes or underscores` } };
        meta.set(sql, k, v);
      }
    }
    return { ok: true, value: { tenant: meta.get(sql, "tenant") ?? "default", environment: meta.get(sql, "environment") ?? "dev" } };
  }

  /** Sets the scripted model's behaviour for a turn (or for every turn without one). */
  async setScript(script: TurnScript, turnSeq?: number): Promise<void> {
    meta.set(this.#sql(), turnSeq === undefined ? "script:default" : `script:${turnSeq}`, JSON.stringify(script));
  }

  /**
   * Appends a user message and starts a turn that drains it. Resolves once the
   * turn has started (or, with `wait`, when it has ended).
   */
  async sendMessage(text: string, opts: { wait?: boolean } = {}): Promise<SessionResult<{ turnSeq: number }>> {
    if (typeof text !== "string" || !text.trim()) return { ok: false, error: { code: "invalid_input", message: "a message needs some text" } };
    const status = this.status();
    if (status === "terminated")
      return { ok: false, error: { code: "terminated", message: `session ${this.name} is terminated and accepts no more messages` } };
    if (status === "running")
      return { ok: false, error: { code: "busy", message: `session ${this.name} is still working on turn ${this.#currentTurn()}; interrupt it or wait` } };
    const sql = this.#sql();
    const turnSeq = (this.#currentTurn() ?? 0) + 1;
    meta.set(sql, "turn_seq", turnSeq);
    sql.exec(
      "INSERT INTO session_events (turn_seq, kind, content, delivery_key, created_at) VALUES (?, 'user', ?, ?, ?)",
      turnSeq,
      text,
      `turn:${turnSeq}:user`,
      Date.now(),
    );
    const done = this.#runTurn(turnSeq, false);
    if (opts.wait) await done;
    return { ok: true, value: { turnSeq } };
  }

  /** Aborts the active turn; the session goes idle. */
  async interrupt(reason = "interrupted by the user"): Promise<{ interrupted: number[] }> {
    const ids = [...this.#turns.keys()];
    for (const c of this.#turns.values()) c.abort(new Error(reason));
    return { interrupted: ids };
  }

  /** Ends the session for good: a final backup, then every new message is refused. */
  async terminate(reason = "terminated"): Promise<SessionResult<{ terminatedAt: number }>> {
    if (this.status() === "terminated") return { ok: false, error: { code: "terminated", message: `session ${this.name} is already terminated` } };
    await this.interrupt(`session terminated: ${reason}`);
    const now = Date.now();
    await this.workspace.snapshotNow("final");
    meta.set(this.#sql(), "terminated_at", now);
    this.telemetry.record("session.status_terminated", { detail: reason.slice(0, 2000) }, { sessionName: this.name });
    return { ok: true, value: { terminatedAt: now } };
  }

  /** Session events oldest first (user, assistant, tool, notice). */
  async events(): Promise<{ seq: number; turnSeq: number; kind: string; content: string }[]> {
    return this.#sql()
      .exec<{ seq: number; turn_seq: number; kind: string; content: string }>("SELECT seq, turn_seq, kind, content FROM session_events ORDER BY seq")
      .toArray()
      .map((r) => ({ seq: r.seq, turnSeq: r.turn_seq, kind: r.kind, content: r.content }));
  }

  /** Recovery count of a turn (survives eviction). */
  async recoveries(turnSeq: number): Promise<number> {
    const [r] = this.#sql().exec<{ count: number }>("SELECT count FROM session_turn_recoveries WHERE turn_seq = ?", turnSeq).toArray();
    return r?.count ?? 0;
  }

  async snapshotWorkspaceNow(reason = "manual") {
    return this.workspace.snapshotNow(reason);
  }

  async resolveOp(opId: string, resolution: "verified_ran" | "verified_not_ran" | "abandoned"): Promise<boolean> {
    return this.ledger.resolve(opId, resolution);
  }

  /** Operations still ambiguous in this session, oldest first. */
  async ambiguousOps(): Promise<{ opId: string; kind: string; turnSeq: number }[]> {
    return this.ledger.ambiguous();
  }

  /** Scheduled after each turn: backs up a workspace that changed and has been idle long enough. */
  async idleCheck(): Promise<void> {
    if (this.status() !== "idle") return;
    const changed = this.workspace.lastChange();
    const last = Number(meta.get(this.#sql(), "last_backup_at") ?? 0);
    if (changed !== null && changed > last) {
      await this.workspace.snapshotNow("idle");
      meta.set(this.#sql(), "last_backup_at", Date.now());
    }
  }

  // ----- admin hooks -----

  /**
   * Aborts the active turns and resets their recovery counters. The turns whose counters it resets were
   * being recovered: their incidents (turnIncidentId) end here, and the console is told so.
   */
  async onAdminForceIdle(reason: string): Promise<{ cleared: string[]; incidentIds: string[] }> {
    const active = [...this.#turns.keys()];
    for (const c of this.#turns.values()) c.abort(new Error(`forced idle: ${reason}`));
    const sql = this.#sql();
    const recovered = sql
      .exec<{ turn_seq: number }>("SELECT turn_seq FROM session_turn_recoveries")
      .toArray()
      .map((r) => r.turn_seq);
    sql.exec("DELETE FROM session_turn_recoveries");
    return {
      cleared: [...active.map((t) => `turn:${t}`), ...recovered.map((t) => `turn-recoveries:${t}`)],
      incidentIds: recovered.map((t) => turnIncidentId(this.constructor.name, this.name, t)),
    };
  }

  /**
   * Records an operator's resolution of an ambiguous op in the ledger (which reports `op.resolved`). A re-run
   * re-issues the tool call with the op's idempotency key, and only for a tool whose upstream is idempotent.
   * No fiber waits on an ambiguous op here: the turn that hit it has already ended with a notice.
   */
  async onAdminResolveOp(request: ResolveOpRequest): Promise<ResolveOpHookResult> {
    const before = this.ledger.get(request.opId);
    if (!before) return { outcome: "not_found" };
    const state = (op: LedgerOp) => ({
      opId: op.opId,
      kind: op.kind,
      status: op.status,
      idempotent: op.idempotent,
      resolution: op.resolution,
      resultRef: op.resultRef,
    });
    if (before.status !== "ambiguous") return { outcome: "not_ambiguous", state: state(before) };
    if (request.resolution === "rerun") {
      if (!before.idempotent) {
        return {
          outcome: "refused",
          message: `${before.kind} is not idempotent: re-running it could do it twice. Check upstream, then record whether it ran.`,
        };
      }
      const tool = before.kind.startsWith("tool.") ? this.tools()[before.kind.slice("tool.".length)] : undefined;
      if (!tool || !before.args || typeof before.args !== "object") {
        return {
          outcome: "refused",
          message: `this session cannot re-issue ${before.kind} (no tool call to repeat); check upstream and record whether it ran`,
        };
      }
      const args = before.args as Record<string, unknown>;
      const resultRef = await this.ledger.rerun(request.opId, (key) => tool.run(args, key), request.reason);
      const after = this.ledger.get(request.opId)!;
      if (!resultRef) return { outcome: "not_ambiguous", state: state(after) };
      return { outcome: "rerun", before: state(before), after: state(after), resultRef };
    }
    this.ledger.resolve(request.opId, request.resolution, { resultRef: request.resultRef, reason: request.reason });
    return { outcome: "recorded", before: state(before), after: state(this.ledger.get(request.opId)!) };
  }

  // ----- turns and recovery -----

  #runTurn(turnSeq: number, resumed: boolean): Promise<void> {
    const controller = new AbortController();
    this.#turns.set(turnSeq, controller);
    this.telemetry.record("session.status_running", { turnSeq, ...(resumed ? { detail: "resumed after eviction" } : {}) }, { sessionName: this.name });
    const run = this.runFiber(TURN_FIBER, async (fiber) => {
      const stash = (s: Omit<TurnSnapshot, "turnSeq">) => fiber.stash({ turnSeq, ...s } satisfies TurnSnapshot);
      stash({ step: 1, pendingTool: null, streamedChars: 0 });
      await this.#drain(turnSeq, controller.signal, stash);
    });
    return run
      .then(
        () => this.#turnEnded(turnSeq, null),
        (e) => this.#turnEnded(turnSeq, e),
      )
      .finally(() => this.#turns.delete(turnSeq));
  }

  async #drain(turnSeq: number, signal: AbortSignal, stash: (s: Omit<TurnSnapshot, "turnSeq">) => void): Promise<void> {
    const sql = this.#sql();
    const model = this.model();
    const tools = this.tools();
    const partialRow = sql.exec<{ text: string }>("SELECT text FROM session_partial WHERE turn_seq = ?", turnSeq).toArray()[0];
    let streamed = partialRow?.text ?? "";
    const history = sql
      .exec<{ kind: string; content: string }>(
        "SELECT kind, content FROM session_events WHERE seq <= (SELECT MAX(seq) FROM session_events WHERE turn_seq = ? AND kind = 'user') ORDER BY seq",
        turnSeq,
      )
      .toArray();
    let chunks = 0;
    const onChunk = async (chunk: string) => {
      streamed += chunk;
      sql.exec(
        "INSERT INTO session_partial (turn_seq, text, updated_at) VALUES (?, ?, ?) ON CONFLICT(turn_seq) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
        turnSeq,
        streamed,
        Date.now(),
      );
      stash({ step: 1, pendingTool: null, streamedChars: streamed.length });
      if (chunks++ === 0) await this.faultPoint("mid_stream", { turnSeq });
    };
    await this.faultPoint("turn_start", { turnSeq });
    const request = (step: number, toolResult?: unknown): ModelRequest => ({
      turnSeq,
      step,
      history,
      partial: step === 1 && streamed ? streamed : null,
      ...(toolResult !== undefined ? { toolResult } : {}),
    });

    // Usage is reported where the model really ran: a request the ledger answers from a completed op cost nothing again.
    const respond = async (req: ModelRequest, chunk: (text: string) => void | Promise<void>) => {
      const res = await model.respond(req, signal, chunk);
      if (res.usage) this.telemetry.usage(res.usage, { sessionName: this.name, turnSeq, model: "scripted-session" });
      return res;
    };
    const first = await this.ledger.run({ kind: "model.request", args: { step: 1 }, turnSeq, idempotent: true }, () => respond(request(1), onChunk));
    let answer = first.text;
    if (first.toolCall) {
      const tool = tools[first.toolCall.name];
      if (!tool) throw new Error(`the model asked for an unknown tool: ${first.toolCall.name}`);
      stash({ step: 2, pendingTool: first.toolCall.name, streamedChars: streamed.length });
      const result = await this.ledger.run({ kind: `tool.${first.toolCall.name}`, args: first.toolCall.args, turnSeq, idempotent: tool.idempotent }, (key) =>
        tool.run(first.toolCall!.args, key),
      );
      this.#deliver(turnSeq, "tool", JSON.stringify({ tool: first.toolCall.name, result }), `turn:${turnSeq}:tool:${first.toolCall.name}`);
      stash({ step: 3, pendingTool: null, streamedChars: streamed.length });
      const second = await this.ledger.run({ kind: "model.request", args: { step: 2 }, turnSeq, idempotent: true }, () =>
        respond(request(2, result), () => {}),
      );
      answer = `${answer}${second.text}`;
    }
    this.#deliver(turnSeq, "assistant", answer, `turn:${turnSeq}:assistant`);
    sql.exec("DELETE FROM session_partial WHERE turn_seq = ?", turnSeq);
    await this.faultPoint("after_turn", { turnSeq });
  }

  /** Appends a message once: the dedup set is the delivery key, so a re-issued turn never sends it twice. */
  #deliver(turnSeq: number, kind: string, content: string, key: string): void {
    this.#sql().exec(
      "INSERT INTO session_events (turn_seq, kind, content, delivery_key, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(delivery_key) DO NOTHING",
      turnSeq,
      kind,
      content,
      key,
      Date.now(),
    );
  }

  async #turnEnded(turnSeq: number, error: unknown): Promise<void> {
    const detail =
      error instanceof AmbiguousOpError
        ? error.message
        : error
          ? `turn ${turnSeq} ended: ${error instanceof Error ? error.message : String(error)}`
          : undefined;
    if (error instanceof AmbiguousOpError) this.#deliver(turnSeq, "notice", error.message, `turn:${turnSeq}:ambiguous:${error.opId}`);
    // A turn that ends after recoveries (done, ambiguous or interrupted) is no longer being recovered: its incident closes.
    const recovered = (await this.recoveries(turnSeq)) > 0;
    const corr = { sessionName: this.name, ...(recovered ? { incidentId: turnIncidentId(this.constructor.name, this.name, turnSeq) } : {}) };
    this.telemetry.record("session.status_idle", { turnSeq, ...(detail ? { detail: detail.slice(0, 2000) } : {}) }, corr);
    try {
      await this.schedule(this.idleSnapshotSeconds(), "idleCheck", undefined, { idempotent: true });
    } catch {
      /* no backup schedule is not worth failing a turn over */
    }
  }

  override async onFiberRecovered(ctx: FiberRecoveryContext): Promise<void> {
    if (ctx.name !== TURN_FIBER) return;
    const snap = ctx.snapshot as TurnSnapshot | null;
    const turnSeq = snap?.turnSeq ?? this.#currentTurn();
    if (!turnSeq) return;
    const sql = this.#sql();
    sql.exec("INSERT INTO session_turn_recoveries (turn_seq, count) VALUES (?, 1) ON CONFLICT(turn_seq) DO UPDATE SET count = count + 1", turnSeq);
    const count = await this.recoveries(turnSeq);
    const corr = { sessionName: this.name, incidentId: turnIncidentId(this.constructor.name, this.name, turnSeq) };
    if (count > MAX_TURN_RECOVERIES) {
      const message = `turn ${turnSeq} was interrupted ${count} times; recovery stopped after ${MAX_TURN_RECOVERIES} attempts and the session is idle`;
      this.#deliver(turnSeq, "notice", message, `turn:${turnSeq}:gave-up`);
      this.telemetry.record("session.error", { turnSeq, error: message, reason: "max_turn_recoveries" }, corr);
      this.telemetry.record("session.status_idle", { turnSeq, detail: "recovery budget exhausted" }, { sessionName: this.name });
      return;
    }
    this.telemetry.record(
      "session.status_rescheduled",
      { turnSeq, recoveryCount: count, detail: `step ${snap?.step ?? "?"}, ${snap?.streamedChars ?? 0} chars streamed` },
      corr,
    );
    // A fresh fiber for the same turn: context is rebuilt from SQL, deliveries are deduped.
    void this.#runTurn(turnSeq, true);
  }
}
