import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { storedEvents } from "../fixtures/outbox";
import { pollRows } from "../helpers";
import { chatStub } from "./drive";

/**
 * The telemetry outbox under a Think chat turn (issue 16 item 5): the turn's events are committed in the agent's
 * SQLite with the turn's own work, so an eviction mid-turn loses none of them. After the wake (the SDK recovers the
 * turn) every event the evicted isolate committed reaches the console under its number, no number is missing, and
 * the turn ends completed there as it does in the SDK. The foreign-fleet e2e saw a Think turn reach the console as
 * its first events and nothing after; this is that path inside workerd, with a real eviction (ctx.abort()).
 */

const uid = () => crypto.randomUUID().slice(0, 8);

describe("a Think chat turn's telemetry across an eviction", () => {
  it("every event committed before the eviction reaches the console after the wake, numbered without a gap, and the turn completes there", async () => {
    const name = `outbox-think-${uid()}`;
    const stub = await chatStub("ThinkChatFixture", name);
    await stub.setScript([
      { kind: "stall", chunks: ["Importing"] },
      { kind: "text", chunks: ["Imported after a restart."] },
    ]);
    const { submissionId, streamed } = await stub.submitAndStream("please import");
    expect(streamed).toBe(true);

    // What the outbox committed before the eviction: the turn's start is among it, numbered from 1 without a hole.
    const committed = await runInDurableObject(stub as never, async (_agent, state: DurableObjectState) => storedEvents(state.storage.sql));
    const types = committed.map((e) => (JSON.parse(e.body) as { type: string }).type);
    expect(types).toContain("chat.turn.started");
    const numbers = committed.map((e) => e.seq);
    const highest = Math.max(...numbers);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => highest - numbers.length + 1 + i));

    await stub.evict().catch(() => {});
    const woken = await chatStub("ThinkChatFixture", name);
    await runDurableObjectAlarm(woken as never);
    expect(await woken.waitSubmission(submissionId, 20_000)).toMatchObject({ status: "completed" });
    await woken.settleTelemetry();

    // Every number up to the highest the console received arrived (seq_seen counts distinct numbered events), and
    // the highest is past what the evicted isolate committed: nothing committed was lost, nothing looks lost.
    const [agent] = await pollRows<{ seq_max: number; seq_seen: number }>(
      "SELECT seq_max, seq_seen FROM agents WHERE agent_class = 'ThinkChatFixture' AND agent_name = ?",
      [name],
      (r) => r.length === 1 && r[0]!.seq_max > highest && r[0]!.seq_seen === r[0]!.seq_max,
      20_000,
    );
    expect(agent!.seq_seen).toBe(agent!.seq_max);
    const [run] = await pollRows<{ kind: string; outcome: string | null }>(
      "SELECT kind, outcome FROM runs WHERE agent_name = ? AND fiber_id = ?",
      [name, submissionId],
      // "recovering" comes first (the recovery's own events); the turn's finish follows it.
      (r) => r.length === 1 && r[0]!.outcome === "completed",
      20_000,
    );
    expect(run).toEqual({ kind: "chat_turn", outcome: "completed" });
  });
});
