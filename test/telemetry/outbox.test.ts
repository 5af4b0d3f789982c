import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { hasUnsentEvents, OUTBOX_TABLE, Outbox, parseOutboxBody, ROW_TEXT_MAX } from "@agent-oncall/telemetry/outbox";
import { getAgentByName } from "agents";
import { expect, it } from "vitest";
import { makeEvent } from "../fixtures/events";

// The durable outbox (src/telemetry/outbox.ts) on a real Durable Object's SQLite: what each write costs the agent in
// rows written, and what a wake sends again. Driven on PlainAdminAgent, which has no telemetry of its own, so the
// outbox table holds only what these tests put there.

type Sent = { seq: number; id: string };

/** A Queue that records what was sent (packed arrays of event texts). */
function tapQueue(sent: Sent[]) {
  return {
    async sendBatch(messages: Iterable<MessageSendRequest<unknown>>) {
      for (const m of messages) for (const e of JSON.parse(m.body as string) as { seq: number; id: string }[]) sent.push({ seq: e.seq, id: e.id });
    },
  };
}

/** Puts `n` events and writes them as one turn would. */
function write(outbox: Outbox, n: number): void {
  for (let i = 0; i < n; i++) {
    const e = makeEvent("session.status_idle", {}, { agentName: "outbox-test" }) as TelemetryEvent;
    outbox.put(e, JSON.stringify(e), (err) => {
      throw err;
    });
  }
  outbox.save();
}

/** Numbers the sender stamps (what Telemetry's prepare does), so the tap can read them. */
const stamp = (rows: { seq: number; body: string }[]) => rows.map((r) => `${r.body.slice(0, -1)},"seq":${r.seq}}`);

async function inAgent(fn: (sql: SqlStorage) => Promise<void>): Promise<void> {
  const stub = await getAgentByName(env.PlainAdminAgent, `outbox-${crypto.randomUUID().slice(0, 8)}`);
  await runInDurableObject(stub, (_instance, state) => fn(state.storage.sql));
}

