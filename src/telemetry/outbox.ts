import type { TelemetryEvent } from "./envelope.js";
import { sendPacked } from "./pack.js";

/** The part of a Queue binding the outbox needs. */
export type QueueLike = { sendBatch(messages: Iterable<MessageSendRequest<unknown>>): Promise<unknown> };

/** The part of Durable Object SQL storage the outbox needs. */
export type SqlLike = Pick<SqlStorage, "exec">;

/**
 * Microtask hops without a new event before a turn's events are written. Microtasks all run before the turn
 * ends, so waiting never leaves the turn's storage transaction; it lets the rest of an SDK call's events
 * join the same statement. A runFiber's end comes more than 8 promise reactions after its start even when its work
 * is synchronous: at 8 hops each call cost two rows written (bench: runFiber), at 64 one. A hop is one queued
 * microtask, no I/O.
 */
const SAVE_AFTER_QUIET_HOPS = 64;
/**
 * What each hop chains on: a promise reaction costs the agent far less than `queueMicrotask`, which in workerd
 * wraps every callback for its async context (bench: runFiber, 64 hops a call cost 0.18 ms that way).
 */
const settled = Promise.resolve();
/**
 * With `writeAt: "flush"`, how long events wait in memory before one statement writes them all (ms): what an
 * eviction can lose, whatever the send interval (flushDelayMs) is.
 */
export const SAVE_DELAY_MS = 100;
/** Events sent per drain step. */
const DRAIN_EVENTS = 500;
/**
 * Characters of event text one row holds at most. Durable Object SQLite refuses a string over 2 MB (SQLITE_TOOBIG);
 * at ≤ 3 bytes per character this stays under it. A write of more (a busy agent in "flush" mode, or one turn that emits
 * thousands of events) takes as many rows as it needs, and "flush" writes as soon as it has this much.
 */
export const ROW_TEXT_MAX = 512 * 1024;
/** Characters a stored line adds to its event's text, at most: its number (≤ 16 digits), a tab, a newline. */
const LINE_EXTRA = 18;
/**
 * Rows kept after a quiet spell (compact). A burst grows the ring by one row per turn written while the Queue send
 * is under way; past this many, the oldest (all sent) are deleted once, so storage stays bounded by the usual load.
 */
const RING_KEEP = 64;
/**
 * Characters of unsent event text the outbox keeps at most (8 Mi: some 25,000 events of the demo's size, hours of a
 * busy agent's events). Past it the oldest unsent rows are deleted (Outbox.#bound): a Queue binding that is missing,
 * or a Queue that refuses every send, must not grow the agent's storage and its rows written without end. A dropped
 * event keeps its number's place, so the console counts it as missing (seq.ts); `dropped` counts it here.
 */
export const MAX_UNSENT_CHARS = 8 * 1024 * 1024;
/** The key of the row that records, after a quiet spell, the highest number handed to the Queue (see compact). */
const MARK_SLOT = 0;
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
 * Whether an earlier isolate stored events here that no quiet spell marked as sent (see Outbox.compact): one read of
 * the ring's few rows (RING_KEEP after a burst), nothing written. False without the table (an agent that never
 * emitted).
 */
export function hasUnsentEvents(sql: SqlLike): boolean {
  try {
    const [r] = sql
      .exec<{ top: number | null; mark: number | null }>(
        `SELECT (SELECT MAX(last_seq) FROM ${OUTBOX_TABLE} WHERE slot <> ${MARK_SLOT}) AS top, (SELECT last_seq FROM ${OUTBOX_TABLE} WHERE slot = ${MARK_SLOT}) AS mark`,
      )
      .toArray();
    return r?.top != null && r.top > (r.mark ?? 0);
  } catch {
    return false; // no outbox table yet
  }
}

