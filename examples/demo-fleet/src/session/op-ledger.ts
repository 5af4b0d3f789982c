import type { Telemetry } from "@agent-oncall/telemetry";
import { opId } from "./op-id";

/** Where an eviction can land relative to one operation. Tests inject faults at these points. */
export type OpPoint = "before_op_started" | "after_op_started" | "after_op_completed";

/** An operation that started before an eviction and may have executed: never re-run silently. */
export class AmbiguousOpError extends Error {
  constructor(
    readonly opId: string,
    readonly kind: string,
  ) {
    super(`Operation ${kind} (${opId}) may have executed before the agent was interrupted. Verify it before retrying.`);
    this.name = "AmbiguousOpError";
  }
}

export type OpSpec = {
  /** What the operation is: "model.request", "tool.search", "payment.charge"… */
  kind: string;
  /** Its arguments; part of the op id, so keep them canonical (no timestamps). */
  args: unknown;
  turnSeq: number;
  /** The upstream accepts an idempotency key: re-issuing with the same key cannot double-execute. */
  idempotent: boolean;
};

type Row = { op_id: string; status: string; result: string | null };

/** One op as the ledger sees it (what an operator resolving it is shown, before and after). */
export type LedgerOp = { opId: string; kind: string; status: string; idempotent: boolean; resolution: string | null; resultRef: string | null; args: unknown };

/** How an ambiguous op was settled: by someone who verified it, or by re-issuing it (`reissued`). */
export type LedgerResolution = "verified_ran" | "verified_not_ran" | "reissued" | "abandoned";

/**
 * The cost-op ledger: every model request, tool execution and external
 * mutation goes through `run`. `op.started` is written before the call and
 * `op.completed` (with the result) after it, so after an eviction:
 * - a completed op replays its recorded result and never runs again;
 * - a started-but-unfinished idempotent op is re-issued with its op id as the idempotency key;
 * - any other started-but-unfinished op is ambiguous: reported, and never re-run.
 */
export class OpLedger {
  constructor(
    private readonly sql: SqlStorage,
    private readonly telemetry: Pick<Telemetry, "record">,
    private readonly sessionName: string,
    private readonly fault: (point: OpPoint, kind: string) => void | Promise<void> = () => {},
  ) {}

  async run<T>(spec: OpSpec, call: (idempotencyKey: string) => Promise<T>): Promise<T> {
    const id = await opId(spec.kind, spec.args, spec.turnSeq);
    const corr = { opId: id, sessionName: this.sessionName };
    const [row] = this.sql.exec<Row>("SELECT op_id, status, result FROM session_ops WHERE op_id = ?", id).toArray();
    if (row?.status === "completed") return JSON.parse(row.result ?? "null") as T;
    if (row && !spec.idempotent) {
      if (row.status !== "ambiguous") {
        this.sql.exec("UPDATE session_ops SET status = 'ambiguous' WHERE op_id = ?", id);
        this.telemetry.record(
          "op.ambiguous",
          {
            opKind: spec.kind,
            turnSeq: spec.turnSeq,
            idempotent: false,
            detail: `started at ${new Date(this.#startedAt(id)).toISOString()} with no completion recorded; not re-run`,
          },
          corr,
        );
      }
      throw new AmbiguousOpError(id, spec.kind);
    }
    if (!row) {
      await this.fault("before_op_started", spec.kind);
      this.sql.exec(
        "INSERT INTO session_ops (op_id, kind, turn_seq, idempotent, status, started_at, args) VALUES (?, ?, ?, ?, 'started', ?, ?)",
        id,
        spec.kind,
        spec.turnSeq,
        spec.idempotent ? 1 : 0,
        Date.now(),
        JSON.stringify(spec.args ?? null),
      );
      this.telemetry.record("op.started", { opKind: spec.kind, turnSeq: spec.turnSeq, idempotent: spec.idempotent }, corr);
      await this.fault("after_op_started", spec.kind);
    }
    // A re-issue of an idempotent op lands here with its row already 'started': same key, so the upstream dedupes.
    const result = await call(id);
    this.sql.exec("UPDATE session_ops SET status = 'completed', result = ?, completed_at = ? WHERE op_id = ?", JSON.stringify(result ?? null), Date.now(), id);
    this.telemetry.record("op.completed", { opKind: spec.kind, turnSeq: spec.turnSeq, idempotent: spec.idempotent, resultRef: `session_ops/${id}` }, corr);
    await this.fault("after_op_completed", spec.kind);
    return result;
  }