const rowCount = (sql: SqlStorage) => sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${OUTBOX_TABLE}`).one().n;

it("each turn's write is one row written, and a drained row is overwritten rather than deleted and added", async () => {
  await inAgent(async (sql) => {
    const sent: Sent[] = [];
    const outbox = new Outbox(sql);
    for (let turn = 0; turn < 10; turn++) {
      write(outbox, 3);
      await outbox.drain(tapQueue(sent), stamp);
    }
    expect(outbox.rowsWritten).toBe(10);
    expect(rowCount(sql)).toBe(1);
    expect(sent.map((s) => s.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    // The row holds only the last turn's events, not everything ever written.
    const [row] = sql.exec<{ body: string }>(`SELECT body FROM ${OUTBOX_TABLE}`).toArray();
    expect(parseOutboxBody(row!.body).map((r) => r.seq)).toEqual([28, 29, 30]);
  });
});

it("turns written before a send take a row each, reused oldest first once sent; a wake numbers on from the highest", async () => {
  await inAgent(async (sql) => {
    const sent: Sent[] = [];
    const outbox = new Outbox(sql);
    for (let turn = 0; turn < 4; turn++) write(outbox, 2);
    expect(rowCount(sql)).toBe(4);
    expect(await outbox.drain(tapQueue(sent), stamp)).toBe(8);
    write(outbox, 1);
    expect(rowCount(sql)).toBe(4);
    expect(outbox.rowsWritten).toBe(5);
    // A wake (a new isolate's outbox on the same rows) sends again what was not marked sent, under the same numbers.
    const woken = new Outbox(sql);
    const again: Sent[] = [];
    await woken.drain(tapQueue(again), stamp);
    expect(again.map((s) => s.seq)).toEqual([3, 4, 5, 6, 7, 8, 9]);
    write(woken, 1);
    await woken.drain(tapQueue(again), stamp);
    expect(again.at(-1)!.seq).toBe(10);
  });
});

it("after a quiet spell, compact marks what was sent in one row, so a wake sends nothing again", async () => {
  await inAgent(async (sql) => {
    const outbox = new Outbox(sql);
    write(outbox, 3);
    expect(outbox.compact()).toBe(false); // not sent yet: nothing to mark
    await outbox.drain(tapQueue([]), stamp);
    const before = outbox.rowsWritten;
    expect(outbox.compact()).toBe(true);
    expect(outbox.rowsWritten - before).toBe(1);
    expect(outbox.compact()).toBe(false); // already marked
    const woken = new Outbox(sql);
    expect(woken.pending()).toBe(0);
    expect(woken.shippedThrough()).toBe(3);
    const again: Sent[] = [];
    write(woken, 1);
    await woken.drain(tapQueue(again), stamp);
    expect(again.map((s) => s.seq)).toEqual([4]);
  });
});

it("rows a burst added past the ring's keep are deleted at the next quiet spell, and numbering goes on", async () => {
  await inAgent(async (sql) => {
    const outbox = new Outbox(sql);
    for (let turn = 0; turn < 100; turn++) write(outbox, 1);
    expect(rowCount(sql)).toBe(100);
    await outbox.drain(tapQueue([]), stamp);
    expect(outbox.compact()).toBe(true);
    // 64 event rows kept for the next burst, plus the mark.
    expect(rowCount(sql)).toBe(65);
    const woken = new Outbox(sql);
    const again: Sent[] = [];
    write(woken, 1);
    await woken.drain(tapQueue(again), stamp);
    expect(again.map((s) => s.seq)).toEqual([101]);
    expect(rowCount(sql)).toBe(65);
  });
});

it("a Queue that never takes the events: the outbox keeps at most its cap of unsent text, deleting the oldest rows, never the newest", async () => {
  await inAgent(async (sql) => {
    const dropped: number[] = [];
    // One event's text is about 250 characters: the cap holds about four rows of two events.
    const outbox = new Outbox(sql, "turn", { maxUnsentChars: 2_000, onDrop: (n) => dropped.push(n) });
    for (let turn = 0; turn < 20; turn++) write(outbox, 2);
    // Storage stays bounded: 40 events were written, only the newest rows within the cap are kept.
    const kept = rowCount(sql);
    expect(kept).toBeLessThanOrEqual(5);
    expect(rowTexts(sql).reduce((n, r) => n + r.body.length, 0)).toBeLessThanOrEqual(2_000);
    expect(outbox.dropped).toBe(40 - 2 * kept);
    expect(dropped.reduce((a, b) => a + b, 0)).toBe(outbox.dropped);
    expect(outbox.pending()).toBe(2 * kept);
    // The deleted events count as gone: the console, which received none, sees them as missing.
    expect(outbox.shippedThrough()).toBe(40 - 2 * kept);
    // When the Queue takes them again, the kept events go out under their own numbers, the newest last.
    const sent: Sent[] = [];
    await outbox.drain(tapQueue(sent), stamp);
    expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: 2 * kept }, (_, i) => 41 - 2 * kept + i));
    // A wake reads the kept rows' sizes back and goes on bounding from there.
    const woken = new Outbox(sql, "turn", { maxUnsentChars: 2_000 });
    for (let turn = 0; turn < 20; turn++) write(woken, 2);
    expect(rowTexts(sql).reduce((n, r) => n + r.body.length, 0)).toBeLessThanOrEqual(2_000);
    expect(woken.dropped).toBeGreaterThan(0);
    expect(woken.shippedThrough()).toBe(80 - woken.pending());
  });
});

it("a single write larger than the cap is kept whole: the newest row is never deleted", async () => {
  await inAgent(async (sql) => {
    const outbox = new Outbox(sql, "turn", { maxUnsentChars: 100 });
    write(outbox, 3);
    expect(outbox.dropped).toBe(0);
    expect(outbox.pending()).toBe(3);
    write(outbox, 3);
    expect(outbox.dropped).toBe(3);
    expect(outbox.pending()).toBe(3);
    expect(outbox.shippedThrough()).toBe(3);
  });
});

/** An event whose text is about `chars` characters long. */
function sizedEvent(chars: number): { event: TelemetryEvent; text: string } {
  const event = makeEvent("session.status_idle", {}, { agentName: "outbox-test" }) as TelemetryEvent;
  const padded = { ...event, corr: { ...event.corr, requestId: "r".repeat(chars) } } as TelemetryEvent;
  return { event: padded, text: JSON.stringify(padded) };
}

const rowTexts = (sql: SqlStorage) => sql.exec<{ body: string }>(`SELECT body FROM ${OUTBOX_TABLE} WHERE slot <> 0 ORDER BY last_seq`).toArray();

it("a write of more text than a row holds takes several rows, each under SQLite's limit, and sends every event once in order", async () => {
  await inAgent(async (sql) => {
    const outbox = new Outbox(sql);
    // ~1.6 M characters in one turn: one statement would be refused (SQLITE_TOOBIG) and every event lost.
    for (let i = 0; i < 800; i++) {
      const { event, text } = sizedEvent(2_000);
      outbox.put(event, text, (err) => {
        throw err;
      });
    }
    outbox.save();
    const rows = rowTexts(sql);
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const r of rows) expect(r.body.length).toBeLessThanOrEqual(ROW_TEXT_MAX);
    expect(outbox.rowsWritten).toBe(rows.length);
    const sent: Sent[] = [];
    await outbox.drain(tapQueue(sent), stamp);
    expect(sent.map((s) => s.seq)).toEqual(Array.from({ length: 800 }, (_, i) => i + 1));
  });
});

it('"flush" writes at once when a row\'s worth of text waits, without waiting for its timer', async () => {
  await inAgent(async (sql) => {
    const outbox = new Outbox(sql, "flush");
    const perRow = Math.ceil(ROW_TEXT_MAX / 2_000) + 1;
    for (let i = 0; i < perRow; i++) {
      const { event, text } = sizedEvent(2_000);
      outbox.put(event, text, (err) => {
        throw err;
      });
    }
    // Written in the same turn as the puts: no timer has run yet.
    expect(outbox.rowsWritten).toBe(1);
    expect(rowCount(sql)).toBe(1);
    const sent: Sent[] = [];
    await outbox.drain(tapQueue(sent), stamp);
    expect(sent).toHaveLength(perRow);
  });
});

it("a write that storage refuses keeps its events, and a later write numbers them from where numbering stood", async () => {
  await inAgent(async (sql) => {
    let refuse = true;
    const flaky = {
      exec: ((query: string, ...bindings: unknown[]) => {
        if (refuse && /^(INSERT|UPDATE)/.test(query)) {
          refuse = false;
          throw new Error("storage refused the write");
        }
        return sql.exec(query, ...bindings);
      }) as SqlStorage["exec"],
    };
    const outbox = new Outbox(flaky);
    for (let i = 0; i < 3; i++) {
      const e = makeEvent("session.status_idle", {}, { agentName: "outbox-test" }) as TelemetryEvent;
      outbox.put(e, JSON.stringify(e), () => {});
    }
    expect(() => outbox.save()).toThrow("storage refused the write");
    expect(outbox.pending()).toBe(3);
    const sent: Sent[] = [];
    await outbox.drain(tapQueue(sent), stamp);
    expect(sent.map((s) => s.seq)).toEqual([1, 2, 3]);
  });
});

it("a wake can tell from storage alone whether an earlier life left events unsent (what makes it send them first)", async () => {
  await inAgent(async (sql) => {
    expect(hasUnsentEvents(sql)).toBe(false); // no outbox table: this agent never emitted
    const outbox = new Outbox(sql);
    write(outbox, 2);
    expect(hasUnsentEvents(sql)).toBe(true);
    await outbox.drain(tapQueue([]), stamp);
    // Sent, but no quiet spell marked them: a wake cannot tell, and sends them again (ingest dedupes).
    expect(hasUnsentEvents(sql)).toBe(true);
    expect(outbox.compact()).toBe(true);
    expect(hasUnsentEvents(sql)).toBe(false);
    write(outbox, 1);
    expect(hasUnsentEvents(sql)).toBe(true);
  });
});
