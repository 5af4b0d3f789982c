import { type ScriptLane, type ScriptStep, scriptStepSchema } from "./script";

/** One model call as the scripted model saw it (kept so tests and the demo can see what the SDK asked for). */
export type ModelCallRecord = {
  seq: number;
  lane: ScriptLane;
  /** The step that answered, or "none" when the queue was empty and there was no fallback. */
  kind: ScriptStep["kind"] | "none";
  /** Chat request the call belongs to, when it ran inside a turn. */
  requestId: string | null;
  promptMessages: number;
  promptChars: number;
  at: number;
};

/**
 * The script queues and the call log, in the agent's own SQLite: a script
 * survives eviction, and a step is consumed when a call takes it, so the call
 * after an eviction gets the next step.
 */
export class ScriptStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS chat_script_steps (
      lane TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (lane, seq)
    ) WITHOUT ROWID`);
    sql.exec(`CREATE TABLE IF NOT EXISTS chat_script_fallback (lane TEXT PRIMARY KEY, step TEXT NOT NULL) WITHOUT ROWID`);
    sql.exec(`CREATE TABLE IF NOT EXISTS chat_model_calls (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, lane TEXT NOT NULL, kind TEXT NOT NULL, request_id TEXT,
      prompt_messages INTEGER NOT NULL, prompt_chars INTEGER NOT NULL, at INTEGER NOT NULL
    )`);
  }

  /** Replaces (or, with `append`, extends) the queued steps of a lane; `fallback` undefined leaves it as is. */
  set(lane: ScriptLane, steps: ScriptStep[], opts: { append?: boolean; fallback?: ScriptStep | null } = {}): number {
    if (!opts.append) this.sql.exec("DELETE FROM chat_script_steps WHERE lane = ?", lane);
    const last = this.sql.exec<{ m: number | null }>("SELECT MAX(seq) AS m FROM chat_script_steps WHERE lane = ?", lane).one().m ?? 0;
    steps.forEach((step, i) => {
      this.sql.exec("INSERT INTO chat_script_steps (lane, seq, step) VALUES (?, ?, ?)", lane, last + i + 1, JSON.stringify(step));
    });
    if (opts.fallback === null) this.sql.exec("DELETE FROM chat_script_fallback WHERE lane = ?", lane);
    else if (opts.fallback) {
      this.sql.exec("INSERT OR REPLACE INTO chat_script_fallback (lane, step) VALUES (?, ?)", lane, JSON.stringify(opts.fallback));
    }
    return this.pending(lane).length;
  }

  /** Takes the next step of a lane (durably), or the lane's fallback, or null. */
  take(lane: ScriptLane): ScriptStep | null {
    const row = this.sql.exec<{ seq: number; step: string }>("SELECT seq, step FROM chat_script_steps WHERE lane = ? ORDER BY seq LIMIT 1", lane).toArray()[0];
    if (row) {
      this.sql.exec("DELETE FROM chat_script_steps WHERE lane = ? AND seq = ?", lane, row.seq);
      return scriptStepSchema.parse(JSON.parse(row.step));
    }
    const fb = this.sql.exec<{ step: string }>("SELECT step FROM chat_script_fallback WHERE lane = ?", lane).toArray()[0];
    return fb ? scriptStepSchema.parse(JSON.parse(fb.step)) : null;
  }

  /** Steps still queued on a lane, in order. */
  pending(lane: ScriptLane): ScriptStep[] {
    return this.sql
      .exec<{ step: string }>("SELECT step FROM chat_script_steps WHERE lane = ? ORDER BY seq", lane)
      .toArray()
      .map((r) => scriptStepSchema.parse(JSON.parse(r.step)));
  }

  /** Appends one call to the log. */
  recordCall(call: Omit<ModelCallRecord, "seq" | "at">): void {
    this.sql.exec(
      "INSERT INTO chat_model_calls (lane, kind, request_id, prompt_messages, prompt_chars, at) VALUES (?, ?, ?, ?, ?, ?)",
      call.lane,
      call.kind,
      call.requestId,
      call.promptMessages,
      call.promptChars,
      Date.now(),
    );
  }

  /** Number of calls made on a lane (the spend meter of the recovery budget). */
  callCount(lane: ScriptLane): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM chat_model_calls WHERE lane = ?", lane).one().n;
  }

  /** The call log, oldest first (all lanes, or one). */
  calls(lane?: ScriptLane): ModelCallRecord[] {
    const rows = this.sql
      .exec<{
        seq: number;
        lane: ScriptLane;
        kind: ModelCallRecord["kind"];
        request_id: string | null;
        prompt_messages: number;
        prompt_chars: number;
        at: number;
      }>("SELECT * FROM chat_model_calls ORDER BY seq")
      .toArray();
    return rows
      .filter((r) => !lane || r.lane === lane)
      .map((r) => ({
        seq: r.seq,
        lane: r.lane,
        kind: r.kind,
        requestId: r.request_id,
        promptMessages: r.prompt_messages,
        promptChars: r.prompt_chars,
        at: r.at,
      }));
  }
}
