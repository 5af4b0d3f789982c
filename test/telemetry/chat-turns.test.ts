import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { pollRows } from "../helpers";

/**
 * One user chat turn, however many times the SDK runs it (src/telemetry/chat-turns.ts): the agent's telemetry names
 * the user turn each recovery turn, fiber and recovery event belongs to, and ingest folds them into one run. These
 * feed the SDK's event shapes (agents 0.32 / Think 0.23, as the chat suite sees them for real: test/chat) through a
 * Telemetry on a real Durable Object's SQLite and the real Queue into D1.
 */

type Ev = { type: string; request_id: string | null; incident_id: string | null; payload: string };
type Run = { fiber_id: string; kind: string; name: string; outcome: string | null; attempt: number | null; error: string | null; reason: string | null };

const uid = () => crypto.randomUUID().slice(0, 8);
const eventsOf = (name: string, n: number) =>
  pollRows<Ev>("SELECT type, request_id, incident_id, payload FROM events WHERE agent_name = ? ORDER BY time, id", [name], (r) => r.length >= n);
const runsOf = (name: string) =>
  env.DB.prepare("SELECT fiber_id, kind, name, outcome, attempt, error, reason FROM runs WHERE agent_name = ? ORDER BY fiber_id")
    .bind(name)
    .all<Run>()
    .then((r) => r.results);
const p = (e: Ev | undefined) => JSON.parse(e!.payload) as Record<string, unknown>;
const chat = (type: string, incidentId: string, requestId: string, attempt = 1, extra: Record<string, unknown> = {}) => ({
  type,
  payload: { incidentId, requestId, attempt, maxAttempts: 3, recoveryKind: "continue", ...extra },
});

/** Runs `fn` with a Telemetry on a fresh probe agent's SQLite, as `withTelemetry` builds it (its recovery root read from `root`). */
async function withAgentSql(name: string, fn: (make: (root: () => string | null) => Telemetry, sql: SqlStorage) => Promise<void>) {
  const stub = await getAgentByName(env.ProbeAgent, name);
  await runInDurableObject(stub, async (_agent, state) => {
    const make = (root: () => string | null) =>
      new Telemetry({
        source: { agentClass: "ChatTurnUnit", agentName: name },
        queue: env.TELEMETRY_QUEUE,
        sql: state.storage.sql,
        activeChatRecoveryRoot: root,
      });
    await fn(make, state.storage.sql);
  });
}

