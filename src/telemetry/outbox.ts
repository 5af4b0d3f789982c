import type { TelemetryEvent } from "./envelope.js";
import { sendPacked } from "./pack.js";

/** The part of a Queue binding the outbox needs. */
export type QueueLike = { sendBatch(messages: Iterable<MessageSendRequest<unknown>>): Promise<unknown> };

/** The part of Durable Object SQL storage the outbox needs. */
export type SqlLike = Pick<SqlStorage, "exec">;

/**
 * Microtask hops without a new event before a turn's events are written. Microtasks all run before the turn
 * ends, so waiting never leaves the turn's storage transaction; it lets the rest of an SDK call's events
 * (a fiber's end comes a few promise reactions after its work) join the same statement.
 */
const SAVE_AFTER_QUIET_HOPS = 8;
/** Events sent per drain step. */
const DRAIN_EVENTS = 500;
/**
 * Characters an open row grows to before a new row is started. Small enough that rewriting the row on each
 * write stays cheap; large enough that starting and deleting rows is rare (about 100 events per row).
 */
const ROW_CHARS = 8 * 1024;
export const OUTBOX_TABLE = "cf_telemetry_outbox_rows";
/** The one-event-per-row table of earlier versions: its rows are moved over once (see #migrate). */
const LEGACY_TABLE = "cf_telemetry_outbox";

/** One stored event as the drain hands it over: its number and its JSON text. */
export type OutboxRow = { seq: number; body: string };

/**
 * Stored lines: `<seq>\t<event JSON>`, one per event, joined by newlines (JSON.stringify never writes a raw
 * newline or tab outside a string, and inside one they are escaped).
 */
export function parseOutboxBody(body: string): OutboxRow[] {
  if (!body) return [];
  return body.split("\n").map((line) => {
    const tab = line.indexOf("\t");
    return { seq: Number(line.slice(0, tab)), body: line.slice(tab + 1) };
  });
}

/** The stored form of events, the inverse of parseOutboxBody. */
export const formatOutboxBody = (rows: readonly OutboxRow[]): string => rows.map((r) => `${r.seq}\t${r.body}`).join("\n");

/**
 * A durable outbox in the agent's own SQLite that costs the agent one row written per turn that emits events,
 * not two per event. A turn's events are written in that turn (so they commit together with the work that
 * produced them) as one small row, and sent to the Queue in the background. Rows are never deleted: a row
 * whose events have all been sent is reused by a later turn's write (an UPDATE, one row written, like the
 * INSERT of a new one), so sending costs no write at all. After a quiet spell, `compact` records how far
 * sending got (one row), so a later wake does not send those events again; an eviction before that means the
 * next wake sends the rest of the rows again, and ingest dedupes on event id (a resent event keeps its number).
 *
 * Rows written are counted in `rowsWritten`, from the cursors' own figures.
 *
 * Each event's number (`seq`, seq.ts) is given here: one more than the highest number any row records
 * (`last_seq`); rows are never deleted, so numbers rise across drains and evictions without a hole. Row 0
 * records how far sending got (its `last_seq`), and holds no events.
 */
export class Outbox {
  #ready = false;
  /** Events put in this turn (with their JSON text), written as one statement before the turn ends. */
  #unsaved: { event: TelemetryEvent; text: string }[] = [];
  /** Events put since the pending write last looked (see put). */
  #putSinceHop = false;
  /** Highest number given. */
  #issued = 0;
  /** Highest number handed to the Queue (after a wake: as far as row 0 records). */
  #shipped = 0;
  /** Highest number row 0 records as sent. */
  #marked = 0;
  /** Rows holding events not yet sent: slot → its last number. */
  readonly #unsent = new Map<number, number>();
  /** Rows whose events have all been sent, free for the next write. */
  #free: number[] = [];
  #maxSlot = 0;
  #rowsWritten = 0;