  /**
   * Records how an ambiguous op was settled after someone verified it: `resultRef` says where the result of
   * an op that ran is, `reason` is theirs. Reported as `op.resolved`. False when the op is not ambiguous.
   */
  resolve(id: string, resolution: Exclude<LedgerResolution, "reissued">, opts: { resultRef?: string | null; reason?: string | null } = {}): boolean {
    const [row] = this.sql
      .exec<{ kind: string; turn_seq: number; idempotent: number }>(
        "SELECT kind, turn_seq, idempotent FROM session_ops WHERE op_id = ? AND status = 'ambiguous'",
        id,
      )
      .toArray();
    if (!row) return false;
    const resultRef = opts.resultRef ?? null;
    this.sql.exec(
      "UPDATE session_ops SET status = 'resolved', resolution = ?, result_ref = ?, completed_at = ? WHERE op_id = ?",
      resolution,
      resultRef,
      Date.now(),
      id,
    );
    this.#resolved(id, row, resolution, resultRef, opts.reason ?? null);
    return true;
  }

  /**
   * Re-issues an ambiguous idempotent op now, with its op id as the idempotency key (as `run` does after an
   * eviction): the upstream dedupes, so it cannot run twice. Its result is recorded like a completion and the
   * op is resolved as `reissued`; the answer is the result's reference. Null when the op is not ambiguous or
   * not idempotent: a non-idempotent op is never re-run.
   */
  async rerun<T>(id: string, call: (idempotencyKey: string) => Promise<T>, reason: string | null = null): Promise<string | null> {
    const [row] = this.sql
      .exec<{ kind: string; turn_seq: number; idempotent: number }>(
        "SELECT kind, turn_seq, idempotent FROM session_ops WHERE op_id = ? AND status = 'ambiguous'",
        id,
      )
      .toArray();
    if (!row?.idempotent) return null;
    const result = await call(id);
    const resultRef = `session_ops/${id}`;
    this.sql.exec(
      "UPDATE session_ops SET status = 'resolved', resolution = 'reissued', result = ?, result_ref = ?, completed_at = ? WHERE op_id = ?",
      JSON.stringify(result ?? null),
      resultRef,
      Date.now(),
      id,
    );
    this.#resolved(id, row, "reissued", resultRef, reason);
    return resultRef;
  }

  #resolved(
    id: string,
    row: { kind: string; turn_seq: number; idempotent: number },
    resolution: LedgerResolution,
    resultRef: string | null,
    reason: string | null,
  ): void {
    this.telemetry.record(
      "op.resolved",
      {
        opKind: row.kind,
        turnSeq: row.turn_seq,
        idempotent: Boolean(row.idempotent),
        resolution,
        ...(resultRef ? { resultRef: resultRef.slice(0, 500) } : {}),
        ...(reason ? { reason: reason.slice(0, 2000) } : {}),
      },
      { opId: id, sessionName: this.sessionName },
    );
  }

  /** One op as the ledger has it, or null. */
  get(id: string): LedgerOp | null {
    const [r] = this.sql
      .exec<{ op_id: string; kind: string; status: string; idempotent: number; resolution: string | null; result_ref: string | null; args: string | null }>(
        "SELECT op_id, kind, status, idempotent, resolution, result_ref, args FROM session_ops WHERE op_id = ?",
        id,
      )
      .toArray();
    if (!r) return null;
    let args: unknown = null;
    try {
      args = r.args === null ? null : JSON.parse(r.args);
    } catch {
      /* an unreadable args column only means the op cannot be re-issued */
    }
    return { opId: r.op_id, kind: r.kind, status: r.status, idempotent: r.idempotent === 1, resolution: r.resolution, resultRef: r.result_ref, args };
  }

  /** Ops still ambiguous in this session. */
  ambiguous(): { opId: string; kind: string; turnSeq: number }[] {
    return this.sql
      .exec<{ op_id: string; kind: string; turn_seq: number }>("SELECT op_id, kind, turn_seq FROM session_ops WHERE status = 'ambiguous' ORDER BY started_at")
      .toArray()
      .map((r) => ({ opId: r.op_id, kind: r.kind, turnSeq: r.turn_seq }));
  }

  #startedAt(id: string): number {
    const [r] = this.sql.exec<{ started_at: number }>("SELECT started_at FROM session_ops WHERE op_id = ?", id).toArray();
    return r?.started_at ?? Date.now();
  }
}