/**
 * A durable outbox in the agent's own SQLite that costs the agent one row written per turn that emits events, not
 * two per event. Events are written in the same turn of the event loop as the agent work that produced them (so
 * they commit together with it), one row per write holding that write's events; they are sent to the Queue in the
 * background. Rows are a ring: a write reuses the oldest row whose events have all been sent (an UPDATE that
 * rewrites only this write's text), and adds a row only when every row still holds unsent events (a burst, or a
 * backlog while the Queue is down). Sent rows are never deleted one by one: the next write overwrites them. After a
 * quiet spell, `compact` records the highest number sent in one row (MARK_SLOT), so a later wake does not send
 * them again; an eviction before it means the next wake sends them again (ingest dedupes on event id, and a resent
 * event keeps its number).
 *
 * Rows written, per operation: a turn's write is one row (UPDATE of a sent row, or INSERT of a new one); `compact`
 * is one row per quiet spell (plus, once, the rows a burst added past RING_KEEP). Counted in `rowsWritten` from
 * the cursors' own figures. Why not one growing row: rewriting a row of many KB on every turn cost the agent more
 * time than its own fiber bookkeeping did (bench: runFiber).
 *
 * Each event's number (`seq`, seq.ts) is given here: one more than the highest number any row records
 * (`last_seq`); a row is only ever overwritten with higher numbers and the newest row is never deleted, so numbers
 * rise across drains and evictions without a hole.
 */
export class Outbox {
  #ready = false;
  /** Events put in this turn (with their JSON text), written as one statement before the turn ends. */
  #unsaved: { event: TelemetryEvent; text: string }[] = [];
  /** Characters of text in #unsaved. */
  #unsavedChars = 0;
  /** Events put since the pending write last looked (see put). */
  #putSinceHop = false;
  /** Highest number given. */
  #issued = 0;
  /** Highest number handed to the Queue (after a wake: the mark a quiet spell recorded, see compact). */
  #shipped = 0;
  /** The mark row's number: the highest number known to have left before a wake. */
  #marked = 0;
  /** The event rows, oldest first (by their last number), with their text's length: the front one is reused once its events have left. */
  #ring: { slot: number; lastSeq: number; chars: number }[] = [];
  #maxSlot = 0;
  #rowsWritten = 0;
  #dropped = 0;
  /**
   * `writeAt`: "turn" (the default) writes each turn's events in that turn, so they commit with the work that
   * produced them and survive any eviction: one row per turn that emits events. "flush" writes what gathered
   * over SAVE_DELAY_MS in one statement (one row per such interval, however many turns it spans): far fewer rows
   * written, but the events of the last SAVE_DELAY_MS before an eviction are lost, unnumbered, so the console
   * cannot count them either.
   */
  constructor(
    private readonly sql: SqlLike,
    private readonly writeAt: "turn" | "flush" = "turn",
    private readonly limits: { maxUnsentChars?: number; onDrop?: (events: number) => void } = {},
  ) {}

  /** DO SQLite rows this outbox wrote (its cursors' rowsWritten), since this isolate started. */
  get rowsWritten(): number {
    return this.#rowsWritten;
  }

  /** Unsent events this outbox deleted to stay within MAX_UNSENT_CHARS, since this isolate started. */
  get dropped(): number {
    return this.#dropped;
  }

