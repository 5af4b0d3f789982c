import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listRuns } from "../../../../src/store/read-models";
import { pollRows, pollRunRows, rejectionOf, runRowsOf } from "../../../helpers";
import { chatAgent, eventsOfType, payloadOf, reconnect, stall, text } from "./chat-helpers";

/**
 * Think runs every chat turn on the SDK's internal `__cf_internal_chat_turn` machinery (a Tasks run, whose
 * recovery is handed a fiber context named after the turn's request id). The console shows each turn as a
 * chat_turn run keyed by its request id, with an outcome, and never that machinery as a fiber of its own.
 */

type RunRow = {
  fiber_id: string;
  kind: string;
  name: string;
  outcome: string | null;
  error: string | null;
  reason: string | null;
  snapshot_preview: string | null;
};

/** The agent's runs as the console holds them (D1's, and those that completed healthily, from R2), oldest first. */
const runsOf = async (name: string) =>
  ((await runRowsOf(name)) as (RunRow & { first_seen: number })[]).sort(
    (a, b) => a.first_seen - b.first_seen || (a.fiber_id < b.fiber_id ? -1 : a.fiber_id > b.fiber_id ? 1 : 0),
  );

/** No run of the agent is a chat turn's internal fiber or Task carrier (none named after it, none keyed `chat_…`). */
async function expectNoInternalRuns(name: string) {
  const internal = await env.DB.prepare(
    "SELECT fiber_id, kind, name FROM runs WHERE agent_name = ? AND (name LIKE '__cf_internal_chat_turn%' OR fiber_id LIKE 'chat\\_%' ESCAPE '\\')",
  )
    .bind(name)
    .all();
  expect(internal.results).toEqual([]);
}

describe("chat turns of a real Think agent are chat_turn runs", () => {
  it("a completed turn is one chat_turn run, completed, keyed by its request id", async () => {
    const { name, stub } = await chatAgent("run-ok");
    await stub.setScript({ steps: [text("All ", "green.")] });
    const out = await stub.sendUserMessage("status?");
    expect(out.status).toBe("completed");

    // It completed healthily: it left D1 with its end, and the console folds it from the R2 history.
    const [row] = await pollRunRows<RunRow>(
      name,
      (r) => r.fiber_id === out.requestId,
      (r) => r[0]?.outcome === "completed",
    );
    expect(row).toMatchObject({ kind: "chat_turn", name: "chat turn (programmatic)", error: null });
    await stub.settleTelemetry();
    await expectNoInternalRuns(name);
    expect((await runsOf(name)).map((r) => [r.fiber_id, r.kind, r.outcome])).toEqual([[out.requestId, "chat_turn", "completed"]]);
    const started = await eventsOfType(name, "chat.turn.started");
    expect(started.map((e) => e.request_id)).toEqual([out.requestId]);
  });

  it("a turn evicted mid-stream and continued by recovery is ONE run: completed, its recovery counted as attempt 2", async () => {
    const { name, stub } = await chatAgent("run-evict");
    await stub.setScript({ steps: [stall("The answer is"), text(" forty-two.")] });
    const start = await stub.startUserMessage("what is the answer?");
    expect(start.model).toBe("stalled");
    expect((await rejectionOf(stub.evict())).message).toContain("test eviction");
    const woken = await reconnect(name);
    expect(await runDurableObjectAlarm(woken)).toBe(true);
    await eventsOfType(name, "chat.recovery.completed"); // the continuation turn has run
    const continuation = (await woken.modelCalls())[1]!.requestId!;
    expect(continuation).not.toBe(start.requestId);

    // The user's turn: one run, keyed by its request id, completed by its recovery turn, which is its second attempt.
    // (This test used to expect two runs, the interrupted turn and its continuation: one user turn counted twice.)
    const [turn] = await pollRows<RunRow & { attempt: number | null }>(
      "SELECT * FROM runs WHERE agent_name = ? AND fiber_id = ?",
      [name, start.requestId],
      (r) => r[0]?.outcome === "completed" && r[0]?.attempt === 2,
    );
    expect(turn).toMatchObject({ kind: "chat_turn", name: "chat turn (programmatic)", error: null });
    expect(turn!.snapshot_preview).not.toBeNull(); // the interrupted attempt's last checkpoint

    // The interruption's events carry the turn's request id, so they are on its timeline.
    const runEvents = await env.DB.prepare("SELECT type, request_id FROM events WHERE agent_name = ? AND type LIKE 'fiber.%'")
      .bind(name)
      .all<{ type: string; request_id: string }>();
    expect(runEvents.results.map((e) => e.type)).toContain("fiber.interrupted");
    expect(runEvents.results.every((e) => e.request_id === start.requestId)).toBe(true);
    const started = await eventsOfType(name, "chat.turn.started", 2);
    expect(started.map((e) => [e.request_id, payloadOf(e).rootRequestId ?? null, payloadOf(e).turnAttempt ?? null])).toEqual([
      [start.requestId, null, null],
      [continuation, start.requestId, 2],
    ]);

    await woken.settleTelemetry();
    await expectNoInternalRuns(name);
    // Nothing else: no run of the continuation, none of the recovery's Tasks run, nothing left running.
    const runs = await listRuns(env.DB, { agentName: name });
    expect(runs.items.map((r) => [r.runId, r.kind, r.status])).toEqual([[start.requestId, "chat_turn", "completed"]]);
    expect(await pollRows<RunRow>("SELECT * FROM runs WHERE agent_name = ? AND fiber_id != ?", [name, start.requestId], (r) => r.length === 0)).toEqual([]);
  });
});