  /**
   * `writeAt`: "turn" (the default) writes each turn's events in that turn, so they commit with the work that
   * produced them and survive any eviction. "flush" writes them when the background sender flushes (one row
   * per flush): fewer rows written, but events of the last flush interval (flushDelayMs) that an eviction
   * interrupts are lost, unnumbered, so the console cannot count them either.
   */
  constructor(
    private readonly sql: SqlLike,
    private readonly writeAt: "turn" | "flush" = "turn",
  ) {}

  /** DO SQLite rows this outbox wrote (its cursors' rowsWritten), since this isolate started. */
  get rowsWritten(): number {
    return this.#rowsWritten;
  }

  #exec(query: string, ...bindings: unknown[]): void {
    this.#rowsWritten += this.sql.exec(query, ...bindings).rowsWritten;
  }

  #ensure(): void {
    if (this.#ready) return;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS ${OUTBOX_TABLE} (slot INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, body TEXT NOT NULL)`);
    this.#migrate();
    const rows = this.sql.exec<{ slot: number; last_seq: number }>(`SELECT slot, last_seq FROM ${OUTBOX_TABLE}`).toArray();
    this.#marked = rows.find((r) => r.slot === 0)?.last_seq ?? 0;
    this.#shipped = this.#marked;
    for (const r of rows) {
      this.#issued = Math.max(this.#issued, r.last_seq);
      this.#maxSlot = Math.max(this.#maxSlot, r.slot);
      if (r.slot === 0) continue;
      if (r.last_seq > this.#shipped) this.#unsent.set(r.slot, r.last_seq);
      else this.#free.push(r.slot);
    }
    this.#ready = true;
  }

  /**
   * Earlier versions stored one event per row in `cf_telemetry_outbox` (key = its number, AUTOINCREMENT). Rows
   * still there are moved into one row here under their own numbers, and numbering continues after the highest
   * number that table ever gave. Runs once per agent.
   */
  #migrate(): void {
    const legacy = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", LEGACY_TABLE).one().n;
    if (!legacy) return;
    const rows = this.sql.exec<{ seq: number; body: string }>(`SELECT seq, body FROM ${LEGACY_TABLE} ORDER BY seq`).toArray();
    const issued = this.sql.exec<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = ?", LEGACY_TABLE).toArray()[0]?.seq ?? 0;
    const lastSeq = Math.max(issued, rows[rows.length - 1]?.seq ?? 0);
    if (lastSeq > 0) {
      const slot = (this.sql.exec<{ slot: number | null }>(`SELECT MAX(slot) AS slot FROM ${OUTBOX_TABLE}`).one().slot ?? 0) + 1;
      this.#exec(`INSERT INTO ${OUTBOX_TABLE} (slot, last_seq, body) VALUES (?, ?, ?)`, slot, lastSeq, formatOutboxBody(rows));
    }
    this.#exec(`DROP TABLE ${LEGACY_TABLE}`);
  }

  /**
   * Queues one event (and its JSON text) for storage. The write happens a few microtasks later, still inside
   * the current turn of the event loop and so inside the same storage transaction as the work that produced
   * the event: it waits while events keep arriving within the turn (an SDK call's later events come a few
   * microtasks after its first), so one statement, one row written, carries them all. `onError` hears of a
   * failed write.
   */
  put(event: TelemetryEvent, text: string, onError: (e: unknown, events: TelemetryEvent[]) => void): void {
    this.#putSinceHop = true;
    if (this.#unsaved.push({ event, text }) !== 1 || this.writeAt === "flush") return;
    let quiet = 0;
    const hop = () => {
      if (this.#putSinceHop) quiet = 0;
      this.#putSinceHop = false;
      if (++quiet < SAVE_AFTER_QUIET_HOPS && this.#unsaved.length) return queueMicrotask(hop);
      const events = this.#unsaved.map((u) => u.event);
      try {
        this.save();
      } catch (e) {
        onError(e, events);
      }
    };
    queueMicrotask(hop);
  }

  /**
   * Writes events queued by put() now: one row written (more only past ROW_CHARS). If storage fails they are
   * handed back through the error, not kept, and they take no number.
   */
  save(): void {
    if (!this.#unsaved.length) return;
    const events = this.#unsaved;
    this.#unsaved = [];
    this.#ensure();
    let seq = this.#issued;
    let text = "";
    for (let i = 0; i < events.length; i++) {
      text += `${text ? "\n" : ""}${++seq}\t${events[i]!.text}`;
      if (i === events.length - 1 || text.length >= ROW_CHARS) {
        this.#write(seq, text);
        this.#issued = seq;
        text = "";
      }
    }
  }

  /** One row of events, the last numbered `lastSeq`: into a row whose events were all sent, else a new one. */
  #write(lastSeq: number, text: string): void {
    const reuse = this.#free.length ? this.#free[this.#free.length - 1]! : null;
    if (reuse !== null) {
      this.#exec(`UPDATE ${OUTBOX_TABLE} SET last_seq = ?, body = ? WHERE slot = ?`, lastSeq, text, reuse);
      this.#free.pop();
      this.#unsent.set(reuse, lastSeq);
    } else {
      const slot = this.#maxSlot + 1;
      this.#exec(`INSERT INTO ${OUTBOX_TABLE} (slot, last_seq, body) VALUES (?, ?, ?)`, slot, lastSeq, text);
      this.#maxSlot = slot;
      this.#unsent.set(slot, lastSeq);
    }
  }

  /** Stored events not yet handed to the Queue, oldest first, at most `limit`. */
  #pendingRows(limit = Number.POSITIVE_INFINITY): OutboxRow[] {
    const out: OutboxRow[] = [];
    if (!this.#unsent.size) return out;
    const rows = this.sql.exec<{ body: string }>(`SELECT body FROM ${OUTBOX_TABLE} WHERE slot > 0 AND last_seq > ? ORDER BY last_seq`, this.#shipped).toArray();
    for (const r of rows) {
      for (const e of parseOutboxBody(r.body)) {
        if (e.seq <= this.#shipped) continue;
        out.push(e);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /**
   * The highest event number that has left the outbox (handed to the Queue), or null before any did. Numbers
   * leave oldest first, so everything below the lowest pending event has left. The console compares it with the
   * highest number it received: a difference is events lost on the way that no later event revealed (the last
   * ones an agent sent before going quiet).
   */
  shippedThrough(): number | null {
    this.save();
    this.#ensure();
    const lowest = this.#pendingRows(1)[0]?.seq;
    const through = lowest === undefined ? this.#issued : lowest - 1;
    return through > 0 ? through : null;
  }

  /** How many events wait to be sent. */
  pending(): number {
    this.save();
    this.#ensure();
    return this.#pendingRows().length;
  }

  /**
   * Sends everything pending, step by step, oldest first. Returns how many were sent; a Queue error stops and
   * rethrows. `prepare` turns stored rows into what is sent (size check, number, signature), in the background.
   * Writes nothing: rows whose events have all been sent become free for later writes.
   */
  async drain(queue: QueueLike, prepare: (rows: OutboxRow[]) => string[] | Promise<string[]> = (rows) => rows.map((r) => r.body)): Promise<number> {
    this.save();
    this.#ensure();
    let sent = 0;
    for (;;) {
      const rows = this.#pendingRows(DRAIN_EVENTS);
      if (!rows.length) return sent;
      await sendPacked(queue, await prepare(rows));
      this.#shipped = Math.max(this.#shipped, rows[rows.length - 1]!.seq);
      sent += rows.length;
      for (const [slot, last] of this.#unsent) {
        if (last > this.#shipped) continue;
        this.#unsent.delete(slot);
        this.#free.push(slot);
      }
    }
  }

  /**
   * Records how far sending got (row 0), so a later wake does not send those events again. One row written;
   * meant for a quiet spell. Returns whether it wrote.
   */
  compact(): boolean {
    if (!this.#ready || this.#shipped <= this.#marked) return false;
    this.#exec(`INSERT INTO ${OUTBOX_TABLE} (slot, last_seq, body) VALUES (0, ?, '') ON CONFLICT(slot) DO UPDATE SET last_seq = excluded.last_seq`, this.#shipped);
    this.#marked = this.#shipped;
    return true;
  }
}