  #exec(query: string, ...bindings: unknown[]): void {
    this.#rowsWritten += this.sql.exec(query, ...bindings).rowsWritten;
  }

  #ensure(): void {
    if (this.#ready) return;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS ${OUTBOX_TABLE} (slot INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, body TEXT NOT NULL)`);
    this.#migrate();
    for (const r of this.sql.exec<{ slot: number; last_seq: number; chars: number }>(
      `SELECT slot, last_seq, length(body) AS chars FROM ${OUTBOX_TABLE} ORDER BY last_seq, slot`,
    )) {
      this.#issued = Math.max(this.#issued, r.last_seq);
      this.#maxSlot = Math.max(this.#maxSlot, r.slot);
      if (r.slot === MARK_SLOT) this.#marked = this.#shipped = r.last_seq;
      else this.#ring.push({ slot: r.slot, lastSeq: r.last_seq, chars: r.chars });
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
   * Queues one event (and its JSON text) for storage. `onError` hears of a failed write.
   * - "turn": the write happens a few microtasks later, still inside the current turn of the event loop and so
   *   inside the same storage transaction as the work that produced the event: it waits while events keep arriving
   *   within the turn (an SDK call's later events come a few microtasks after its first), so one statement, one row
   *   written, carries them all.
   * - "flush": the write happens SAVE_DELAY_MS after the first event not yet written (or at the next drain, if that
   *   comes first), one statement for every event put meanwhile, however long the sender waits before it sends.
   * In both, once a row's worth of text (ROW_TEXT_MAX) waits, it is written before the next event joins: a busy
   * agent's timer may fire late, and one statement of everything would exceed what SQLite stores in a row.
   */
  put(event: TelemetryEvent, text: string, onError: (e: unknown, events: TelemetryEvent[]) => void): void {
    this.#putSinceHop = true;
    const chars = text.length + LINE_EXTRA;
    // A row's worth waits: written now, before this event joins it, whatever the wait was meant to be.
    if (this.#unsaved.length && this.#unsavedChars + chars > ROW_TEXT_MAX) this.#write(onError);
    this.#unsavedChars += chars;
    if (this.#unsaved.push({ event, text }) !== 1) return;
    if (this.writeAt === "flush") {
      setTimeout(() => this.#write(onError), SAVE_DELAY_MS);
      return;
    }
    let quiet = 0;
    const hop = () => {
      if (this.#putSinceHop) quiet = 0;
      this.#putSinceHop = false;
      if (++quiet < SAVE_AFTER_QUIET_HOPS && this.#unsaved.length) return void settled.then(hop);
      this.#write(onError);
    };
    void settled.then(hop);
  }

  /** save(), and if storage refuses, the events leave the outbox for `onError`'s fallback (not written twice). */
  #write(onError: (e: unknown, events: TelemetryEvent[]) => void): void {
    try {
      this.save();
    } catch (e) {
      const events = this.#unsaved.splice(0).map((u) => u.event);
      this.#unsavedChars = 0;
      onError(e, events);
    }
  }

  /**
   * Writes events queued by put() now: one row written (one more per ROW_TEXT_MAX characters of text). If storage
   * fails, the events not written stay queued and the error is thrown; they take no number until written.
   */
  save(): void {
    if (!this.#unsaved.length) return;
    const events = this.#unsaved;
    this.#unsaved = [];
    this.#unsavedChars = 0;
    this.#ensure();
    let from = 0;
    try {
      while (from < events.length) {
        let seq = this.#issued;
        let text = "";
        let to = from;
        // At least one event per row: an event's own text is far below the cap (MAX_EVENT_BYTES).
        do text += `${text ? "\n" : ""}${++seq}\t${events[to++]!.text}`;
        while (to < events.length && text.length + events[to]!.text.length + LINE_EXTRA <= ROW_TEXT_MAX);
        this.#writeRow(seq, text);
        this.#issued = seq;
        from = to;
      }
      this.#bound();
    } catch (e) {
      const left = events.slice(from);
      this.#unsaved = left.concat(this.#unsaved);
      this.#unsavedChars = this.#unsaved.reduce((n, u) => n + u.text.length + LINE_EXTRA, 0);
      throw e;
    }
  }

  /** One row of events whose highest number is `lastSeq`: over the oldest row already sent, else a new row. */
  #writeRow(lastSeq: number, text: string): void {
    const oldest = this.#ring[0];
    if (oldest && oldest.lastSeq <= this.#shipped) {
      // Everything that row held has been sent: overwriting it is the delete of the sent events.
      this.#exec(`UPDATE ${OUTBOX_TABLE} SET last_seq = ?, body = ? WHERE slot = ?`, lastSeq, text, oldest.slot);
      this.#ring.shift();
      this.#ring.push({ slot: oldest.slot, lastSeq, chars: text.length });
    } else {
      const slot = ++this.#maxSlot;
      this.#exec(`INSERT INTO ${OUTBOX_TABLE} (slot, last_seq, body) VALUES (?, ?, ?)`, slot, lastSeq, text);
      this.#ring.push({ slot, lastSeq, chars: text.length });
    }
  }

  /**
   * Keeps the unsent text within MAX_UNSENT_CHARS by deleting the oldest unsent rows (one row written each), never
   * the newest row (numbering rests on it). Each deleted row's unsent events are counted from its text: a rare path,
   * and exact across wakes.
   */
  #bound(): void {
    const max = this.limits.maxUnsentChars ?? MAX_UNSENT_CHARS;
    let first = this.#ring.length;
    let unsent = 0;
    while (first > 0 && this.#ring[first - 1]!.lastSeq > this.#shipped) unsent += this.#ring[--first]!.chars;
    let events = 0;
    while (unsent > max && first < this.#ring.length - 1) {
      const row = this.#ring[first]!;
      const cursor = this.sql.exec<{ body: string }>(`DELETE FROM ${OUTBOX_TABLE} WHERE slot = ? RETURNING body`, row.slot);
      for (const { body } of cursor.toArray()) events += parseOutboxBody(body).filter((e) => e.seq > this.#shipped).length;
      this.#rowsWritten += cursor.rowsWritten;
      // Out of the ring only once the row is gone: a refused delete leaves both as they were.
      this.#ring.splice(first, 1);
      unsent -= row.chars;
    }
    if (!events) return;
    this.#dropped += events;
    this.limits.onDrop?.(events);
  }

  /**
   * Stored events not yet handed to the Queue, oldest first, at most `limit`. Only the rows that hold them are read,
   * each by its key (the ring says which: its newest rows), never a scan of the table.
   */
  #pendingRows(limit = Number.POSITIVE_INFINITY): OutboxRow[] {
    let from = this.#ring.length;
    while (from > 0 && this.#ring[from - 1]!.lastSeq > this.#shipped) from--;
    const out: OutboxRow[] = [];
    for (const { slot } of this.#ring.slice(from)) {
      const row = this.sql.exec<{ body: string }>(`SELECT body FROM ${OUTBOX_TABLE} WHERE slot = ?`, slot).toArray()[0];
      for (const e of parseOutboxBody(row?.body ?? "")) {
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
   * Rows whose events have all been sent are overwritten by later writes (or marked sent by compact).
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
    }
  }

  /**
   * After a quiet spell, when every event has been sent: records the highest number sent (one row), so a later wake
   * does not send them again, and deletes the rows a burst added past RING_KEEP (all sent). A busy agent never pays
   * it: it runs only when nothing was written for a while. Returns whether it wrote.
   */
  compact(): boolean {
    if (!this.#ready || this.#unsaved.length || this.#issued > this.#shipped || this.#marked >= this.#shipped) return false;
    this.#exec(
      `INSERT INTO ${OUTBOX_TABLE} (slot, last_seq, body) VALUES (?, ?, '') ON CONFLICT(slot) DO UPDATE SET last_seq = excluded.last_seq`,
      MARK_SLOT,
      this.#shipped,
    );
    this.#marked = this.#shipped;
    const excess = this.#ring.length - RING_KEEP;
    if (excess > 0) {
      // The ring is in number order: the oldest rows are the ones up to the last excess row's number.
      const through = this.#ring.splice(0, excess).at(-1)!.lastSeq;
      this.#exec(`DELETE FROM ${OUTBOX_TABLE} WHERE slot <> ? AND last_seq <= ?`, MARK_SLOT, through);
    }
    return true;
  }
}
