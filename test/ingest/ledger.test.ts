import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { runRetention } from "../../src/store/retention";
import { ingestBatch } from "../../worker/ingest/consumer";
import { guardStatements, isLedgerConflict, keyedEvents, LEDGER_SLOT_MS, ledgerBucket, ledgerKey, readLedger } from "../../worker/ingest/ledger";
import { makeEvent } from "../fixtures/events";

const asMessages = (events: unknown[]) => events.map((body, i) => ({ id: `m-${i}-${crypto.randomUUID()}`, body }));

/** What a person reads of a recovering incident: its re-spent tokens and attempts, and the agent's re-spent rollup. */
async function figures(agentName: string, incidentId: string) {
  const inc = await env.DB.prepare("SELECT respent_input_tokens AS i, respent_output_tokens AS o, attempt_events AS a FROM incidents WHERE incident_id = ?")
    .bind(incidentId)
    .first<{ i: number; o: number; a: number }>();
  const respent = await env.DB.prepare("SELECT COALESCE(SUM(tokens), 0) AS t FROM respent_rollups WHERE agent_name = ?").bind(agentName).first<{ t: number }>();
  const agent = await env.DB.prepare("SELECT seq_seen AS s FROM agents WHERE agent_name = ?").bind(agentName).first<{ s: number }>();
  return { ...inc, respent: respent!.t, seqSeen: agent?.s ?? 0 };
}

/** Two recovery attempts and the tokens they re-spent (tail-shaped: no seq), and a numbered (outbox) event. */
function recovery(agentName: string, at: number): TelemetryEvent[] {
  const incidentId = `req-${agentName}:msg-1`;
  const inc = { incidentId, requestId: `req-${agentName}` };
  const base = { maxAttempts: 3, recoveryKind: "continue" as const };
  return [
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr: inc, time: at }),
    makeEvent("model.usage", { inputTokens: 1000, outputTokens: 40, attempt: 1, model: "m" }, { agentName, corr: { incidentId }, time: at + 1 }),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { agentName, corr: inc, time: at + 2 }),
    { ...makeEvent("model.usage", { inputTokens: 500, outputTokens: 5, attempt: 2, model: "m" }, { agentName, corr: { incidentId }, time: at + 3 }), seq: 7 },
  ];
}

const ledgerRows = async (buckets: number[]) =>
  (
    await env.DB.prepare(`SELECT bucket, keys FROM event_ledger WHERE bucket IN (${buckets.map(() => "?").join(",")})`)
      .bind(...buckets)
      .all<{ bucket: number; keys: string }>()
  ).results;

/** The keys a ledger row holds (",k1,k2,"). */
const keysOf = (row: { keys: string }) => row.keys.split(",").filter(Boolean);

/** Events of one agent at the given times (a plain type: no projection besides the session's). */
const idleAt = (agentName: string, times: number[]) => times.map((time) => makeEvent("session.status_idle", {}, { agentName, time }));

