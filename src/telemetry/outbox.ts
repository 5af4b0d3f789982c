import type { TelemetryEvent } from "./envelope.js";
import { sendPacked } from "./pack.js";

/** The part of a Queue binding the outbox needs. */
export type QueueLike = { sendBatch(messages: Iterable<MessageSendRequest<unknown>>): Promise<unknown> };

/** The part of Durable Object SQL storage the outbox needs. */
export type SqlLike = Pick<SqlStorage, "exec">;

/** Events read per drain step. */
const DRAIN_ROWS = 500;
const TABLE = "cf_telemetry_outbox";

/** One stored event as the drain hands it over: its outbox number and its JSON text. */
export type OutboxRow = { seq: number; body: string };

/**
 * A durable outbox in the agent's own SQLite. Events are written in the same
 * turn of the event loop as the agent work that produced them (so they commit
 * together with it), then sent to the Queue in the background and deleted once
 * the Queue has them. An eviction in between means the next wake sends them
 * again; ingest dedupes on event id.
 *
 * Each row's key (`seq`, AUTOINCREMENT: never reused, rising across drains and
 * evictions) is the event's per-agent number; see seq.ts for what it means.
 */
export class Outbox {
  #ready = false;
  /** Events put in this turn, written as one statement at the next microtask. */
  #unsaved: TelemetryEvent[] = [];
  constructor(private readonly sql: SqlLike) {}

  #ensure(): void {
    if (this.#ready) return;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, body TEXT NOT NULL)`);
    this.#ready = true;
  }

  /**
   * Queues one event for storage. The write happens at the next microtask,
   * still inside the current storage transaction, as one statement for every
   * event of this turn. `onError` hears of a failed write.
   */
  put(event: TelemetryEvent, onError: (e: unknown, events: TelemetryEvent[]) => void): void {
    if (this.#unsaved.push(event) === 1) {
      queueMicrotask(() => {
        const events = this.#unsaved;
        try {
          this.save();
        } catch (e) {
          onError(e, events);
        }
      });
    }
  }

  /** Writes events queued by put() now. If storage fails they are handed back through the error, not kept. */
  save(): void {
    if (!this.#unsaved.length) return;
    const events = this.#unsaved;
    this.#unsaved = [];
    this.#ensure();
    const rows = events.map((e) => ({ id: e.id, body: JSON.stringify(e) }));
    this.sql.exec(`INSERT INTO ${TABLE} (id, body) SELECT value ->> '$.id', value ->> '$.body' FROM json_each(?)`, JSON.stringify(rows));
  }

  /**
   * The highest event number that has left the outbox (handed to the Queue), or null before any did. Numbers are
   * the table's AUTOINCREMENT keys and leave oldest first, so everything below the lowest pending row has left.
   * The console compares it with the highest number it received: a difference is events lost on the way that no
   * later event revealed (the last ones an agent sent before going quiet).
   */
  shippedThrough(): number | null {
    this.save();
    this.#ensure();
    const issued = this.sql.exec<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = ?", TABLE).toArray()[0]?.seq ?? 0;
    const lowest = this.sql.exec<{ seq: number | null }>(`SELECT MIN(seq) AS seq FROM ${TABLE}`).one().seq;
    const through = lowest === null ? issued : lowest - 1;
    return through > 0 ? through : null;
  }

  /** How many events wait to be sent. */
  pending(): number {
    this.save();
    this.#ensure();
    return Number(this.sql.exec(`SELECT COUNT(*) AS n FROM ${TABLE}`).one().n);
  }

  /**
   * Sends everything pending, step by step, oldest first. Returns how many were sent; a Queue error stops and
   * rethrows. `prepare` turns stored rows into what is sent (size check, number, signature), in the background.
   */
  async drain(queue: QueueLike, prepare: (rows: OutboxRow[]) => string[] | Promise<string[]> = (rows) => rows.map((r) => r.body)): Promise<number> {
    this.save();
    this.#ensure();
    let sent = 0;
    for (;;) {
      const rows = this.sql.exec<{ seq: number; body: string }>(`SELECT seq, body FROM ${TABLE} ORDER BY seq LIMIT ${DRAIN_ROWS}`).toArray();
      if (!rows.length) return sent;
      await sendPacked(queue, await prepare(rows));
      this.sql.exec(`DELETE FROM ${TABLE} WHERE seq <= ?`, rows[rows.length - 1]!.seq);
      sent += rows.length;
    }
  }
}
