import type { TelemetryEvent } from "./envelope";

/** The part of a Queue binding the outbox needs. */
export type QueueLike = { sendBatch(messages: Iterable<MessageSendRequest<unknown>>): Promise<unknown> };

/** The part of Durable Object SQL storage the outbox needs. */
export type SqlLike = Pick<SqlStorage, "exec">;

/** Queue limits: 100 messages and 256 KB per sendBatch. We stay under both. */
const BATCH_MESSAGES = 100;
const BATCH_BYTES = 200_000;
const TABLE = "cf_telemetry_outbox";

/**
 * A durable outbox in the agent's own SQLite. Events are written synchronously
 * (part of the same storage transaction as the agent's work), then sent to the
 * Queue in the background and deleted once the Queue has them. An eviction
 * between the two just means the next wake sends them again; ingest dedupes.
 */
export class Outbox {
  #ready = false;
  constructor(private readonly sql: SqlLike) {}

  #ensure(): void {
    if (this.#ready) return;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, body TEXT NOT NULL)`);
    this.#ready = true;
  }

  /** Stores one event. Synchronous; throws only if storage itself fails. */
  put(event: TelemetryEvent): void {
    this.#ensure();
    this.sql.exec(`INSERT INTO ${TABLE} (id, body) VALUES (?, ?)`, event.id, JSON.stringify(event));
  }

  /** How many events wait to be sent. */
  pending(): number {
    this.#ensure();
    return Number(this.sql.exec(`SELECT COUNT(*) AS n FROM ${TABLE}`).one().n);
  }

  /** Sends everything pending, batch by batch. Returns how many were sent; a Queue error stops and rethrows. */
  async drain(queue: QueueLike): Promise<number> {
    this.#ensure();
    let sent = 0;
    for (;;) {
      const rows = this.sql.exec<{ seq: number; body: string }>(`SELECT seq, body FROM ${TABLE} ORDER BY seq LIMIT ${BATCH_MESSAGES}`).toArray();
      if (!rows.length) return sent;
      const batch: { seq: number; body: string }[] = [];
      let bytes = 0;
      for (const r of rows) {
        if (batch.length && bytes + r.body.length > BATCH_BYTES) break;
        batch.push(r);
        bytes += r.body.length;
      }
      await queue.sendBatch(batch.map((r) => ({ body: JSON.parse(r.body), contentType: "json" as const })));
      const last = batch[batch.length - 1]!.seq;
      this.sql.exec(`DELETE FROM ${TABLE} WHERE seq <= ?`, last);
      sent += batch.length;
    }
  }
}
