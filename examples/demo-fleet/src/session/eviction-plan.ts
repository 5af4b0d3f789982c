import type { TurnPoint } from "./session-agent";

/** An eviction planned at a point of a turn; `times` > 1 makes a poison turn that dies on every recovery. */
export type PlannedEviction = { point: TurnPoint; kind?: string; times: number };

const TABLE = "session_eviction_plan";

/**
 * Chaos for demos and tests: evicts the agent (`ctx.abort()`, as the platform
 * would) when a turn reaches a planned point. Stored in the agent's SQLite so
 * the remaining count survives the evictions it causes. Agents opt in by
 * calling `hit` from their `faultPoint` override; nothing plans one by default.
 */
export const evictionPlan = {
  set(sql: SqlStorage, plan: PlannedEviction | null): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), spec TEXT NOT NULL)`);
    if (plan) sql.exec(`INSERT INTO ${TABLE} (id, spec) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET spec = excluded.spec`, JSON.stringify(plan));
    else sql.exec(`DELETE FROM ${TABLE}`);
  },

  /** Evicts now if the plan matches this point; otherwise returns at once. */
  async hit(state: DurableObjectState, point: TurnPoint, detail: { kind?: string }): Promise<void> {
    let plan: PlannedEviction | null = null;
    try {
      const [row] = state.storage.sql.exec<{ spec: string }>(`SELECT spec FROM ${TABLE} WHERE id = 1`).toArray();
      plan = row ? (JSON.parse(row.spec) as PlannedEviction) : null;
    } catch {
      return; // no plan table: nothing planned
    }
    if (!plan || plan.point !== point || (plan.kind && plan.kind !== detail.kind) || plan.times <= 0) return;
    state.storage.sql.exec(`UPDATE ${TABLE} SET spec = ? WHERE id = 1`, JSON.stringify({ ...plan, times: plan.times - 1 }));
    // What was written so far is durable, as it is when a real eviction lands during I/O; then the instance dies.
    await state.storage.sync();
    // "planned fault:" marks it in the runtime's log (an uncaught error there): expected, not a bug.
    state.abort(`planned fault: eviction at ${point}${detail.kind ? ` (${detail.kind})` : ""}`);
    await new Promise(() => {});
  },
};