describe("chat turns: recovery turns join the user turn they continue", () => {
  it("stamps the user turn and counts its runs durably, across an eviction; ingest makes one run of them", async () => {
    const name = `ct-join-${uid()}`;
    await withAgentSql(name, async (make, sql) => {
      let active: string | null = null;
      const t1 = make(() => active);
      t1.emitSdk({ type: "chat:turn:start", payload: { requestId: "u1", trigger: "submission", continuation: false } });
      // A stall routed into recovery: the SDK schedules it, then reports the stalled turn's status.
      t1.emitSdk(chat("chat:recovery:detected", "u1:m1", "u1"));
      t1.emitSdk(chat("chat:recovery:scheduled", "u1:m1", "u1"));
      t1.emitSdk({ type: "chat:turn:finish", payload: { requestId: "u1", trigger: "submission", status: "aborted", durationMs: 300 } });
      active = "u1"; // the recovery callback runs: the SDK's recovery root is the user's turn
      t1.emitSdk({ type: "chat:turn:start", payload: { requestId: "c1", trigger: "recovery-continue", continuation: true } });
      await t1.settle();
      // Evicted mid-recovery-turn: a new isolate, a new Telemetry. The recovery hook hands over the turn's snapshot.
      active = null;
      const t2 = make(() => active);
      t2.chatRecovered({
        __cfThinkChatFiberSnapshot: { kind: "think-chat-turn", version: 1, requestId: "c1", recoveryRootRequestId: "u1", continuation: true },
      });
      t2.emitSdk({ type: "fiber:run:interrupted", payload: { fiberId: "chat_n2", fiberName: "__cf_internal_chat_turn:c1" } });
      t2.emitSdk(chat("chat:recovery:attempt", "u1:m1", "c1"));
      active = "u1";
      t2.emitSdk({ type: "chat:turn:start", payload: { requestId: "c2", trigger: "recovery-continue", continuation: true } });
      t2.emitSdk({ type: "chat:turn:finish", payload: { requestId: "c2", trigger: "recovery-continue", status: "completed", durationMs: 20 } });
      t2.emitSdk(chat("chat:recovery:completed", "u1:m1", "u1"));
      await t2.settle();
      // The count lives until the recovery ends: none is left behind.
      expect(sql.exec("SELECT COUNT(*) AS n FROM cf_telemetry_turn_runs").one().n).toBe(0);
    });

    const events = await eventsOf(name, 10);
    const of = (type: string, req: string) => events.find((e) => e.type === type && e.request_id === req);
    expect(p(of("chat.turn.finished", "u1"))).toMatchObject({ status: "aborted", recovering: true });
    expect(p(of("chat.turn.started", "c1"))).toMatchObject({ rootRequestId: "u1", turnAttempt: 2 });
    expect(p(of("fiber.interrupted", "c1"))).toMatchObject({ kind: "chat_turn", rootRequestId: "u1" });
    expect(p(of("chat.recovery.attempt", "c1"))).toMatchObject({ rootRequestId: "u1" });
    expect(p(of("chat.turn.started", "c2"))).toMatchObject({ rootRequestId: "u1", turnAttempt: 3 });
    expect(p(of("chat.turn.finished", "c2"))).toMatchObject({ rootRequestId: "u1", status: "completed" });

    const [run] = await pollRows<Run>(
      "SELECT fiber_id, kind, name, outcome, attempt, error, reason FROM runs WHERE agent_name = ?",
      [name],
      (r) => r[0]?.outcome === "completed",
    );
    expect(await runsOf(name)).toEqual([
      { fiber_id: "u1", kind: "chat_turn", name: "chat turn (submission)", outcome: "completed", attempt: 3, error: null, reason: null },
    ]);
    expect(run!.fiber_id).toBe("u1");
  });

  it("exhausted means exhausted: what the SDK reports after giving up is sealed, on the turn and on its incident", async () => {
    const name = `ct-sealed-${uid()}`;
    await withAgentSql(name, async (make) => {
      let active: string | null = null;
      const t = make(() => active);
      t.emitSdk({ type: "chat:turn:start", payload: { requestId: "u2", trigger: "submission" } });
      t.emitSdk(chat("chat:recovery:detected", "u2:m1", "u2"));
      t.emitSdk(chat("chat:recovery:scheduled", "u2:m1", "u2"));
      t.emitSdk({ type: "chat:turn:finish", payload: { requestId: "u2", status: "aborted" } });
      active = "u2";
      t.emitSdk({ type: "chat:turn:start", payload: { requestId: "c3", trigger: "recovery-continue", continuation: true } });
      // The continuation stalls too: the SDK exhausts the incident inside it (its payload names the user turn) …
      t.emitSdk(chat("chat:recovery:attempt", "u2:m1", "c3"));
      t.emitSdk(
        chat("chat:recovery:exhausted", "u2:m1", "c3", 1, {
          recoveryRootRequestId: "u2",
          reason: "max_attempts_exceeded",
          terminalMessage: "Sorry, this reply could not be recovered.",
          partialText: "part",
        }),
      );
      // … then the aborted continuation settles and the SDK marks the incident failed.
      t.emitSdk({ type: "chat:turn:finish", payload: { requestId: "c3", status: "aborted" } });
      t.emitSdk(chat("chat:recovery:failed", "u2:m1", "c3"));
      await t.settle();
    });
    const events = await eventsOf(name, 9);
    expect(p(events.find((e) => e.type === "chat.turn.finished" && e.request_id === "c3"))).toMatchObject({ sealed: true, rootRequestId: "u2" });
    expect(p(events.find((e) => e.type === "chat.recovery.failed"))).toMatchObject({ sealed: true });
    const [incident] = await pollRows<{ status: string; reason: string; attempts: number }>(
      "SELECT status, reason, attempts FROM incidents WHERE agent_name = ? AND incident_id = 'u2:m1'",
      [name],
      (r) => r.length === 1 && r[0]!.status !== "open",
    );
    expect(incident).toEqual({ status: "exhausted", reason: "max_attempts_exceeded", attempts: 1 });
    const [run] = await pollRows<Run>(
      "SELECT fiber_id, kind, name, outcome, attempt, error, reason FROM runs WHERE agent_name = ?",
      [name],
      (r) => r[0]?.outcome === "exhausted",
    );
    expect(run).toEqual({
      fiber_id: "u2",
      kind: "chat_turn",
      name: "chat turn (submission)",
      outcome: "exhausted",
      attempt: 2,
      error: "Sorry, this reply could not be recovered.",
      reason: "max_attempts_exceeded",
    });
  });

  it("reports a turn's end from onChatResponse only where the SDK reports none itself, and the failure a finish does not name", async () => {
    const name = `ct-finish-${uid()}`;
    await withAgentSql(name, async (make) => {
      const t = make(() => null);
      // AIChatAgent: no chat:turn:finish; its onChatResponse result is the turn's end.
      t.chatResponse({ requestId: "a1", status: "error", error: "the model rejected the prompt" });
      // Think: it reports the turn itself (its onChatResponse copy says nothing new) …
      t.emitSdk({ type: "chat:turn:start", payload: { requestId: "t1", trigger: "submission" } });
      // … but its finish of a failed stream names no error: the request's failure it reported before does.
      t.emitSdk({
        type: "chat:request:failed",
        payload: { requestId: "t1", stage: "stream", error: "upstream said no: api_key=sk-live_ABCDEFGHIJKLMNOPQRSTUV" },
      });
      t.emitSdk({ type: "chat:turn:finish", payload: { requestId: "t1", trigger: "submission", status: "error" } });
      t.chatResponse({ requestId: "t1", status: "error", error: "duplicate" });
      await t.settle();
    });
    const events = await eventsOf(name, 4);
    const finishes = events.filter((e) => e.type === "chat.turn.finished");
    expect(finishes.map((e) => [e.request_id, p(e).status, p(e).error])).toEqual([
      ["a1", "error", "the model rejected the prompt"],
      ["t1", "error", expect.stringContaining("upstream said no")],
    ]);
    expect(JSON.stringify(finishes)).not.toContain("sk-live_");
    expect(
      await pollRows<Run>(
        "SELECT fiber_id, kind, name, outcome, attempt, error, reason FROM runs WHERE agent_name = ? ORDER BY fiber_id",
        [name],
        (r) => r.length === 2,
      ),
    ).toEqual([
      { fiber_id: "a1", kind: "chat_turn", name: "chat turn", outcome: "failed", attempt: null, error: "the model rejected the prompt", reason: null },
      {
        fiber_id: "t1",
        kind: "chat_turn",
        name: "chat turn (submission)",
        outcome: "failed",
        attempt: 1,
        error: expect.stringContaining("upstream said no"),
        reason: null,
      },
    ]);
  });
});
