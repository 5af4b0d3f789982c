import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { newEventId, signingKey, verifyEventSignature } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { findAgent } from "../../src/store/read-models/agents";
import { eventGapOf } from "../../src/store/read-models/event-gaps";
import { ingestBatch, ingestOptionsFromEnv } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { GAP_SIGNING_SECRET, type Shipped } from "../fixtures/gap-agent";
import { pollRows, rejectionOf } from "../helpers";

// Every event an agent's durable outbox ships carries the agent's own number (`seq`, src/telemetry/seq.ts):
// 1, 2, 3… with no hole, across evictions, given to placeholders too, covered by the signature. Driven on
// GapAgent, a plain Agent with both mixins whose Queue is tapped (test/fixtures/gap-agent.ts).

const uid = () => crypto.randomUUID().slice(0, 8);

async function gapAgent(prefix = "seq") {
  const name = `${prefix}-${uid()}`;
  return { name, stub: await getAgentByName(env.GapAgent, name) };
}

/** The numbers of what was shipped, in send order, each event once (a resend repeats an id). */
function numbersOf(shipped: Shipped[]): number[] {
  const seen = new Set<string>();
  return shipped.filter((e) => !seen.has(e.id) && seen.add(e.id)).map((e) => e.seq as number);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("per-agent event numbers", () => {
  it("a real agent's events carry 1, 2, 3… in the order they happened, and the console counts them all", async () => {
    const { name, stub } = await gapAgent();
    await stub.work(3);
    const shipped = await stub.shipped();
    // Each fiber: started, one stash event (five synchronous stashes coalesce before the outbox), completed.
    expect(shipped.map((e) => e.type)).toEqual(Array.from({ length: 3 }, () => ["fiber.started", "fiber.stashed", "fiber.completed"]).flat());
    expect(shipped.map((e) => e.seq)).toEqual(range(1, 9));
    for (const e of shipped) expect(e.source).toEqual({ agentClass: "GapAgent", agentName: name });
    const [row] = await pollRows<{ seq_max: number; seq_seen: number }>(
      "SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?",
      [name],
      (r) => r[0]?.seq_seen === 9,
    );
    expect(row).toEqual({ seq_max: 9, seq_seen: 9 });
  });

  it("numbers keep rising across an eviction (the outbox never reuses one)", async () => {
    const { name, stub } = await gapAgent();
    await stub.work(1);
    expect(numbersOf(await stub.shipped())).toEqual([1, 2, 3]);
    expect((await rejectionOf(stub.evict())).message).toContain("gap test eviction");
    const again = await getAgentByName(env.GapAgent, name);
    await again.work(1);
    // A new isolate: its tap saw what it sent. The events the evicted one had sent may go again (the outbox
    // clears sent events at its next write or after a quiet spell), under their own numbers; new events go on at 4.
    const shipped = await again.shipped();
    expect(numbersOf(shipped).filter((n) => n > 3)).toEqual([4, 5, 6]);
    expect(numbersOf(shipped).filter((n) => n <= 3)).toEqual(numbersOf(shipped).filter((n) => n <= 3).length ? [1, 2, 3] : []);
  });

  it("every event committed before an eviction reaches the Queue after the restart, under its own number", async () => {
    const { name, stub } = await gapAgent("evicted");
    await stub.work(1);
    expect(numbersOf(await stub.shipped())).toEqual([1, 2, 3]);
    // The Queue is down: each call's events are committed with its turn (the call has returned) but not sent.
    await stub.holdQueue(true);
    const one = await stub.recordEvent("session.status_running", { turnSeq: 1 }, { sessionName: name });
    const three = await stub.recordMany(3, name);
    const last = await stub.recordEvent("session.status_idle", { turnSeq: 3 }, { sessionName: name });
    expect((await rejectionOf(stub.evict())).message).toContain("gap test eviction");

    const again = await getAgentByName(env.GapAgent, name);
    expect(await again.settleTelemetry()).toMatchObject({ pending: 0, sendErrors: 0 });
    const seqOf = new Map((await again.shipped()).map((e) => [e.id, e.seq]));
    expect([one, ...three, last].map((id) => seqOf.get(id))).toEqual([4, 5, 6, 7, 8]);
    // The console has all eight, with no gap.
    const [row] = await pollRows<{ seq_max: number; seq_seen: number }>(
      "SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?",
      [name],
      (r) => r[0]?.seq_seen === 8,
    );
    expect(row).toEqual({ seq_max: 8, seq_seen: 8 });
    // Numbering goes on after them.
    await again.work(1);
    expect(numbersOf(await again.shipped()).slice(-3)).toEqual([9, 10, 11]);
  });

  it("numbers keep rising across wakes that find only a full, already sent row (the newest row is never deleted)", async () => {
    const { name, stub } = await gapAgent("full-row");
    // Nine events of 3.5 KB, one turn each: the last of them takes the row past its 32 KB, and all are sent.
    for (let i = 1; i <= 9; i++) await stub.recordEvent("session.error", { turnSeq: i, error: `${i % 10}`.repeat(3_500) }, { sessionName: name });
    expect(await stub.settleTelemetry()).toMatchObject({ pending: 0, sendErrors: 0 });
    expect((await rejectionOf(stub.evict())).message).toContain("gap test eviction");
    // A wake with nothing new: it sends the full row again (it cannot know that row went), and must keep it.
    const woken = await getAgentByName(env.GapAgent, name);
    expect(await woken.settleTelemetry()).toMatchObject({ pending: 0, sendErrors: 0 });
    expect((await rejectionOf(woken.evict())).message).toContain("gap test eviction");
    const again = await getAgentByName(env.GapAgent, name);
    await again.recordEvent("session.status_idle", { turnSeq: 9 }, { sessionName: name });
    await again.settleTelemetry();
    expect(numbersOf(await again.shipped()).at(-1)).toBe(10);
  });

  it("an event too large for the Queue ships as a placeholder under its own number, whether replaced at emit or at send", async () => {
    const { name, stub } = await gapAgent();
    await stub.recordEvent("session.status_running", { turnSeq: 1 }, { sessionName: name });
    await stub.recordEvent("session.error", { turnSeq: 1, error: "x".repeat(200_000) }, { sessionName: name });
    await stub.settleTelemetry();
    expect((await stub.shipped()).map((e) => [e.type, e.seq])).toEqual([
      ["session.status_running", 1],
      ["event.too_large", 2],
    ]);
    // A row over the limit left by an older version (one event per row in cf_telemetry_outbox, numbered by its
    // AUTOINCREMENT key, here the next number), found by the next wake: replaced at send, after its number is known.
    const legacy = { ...makeEvent("session.status_idle", { turnSeq: 1, detail: "€".repeat(60_000) }, { agentName: name, time: Date.now() }), id: newEventId() };
    legacy.source = { agentClass: "GapAgent", agentName: name };
    await runInDurableObject(stub, async (_agent, state) => {
      state.storage.sql.exec("CREATE TABLE cf_telemetry_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, body TEXT NOT NULL)");
      state.storage.sql.exec("INSERT INTO cf_telemetry_outbox (seq, id, body) VALUES (3, ?, ?)", legacy.id, JSON.stringify(legacy));
    });
    expect((await rejectionOf(stub.evict())).message).toContain("gap test eviction");
    const again = await getAgentByName(env.GapAgent, name);
    await again.recordEvent("session.status_idle", { turnSeq: 1 }, { sessionName: name });
    expect(await again.settleTelemetry()).toMatchObject({ tooLarge: 1, pending: 0, sendErrors: 0 });
    // What the evicted isolate had sent (1, 2) may go again under its numbers; then the older version's row and the new event.
    const shipped = (await again.shipped()).filter((e) => (e.seq as number) > 2);
    expect(shipped.map((e) => [e.type, e.seq])).toEqual([
      ["event.too_large", 3],
      ["session.status_idle", 4],
    ]);
    expect(shipped[0]!.id).toBe(legacy.id);
    // The older table is gone once its rows moved.
    expect(
      await runInDurableObject(
        again,
        async (_a, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'cf_telemetry_outbox'").one().n,
      ),
    ).toBe(0);
  });

  it("an event naming another agent ships unnumbered, and never takes one of this agent's numbers; a seq set by the caller is replaced", async () => {
    const { name, stub } = await gapAgent();
    await stub.recordEvent("session.status_running", { turnSeq: 1 }, { sessionName: name });
    const foreign = { ...makeEvent("session.status_idle", { turnSeq: 1 }, { agentName: `${name}-neighbour`, time: Date.now() }), seq: 77 };
    await stub.emitEvent(foreign);
    const own = {
      ...makeEvent("session.status_idle", { turnSeq: 2 }, { agentName: name, time: Date.now() }),
      source: { agentClass: "GapAgent", agentName: name },
      seq: 500,
    };
    await stub.emitEvent(own);
    await stub.settleTelemetry();
    const shipped = await stub.shipped();
    const byId = new Map(shipped.map((e) => [e.id, e]));
    expect(byId.get(foreign.id)).not.toHaveProperty("seq");
    expect(byId.get(own.id)!.seq).toBe(2);
    expect(shipped.filter((e) => e.source.agentName === name).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("the signature covers the number: signed mode stores the events, and a changed number is refused", async () => {
    const { name, stub } = await gapAgent("signed");
    await stub.work(1);
    const shipped = await stub.shipped();
    const key = await signingKey(GAP_SIGNING_SECRET);
    for (const e of shipped) expect(await verifyEventSignature(e as unknown as Record<string, unknown>, key)).toBe("valid");
    // The last field before the signature is the number (the verifier re-serialises in key order).
    expect(JSON.stringify(shipped[0]!)).toMatch(/,"seq":1,"sig":"hmac-sha256=[A-Za-z0-9_-]{43}"\}$/);
    const forged = { ...shipped[1]!, seq: 41 };
    expect(await verifyEventSignature(forged as unknown as Record<string, unknown>, key)).toBe("invalid");

    const opts = await ingestOptionsFromEnv({ ...env, TELEMETRY_SIGNING_SECRET: GAP_SIGNING_SECRET });
    const r = await ingestBatch(env.DB, [{ id: `m-${uid()}`, body: JSON.stringify([forged]) }], opts);
    expect(r).toMatchObject({ stored: 0, deadLettered: 1 });
    const reason = await env.DB.prepare("SELECT reason FROM dead_letters WHERE instr(body, ?) > 0").bind(forged.id).first<{ reason: string }>();
    expect(reason?.reason).toMatch(/^bad signature/);
    await pollRows(
      "SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?",
      [name],
      (rows) => (rows[0] as { seq_seen?: number } | undefined)?.seq_seen === 3,
    );
  });

  it("a wiped agent starts again at 1, and the console says its numbering restarted instead of counting a gap", async () => {
    const { name, stub } = await gapAgent("wiped");
    await stub.work(2);
    await pollRows("SELECT 1 FROM agents WHERE agent_name = ? AND seq_seen = 6", [name], (r) => r.length === 1);
    expect((await rejectionOf(stub.wipeAndEvict())).message).toContain("storage wiped");
    const fresh = await getAgentByName(env.GapAgent, name);
    await fresh.work(1);
    expect(numbersOf(await fresh.shipped())).toEqual([1, 2, 3]);
    const [row] = await pollRows<{ seq_max: number; seq_seen: number }>(
      "SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?",
      [name],
      (r) => r[0]?.seq_seen === 9,
    );
    expect(row).toEqual({ seq_max: 6, seq_seen: 9 });
    expect(eventGapOf((await findAgent(env.DB, "GapAgent", name))!)).toEqual({ missing: 0, highest: 6, arrived: 9, restarted: true });
  });
});
