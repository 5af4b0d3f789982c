/**
 * The session's own tables in its Durable Object SQLite. (D1 shapes live in
 * src/store/schema.ts; these are per-agent and never leave the agent.)
 */
export function ensureSessionTables(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS session_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS session_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    delivery_key TEXT UNIQUE,
    created_at INTEGER NOT NULL
  )`);
  sql.exec(`CREATE TABLE IF NOT EXISTS session_partial (turn_seq INTEGER PRIMARY KEY, text TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS session_turn_recoveries (turn_seq INTEGER PRIMARY KEY, count INTEGER NOT NULL)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS session_ops (
    op_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    turn_seq INTEGER NOT NULL,
    idempotent INTEGER NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    started_at INTEGER NOT NULL,
    completed_at INTEGER,
    args TEXT,
    resolution TEXT,
    result_ref TEXT
  )`);
  // Sessions created before these columns existed get them (storage outlives deploys).
  const have = new Set(
    sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('session_ops')")
      .toArray()
      .map((c) => c.name),
  );
  for (const col of ["args", "resolution", "result_ref"]) if (!have.has(col)) sql.exec(`ALTER TABLE session_ops ADD COLUMN ${col} TEXT`);
  sql.exec(`CREATE TABLE IF NOT EXISTS session_workspace (path TEXT PRIMARY KEY, content TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
}

/** Small typed accessors for session_meta. */
export const meta = {
  get(sql: SqlStorage, key: string): string | null {
    const [row] = sql.exec<{ value: string }>("SELECT value FROM session_meta WHERE key = ?", key).toArray();
    return row?.value ?? null;
  },
  set(sql: SqlStorage, key: string, value: string | number): void {
    sql.exec("INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, String(value));
  },
  delete(sql: SqlStorage, key: string): void {
    sql.exec("DELETE FROM session_meta WHERE key = ?", key);
  },
};