describe("the idempotency ledger", () => {
  it("keys an event by its agent and id: 64 bits as 14 base36 characters", () => {
    const k = ledgerKey("ChatAgent", "a-1", "ev-1");
    expect(k).toMatch(/^[0-9a-z]{14}$/);
    expect(ledgerKey("ChatAgent", "a-1", "ev-1")).toBe(k);
    // Another agent's event under the same id is another event; so is the same agent's next id.
    const others = [ledgerKey("ChatAgent", "a-2", "ev-1"), ledgerKey("OtherAgent", "a-1", "ev-1"), ledgerKey("ChatAgent", "a-1", "ev-2")];
    expect(new Set([k, ...others]).size).toBe(4);
    // No accidental collisions among many similar ids (a weak hash would show some at this size).
    const many = new Set(Array.from({ length: 50_000 }, (_, i) => ledgerKey("ChatAgent", `agent-${i % 97}`, `ev-${i}`)));
    expect(many.size).toBe(50_000);
  });

  it("counts a redelivered or resent event once: tail items and outbox resends, in rollups and projection sums", async () => {
    const agentName = `ledger-once-${crypto.randomUUID().slice(0, 8)}`;
    const events = recovery(agentName, Date.now() - 60_000);
    const incidentId = `req-${agentName}:msg-1`;
    const first = await ingestBatch(env.DB, asMessages(events));
    expect(first).toMatchObject({ stored: 4, added: 4 });
    const once = await figures(agentName, incidentId);
    expect(once).toMatchObject({ i: 1500, o: 45, a: 2, respent: 1545, seqSeen: 1 });

    // The whole batch again (a Queue redelivery), one event alone (an outbox resend), and both in one batch.
    const again = await ingestBatch(env.DB, asMessages(events));
    expect(again).toMatchObject({ stored: 4, added: 0, rowsWritten: 0 });
    await ingestBatch(env.DB, asMessages([events[3]!]));
    await ingestBatch(env.DB, asMessages([events[1]!, events[1]!, events[3]!]));
    expect(await figures(agentName, incidentId)).toEqual(once);

    // A batch that brings one new event beside old ones counts only the new one.
    const extra = makeEvent("model.usage", { inputTokens: 10, outputTokens: 1, attempt: 2, model: "m" }, { agentName, corr: { incidentId } });
    expect(await ingestBatch(env.DB, asMessages([...events, extra]))).toMatchObject({ stored: 5, added: 1 });
    expect(await figures(agentName, incidentId)).toMatchObject({ i: 1510, o: 46, respent: 1556 });
  });

  it("keeps one row per slot: a write inserts or appends to a row per slot it touches, and each key is filed once", async () => {
    const agentName = `ledger-rows-${crypto.randomUUID().slice(0, 8)}`;
    const slot = ledgerBucket(Date.now() - 3 * 3_600_000);
    // 30 events in one slot, 10 in the next: two rows written for the write, whatever the number of events.
    const first = idleAt(agentName, [
      ...Array.from({ length: 30 }, (_, i) => slot + 100 + i),
      ...Array.from({ length: 10 }, (_, i) => slot + LEDGER_SLOT_MS + 100 + i),
    ]);
    const r = await ingestBatch(env.DB, asMessages(first));
    expect(r.rowsWrittenByTable.event_ledger).toBe(2);
    // A second write to the same slots appends to their rows: two rows written again, still two rows.
    const second = idleAt(agentName, [slot + 500, slot + LEDGER_SLOT_MS + 500]);
    const r2 = await ingestBatch(env.DB, asMessages(second));
    expect(r2.rowsWrittenByTable.event_ledger).toBe(2);
    const rows = await ledgerRows([slot, slot + LEDGER_SLOT_MS]);
    expect(rows.map((row) => row.bucket)).toEqual([slot, slot + LEDGER_SLOT_MS]);
    const all = rows.flatMap(keysOf);
    for (const e of [...first, ...second]) expect(all.filter((k) => k === ledgerKey("ProbeAgent", agentName, e.id))).toHaveLength(1);
    expect(all).toHaveLength(42);
    // What a write read does not depend on which write filed a key: the first write's events are held.
    expect((await readLedger(env.DB, keyedEvents([first[0]!, first[39]!, second[1]!]))).fresh).toEqual([]);
  });

  it("reads what a batch brings, not what its slot holds: a write's ledger reads stay the same however many writes came before", async () => {
    const agentName = `ledger-reads-${crypto.randomUUID().slice(0, 8)}`;
    const slot = ledgerBucket(Date.now() - 2 * 3_600_000);
    let t = slot;
    const batch = (n: number) =>
      idleAt(
        agentName,
        Array.from({ length: n }, () => ++t),
      );
    const probe = async () => {
      const keyed = keyedEvents(batch(20));
      const read = await readLedger(env.DB, keyed);
      expect(read.fresh).toHaveLength(20);
      const guard = await env.DB.batch(guardStatements(env.DB, read));
      return { read: read.rowsRead, guard: guard.reduce((n, g) => n + Number(g.meta.rows_read ?? 0), 0) };
    };
    await ingestBatch(env.DB, asMessages(batch(50)));
    const early = await probe();
    // 40 more writes of 50 events each into the same slot: 2,050 keys in its row.
    for (let i = 0; i < 40; i++) await ingestBatch(env.DB, asMessages(batch(50)));
    const late = await probe();
    expect(late).toEqual(early);
    // A few rows per slot the batch touches (its parameter entry and its row), not one per key the slot holds.
    expect(late.read).toBeLessThanOrEqual(4);
    expect(late.guard).toBeLessThanOrEqual(4);
    const row = (await ledgerRows([slot]))[0]!;
    expect(keysOf(row).length).toBeGreaterThanOrEqual(2_050);
  });

  it("finds an event delivered again long after it was stored, by its event time's slot", async () => {
    const agentName = `ledger-late-${crypto.randomUUID().slice(0, 8)}`;
    const incidentId = `req-${agentName}:msg-1`;
    const now = Date.now();
    const events = recovery(agentName, now - 5 * 3_600_000);
    await ingestBatch(env.DB, asMessages(events), { now: now - 5 * 3_600_000 + 10_000 });
    const once = await figures(agentName, incidentId);
    // Hours of other writes later (other slots), the same events come again beside a new one.
    for (let h = 4; h >= 1; h--) await ingestBatch(env.DB, asMessages(idleAt(`${agentName}-other`, [now - h * 3_600_000 - 37_000])), { now });
    const fresh = makeEvent("session.status_idle", {}, { agentName, time: now - 1000 });
    expect(await ingestBatch(env.DB, asMessages([...events, fresh]), { now })).toMatchObject({ stored: 5, added: 1 });
    expect(await figures(agentName, incidentId)).toEqual(once);
  });

  it("stores each event once when two writers take overlapping batches at the same time", async () => {
    const agentName = `ledger-pair-${crypto.randomUUID().slice(0, 8)}`;
    const incidentId = `req-${agentName}:msg-1`;
    const events = recovery(agentName, Date.now() - 30_000);
    const extra = idleAt(agentName, [Date.now() - 20_000, Date.now() - 19_000]);
    // Both read the ledger before either writes (each waits in its R2 write for the other to have read).
    let reads = 0;
    let release!: () => void;
    const bothRead = new Promise<void>((r) => {
      release = r;
    });
    const history = async () => {
      if (++reads === 2) release();
      await bothRead;
    };
    const [a, b] = await Promise.all([
      ingestBatch(env.DB, asMessages([...events, extra[0]!]), { history }),
      ingestBatch(env.DB, asMessages([...events, extra[1]!]), { history }),
    ]);
    // One writer stored the shared events; the other's guard aborted it, and its retry stored only its own.
    expect(a.added + b.added).toBe(6);
    expect(await figures(agentName, incidentId)).toMatchObject({ i: 1500, o: 45, a: 2, respent: 1545, seqSeen: 1 });
    const rows = await ledgerRows([...new Set([...events, ...extra].map((e) => ledgerBucket(e.time)))]);
    const keys = rows.flatMap(keysOf);
    for (const e of [...events, ...extra]) expect(keys.filter((k) => k === ledgerKey("ProbeAgent", agentName, e.id))).toHaveLength(1);
  });

  it("catches a concurrent duplicate inside the transaction: the guard aborts it whole, and the retry stores nothing twice", async () => {
    const agentName = `ledger-race-${crypto.randomUUID().slice(0, 8)}`;
    const incidentId = `req-${agentName}:msg-1`;
    const events = recovery(agentName, Date.now() - 120_000);

    // Low level: read the ledger (all fresh), let another write store the events, then run the guard.
    const keyed = keyedEvents(events);
    const read = await readLedger(env.DB, keyed);
    expect(read.fresh).toHaveLength(4);
    await ingestBatch(env.DB, asMessages(events));
    const marker = `ledger-race-marker-${crypto.randomUUID()}`;
    const write = env.DB.prepare("INSERT INTO store_settings (key, value) VALUES (?, 'x')").bind(marker);
    const failure = await env.DB.batch([...guardStatements(env.DB, read), write]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isLedgerConflict(failure)).toBe(true);
    // Nothing of the aborted transaction was written, not even statements after the guard.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM store_settings WHERE key = ?").bind(marker).first("n")).toBe(0);
    // With nothing stored concurrently, the same guard passes and writes nothing itself.
    const other = await readLedger(env.DB, keyedEvents([makeEvent("session.status_idle", {}, { agentName })]));
    const ok = await env.DB.batch(guardStatements(env.DB, other));
    expect(ok[0]!.meta.rows_written ?? 0).toBe(0);
    // Another write to the same slot that appended other keys since the read does not trip it either.
    await ingestBatch(env.DB, asMessages([makeEvent("session.status_idle", {}, { agentName: `${agentName}-c`, time: other.fresh[0]!.e.time })]));
    const still = await env.DB.batch(guardStatements(env.DB, other));
    expect(still[0]!.meta.rows_written ?? 0).toBe(0);

    // Through ingest: a concurrent consumer stores the same events between this one's ledger read and its
    // transaction (here, while this one writes R2). The guard aborts; the re-read finds them stored.
    const name2 = `${agentName}-b`;
    const events2 = recovery(name2, Date.now() - 60_000);
    const toR2: string[][] = [];
    let raced = false;
    const r = await ingestBatch(env.DB, asMessages(events2), {
      history: async (fresh) => {
        toR2.push(fresh.map((e) => e.id));
        if (raced) return;
        raced = true;
        await ingestBatch(env.DB, asMessages(events2));
      },
    });
    expect(r).toMatchObject({ stored: 4, added: 0 });
    // Written to R2 once by this call (before the race was found); the retry had nothing fresh to write.
    expect(toR2).toEqual([events2.map((e) => e.id)]);
    expect(await figures(name2, `req-${name2}:msg-1`)).toMatchObject({ i: 1500, o: 45, a: 2, respent: 1545, seqSeen: 1 });
    expect(await figures(agentName, incidentId)).toMatchObject({ i: 1500, a: 2, respent: 1545 });
  });

  it("goes after the hot window with retention: a bucket once its whole slot is older", async () => {
    const agentName = `ledger-retention-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    const old = ledgerBucket(now - 10 * 86_400_000) + 5000;
    const recent = now - 60_000;
    await ingestBatch(env.DB, asMessages([makeEvent("session.status_idle", {}, { agentName, time: old })]), { now });
    await ingestBatch(env.DB, asMessages([makeEvent("session.status_idle", {}, { agentName, time: recent })]), { now });
    const buckets = [ledgerBucket(old), ledgerBucket(recent)];
    expect(await ledgerRows(buckets)).toHaveLength(2);
    const r = await runRetention(env.DB, { maxAgeDays: 60, hotWindowHours: 48, now });
    expect(r.deleted.event_ledger).toBeGreaterThanOrEqual(1);
    expect(await ledgerRows([buckets[0]!])).toEqual([]);
    expect(await ledgerRows([buckets[1]!])).toHaveLength(1);
  });
});
