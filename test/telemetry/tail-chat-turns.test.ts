import { captureFromTail, TailChatTurns, type TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it } from "vitest";

/**
 * Folding a chat turn's recovery attempts on the tail path (src/telemetry/tail-chat-turns.ts), across trace items,
 * with the SDK's messages as a Think sub-agent publishes them (agents 0.32, Think 0.23: recorded from
 * test/chat/tail-matrix.test.ts's agents). The live comparison with the SDK is that matrix; this holds the edges.
 */

type Msg = { type: string; payload: Record<string, unknown> };
let clock = 1_800_000_000_000;
function item(agent: string, name: string, messages: Msg[]): TailItem {
  const t = (clock += 1000);
  return {
    scriptName: null,
    durableObjectId: `obj-${agent}-${name}`,
    eventTimestamp: t,
    truncated: false,
    diagnosticsChannelEvents: messages.map((m, i) => ({ timestamp: t, channel: "agents:chat", message: { ...m, agent, name, timestamp: t + i } })),
  };
}

const fiber = (type: string, requestId: string, fiberId: string, extra: Record<string, unknown> = {}): Msg => ({
  type,
  payload: { fiberId, fiberName: `__cf_internal_chat_turn:${requestId}`, managed: false, ...extra },
});
const turn = (type: "chat:turn:start" | "chat:turn:finish", requestId: string, continuation: boolean, extra: Record<string, unknown> = {}): Msg => ({
  type,
  payload: { requestId, trigger: continuation ? "recovery-continue" : "programmatic", admission: "queue", continuation, ...extra },
});
const recovery = (type: string, root: string, requestId: string, extra: Record<string, unknown> = {}): Msg => ({
  type: `chat:recovery:${type}`,
  payload: { incidentId: `${root}:user-1`, requestId, attempt: 1, maxAttempts: 3, recoveryKind: "continue", ...extra },
});

/** An evicted turn `root`, recovered by `next` in the invocation after the one that scheduled it. */
const evictedThenRecovered = (agent: string, name: string, root: string, next: string) => [
  item(agent, name, [turn("chat:turn:start", root, false), fiber("fiber:run:started", root, `f-${root}`)]),
  item(agent, name, [
    fiber("fiber:recovery:detected", root, `f-${root}`),
    fiber("fiber:run:interrupted", root, `f-${root}`),
    fiber("fiber:recovery:attempt", root, `f-${root}`),
    recovery("detected", root, root),
    recovery("attempt", root, root),
    recovery("scheduled", root, root),
    fiber("fiber:recovery:handled", root, `f-${root}`, { status: "internal" }),
  ]),
  item(agent, name, [
    turn("chat:turn:start", next, true),
    fiber("fiber:run:started", next, `f-${next}`),
    fiber("fiber:run:completed", next, `f-${next}`),
    turn("chat:turn:finish", next, true, { status: "completed", durationMs: 5 }),
    recovery("completed", root, root),
  ]),
];

describe("tail chat turns", () => {
  it("folds a recovery turn into the user turn across items: its start is attempt 2, its end is the user turn's", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(evictedThenRecovered("SubChat", "h", "r1", "r2"), { turns });
    const of = (type: string, req: string) => events.find((e) => e.type === type && e.corr.requestId === req)?.payload;
    expect(of("chat.turn.started", "r2")).toMatchObject({ rootRequestId: "r1", turnAttempt: 2 });
    expect(of("chat.turn.finished", "r2")).toMatchObject({ rootRequestId: "r1", status: "completed" });
    expect(of("fiber.completed", "r2")).toMatchObject({ rootRequestId: "r1" });
    // The user's own turn carries no root, and its chat recovery names it.
    expect(of("chat.turn.started", "r1")).not.toHaveProperty("rootRequestId");
    expect(events.filter((e) => e.type.startsWith("chat.recovery.")).map((e) => (e.payload as { rootRequestId?: string }).rootRequestId)).toEqual([
      "r1",
      "r1",
      "r1",
      "r1",
    ]);
    // The turn's fiber recovering is not a second recovery: the chat recovery counts it.
    expect(events.filter((e) => e.type === "fiber.recovery.detected" || e.type === "fiber.recovery.attempt")).toEqual([]);
  });

  it("keeps two agents' recoveries apart when their items interleave, and same-named agents of two classes too", () => {
    const turns = new TailChatTurns();
    const a = evictedThenRecovered("SubChat", "h", "a1", "a2");
    const b = evictedThenRecovered("OtherChat", "h", "b1", "b2");
    const { events } = captureFromTail([a[0]!, b[0]!, a[1]!, b[1]!, b[2]!, a[2]!], { turns });
    const started = (req: string) => events.find((e) => e.type === "chat.turn.started" && e.corr.requestId === req)?.payload;
    expect(started("a2")).toMatchObject({ rootRequestId: "a1", turnAttempt: 2 });
    expect(started("b2")).toMatchObject({ rootRequestId: "b1", turnAttempt: 2 });
  });

  it("after the SDK gave up, the aborted recovery turn's finish is sealed and its fiber's completion is not the turn's end", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("SubChat", "h", [
          turn("chat:turn:start", "u1", false),
          recovery("detected", "u1", "u1"),
          recovery("attempt", "u1", "u1"),
          recovery("scheduled", "u1", "u1"),
        ]),
        item("SubChat", "h", [
          turn("chat:turn:finish", "u1", false, { status: "aborted" }),
          turn("chat:turn:start", "u2", true),
          fiber("fiber:run:started", "u2", "f-u2"),
          recovery("attempt", "u1", "u2"),
          recovery("exhausted", "u1", "u2", { recoveryRootRequestId: "u1", reason: "max_attempts_exceeded" }),
          fiber("fiber:run:completed", "u2", "f-u2"),
          turn("chat:turn:finish", "u2", true, { status: "aborted" }),
          recovery("failed", "u1", "u2"),
        ]),
      ],
      { turns },
    );
    const of = (type: string, req: string) => events.find((e) => e.type === type && e.corr.requestId === req)?.payload;
    expect(of("chat.turn.finished", "u1")).toMatchObject({ recovering: true });
    expect(of("chat.turn.finished", "u2")).toMatchObject({ rootRequestId: "u1", sealed: true });
    expect(of("chat.recovery.failed", "u2")).toMatchObject({ rootRequestId: "u1", sealed: true });
    expect(of("fiber.completed", "u2")).toBeUndefined();
  });

  it("a retry (the SDK runs the user's message again, not as a continuation) is a recovery turn too", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("SubChat", "h", [recovery("scheduled", "u1", "u1", { recoveryKind: "retry" })]),
        item("SubChat", "h", [{ type: "chat:turn:start", payload: { requestId: "u2", trigger: "recovery-retry", admission: "queue", continuation: false } }]),
      ],
      { turns },
    );
    expect(events.find((e) => e.type === "chat.turn.started")?.payload).toMatchObject({ rootRequestId: "u1", turnAttempt: 2 });
  });

  it("a turn that is not a continuation is the user's own, whatever recovery is pending", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [item("SubChat", "h", [recovery("scheduled", "u1", "u1")]), item("SubChat", "h", [turn("chat:turn:start", "u9", false)])],
      { turns },
    );
    expect(events.find((e) => e.type === "chat.turn.started")?.payload).not.toHaveProperty("rootRequestId");
  });
});

/**
 * A top-level AIChatAgent (@cloudflare/ai-chat 0.12.2, agents 0.32) names no request id in what it publishes: its
 * turns are the carrier Tasks `chat_<nonce>`. The sequences below are the messages such an agent published, recorded
 * from test/chat/tail-matrix.test.ts's TailAiChat (task steps, streams and session messages left out).
 */
describe("tail chat turns: a top-level AIChatAgent's turn is its carrier Task", () => {
  const task = (type: string, runId: string, definition: string, extra: Record<string, unknown> = {}): Msg => ({
    type: `task:${type}`,
    payload: { runId, definition, ...extra },
  });
  const carrier = (type: string, runId: string, extra: Record<string, unknown> = {}) => task(type, runId, "__cf_internal_chat_turn", extra);
  const transport = (type: string, runId: string) => task(type, runId, "__cf_internal_chat_recovery");
  const response: Msg = { type: "message:response", payload: {} };
  const aiRecovery = (type: string, root: string, requestId: string, extra: Record<string, unknown> = {}) =>
    recovery(type, root, requestId, { recoveryKind: "retry", ...extra });
  const of = (events: { type: string; corr: { requestId?: string }; payload: unknown }[], type: string, req: string) =>
    events.filter((e) => e.type === type && e.corr.requestId === req).map((e) => e.payload);

  it("a completed turn is one run named by its carrier: started on acceptance, completed by the carrier's completion", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("AiChat", "a", [
          carrier("accepted", "chat_A", { accepted: true }),
          carrier("attempt:started", "chat_A", { attempt: 1 }),
          response,
          carrier("completed", "chat_A"),
        ]),
      ],
      { turns },
    );
    expect(events.map((e) => [e.type, e.corr.requestId])).toEqual([
      ["task.accepted", "chat_A"],
      ["chat.turn.finished", "chat_A"],
    ]);
    expect(of(events, "task.accepted", "chat_A")[0]).toMatchObject({ kind: "chat_turn" });
    expect(of(events, "task.accepted", "chat_A")[0]).not.toHaveProperty("rootRequestId");
    expect(of(events, "chat.turn.finished", "chat_A")).toEqual([{ status: "completed" }]);
  });

  it("an evicted turn: the request id its recovery names is the carrier's turn, and the recovery's carrier is its attempt 2", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("AiChat", "a", [carrier("accepted", "chat_A", { accepted: true }), carrier("attempt:started", "chat_A", { attempt: 1 })]),
        // The wake after the eviction: the Tasks engine replays the carrier, whose replay routes the turn into recovery.
        item("AiChat", "a", [
          carrier("attempt:interrupted", "chat_A", { attempt: 1, step: "model-turn" }),
          carrier("attempt:started", "chat_A", { attempt: 2 }),
          aiRecovery("detected", "R", "R"),
          aiRecovery("attempt", "R", "R"),
          aiRecovery("scheduled", "R", "R"),
          transport("accepted", "task_T"),
          carrier("completed", "chat_A"),
        ]),
        item("AiChat", "a", [
          transport("attempt:started", "task_T"),
          carrier("accepted", "chat_B", { accepted: true }),
          transport("completed", "task_T"),
          carrier("attempt:started", "chat_B", { attempt: 1 }),
          response,
          carrier("completed", "chat_B"),
          aiRecovery("completed", "R", "R"),
        ]),
      ],
      { turns },
    );
    expect(of(events, "task.accepted", "chat_B")[0]).toMatchObject({ rootRequestId: "chat_A", turnAttempt: 2 });
    expect(of(events, "chat.turn.finished", "chat_A")).toEqual([{ status: "unknown", recovering: true }]);
    expect(of(events, "chat.turn.finished", "chat_B")).toEqual([{ status: "completed", rootRequestId: "chat_A" }]);
    expect(of(events, "task.attempt.interrupted", "chat_A")).toHaveLength(1);
    expect(events.filter((e) => e.type.startsWith("chat.recovery.")).map((e) => (e.payload as { rootRequestId?: string }).rootRequestId)).toEqual([
      "chat_A",
      "chat_A",
      "chat_A",
      "chat_A",
    ]);
  });

  it("an exhausted turn: each recovery carrier is its next attempt, and what the SDK reports after it gave up is sealed", () => {
    const turns = new TailChatTurns();
    const stalled = (run: string, req: string, first: boolean) => [
      carrier("attempt:started", run, { attempt: 1 }),
      ...(first ? [aiRecovery("detected", "R", req)] : []),
      aiRecovery("attempt", "R", req),
      aiRecovery("scheduled", "R", req),
      transport("accepted", `task_${run}`),
      carrier("completed", run),
    ];
    const { events } = captureFromTail(
      [
        item("AiChat", "a", [carrier("accepted", "chat_A"), ...stalled("chat_A", "R", true)]),
        item("AiChat", "a", [
          transport("attempt:started", "task_chat_A"),
          carrier("accepted", "chat_B"),
          transport("completed", "task_chat_A"),
          ...stalled("chat_B", "R2", false),
        ]),
        item("AiChat", "a", [
          transport("attempt:started", "task_chat_B"),
          carrier("accepted", "chat_C"),
          transport("completed", "task_chat_B"),
          carrier("attempt:started", "chat_C", { attempt: 1 }),
          aiRecovery("attempt", "R", "R3"),
          aiRecovery("exhausted", "R", "R3", { recoveryRootRequestId: "R", reason: "max_attempts_exceeded" }),
          carrier("completed", "chat_C"),
          aiRecovery("failed", "R", "R3"),
        ]),
      ],
      { turns },
    );
    expect(of(events, "task.accepted", "chat_B")[0]).toMatchObject({ rootRequestId: "chat_A", turnAttempt: 2 });
    expect(of(events, "task.accepted", "chat_C")[0]).toMatchObject({ rootRequestId: "chat_A", turnAttempt: 3 });
    expect(of(events, "chat.turn.finished", "chat_B")).toEqual([{ status: "unknown", rootRequestId: "chat_A", recovering: true }]);
    expect(of(events, "chat.turn.finished", "chat_C")).toEqual([{ status: "unknown", rootRequestId: "chat_A", sealed: true }]);
    expect(of(events, "chat.recovery.exhausted", "R3")[0]).toMatchObject({ rootRequestId: "chat_A" });
    expect(of(events, "chat.recovery.failed", "R3")[0]).toMatchObject({ rootRequestId: "chat_A", sealed: true });
  });

  it("a run that published an error ends in error with its text", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("AiChat", "a", [
          carrier("accepted", "chat_A"),
          carrier("attempt:started", "chat_A", { attempt: 1 }),
          { type: "message:error", payload: { error: "the model refused" } },
          carrier("completed", "chat_A"),
        ]),
      ],
      { turns },
    );
    expect(of(events, "chat.turn.finished", "chat_A")).toEqual([{ status: "error", error: "the model refused" }]);
  });

  it("a user's turn accepted while a recovery waits, outside the recovery Task's attempt, is a turn of its own", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("AiChat", "a", [
          carrier("accepted", "chat_A"),
          carrier("attempt:started", "chat_A"),
          aiRecovery("detected", "R", "R"),
          aiRecovery("scheduled", "R", "R"),
        ]),
        item("AiChat", "a", [carrier("completed", "chat_A"), carrier("accepted", "chat_U")]),
      ],
      { turns },
    );
    expect(of(events, "task.accepted", "chat_U")[0]).not.toHaveProperty("rootRequestId");
  });

  it("a carrier whose acceptance this isolate never saw is not taken for a turn (a Think turn replayed after the tail isolate was replaced)", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("Think", "t", [
          carrier("attempt:interrupted", "chat_X", { attempt: 1, step: "model-turn" }),
          carrier("attempt:started", "chat_X", { attempt: 2 }),
          recovery("detected", "u1", "u1"),
          recovery("scheduled", "u1", "u1"),
          carrier("completed", "chat_X"),
        ]),
      ],
      { turns },
    );
    expect(events.map((e) => e.type)).toEqual(["task.attempt.interrupted", "chat.recovery.detected", "chat.recovery.scheduled"]);
    expect(events[0]!.corr.requestId).toBeUndefined();
    expect(events.filter((e) => e.type.startsWith("chat.recovery.")).map((e) => (e.payload as { rootRequestId?: string }).rootRequestId)).toEqual(["u1", "u1"]);
  });

  it("Think's carriers stay unshipped: its chat:turn:start comes first and names the turn", () => {
    const turns = new TailChatTurns();
    const { events } = captureFromTail(
      [
        item("Think", "t", [
          turn("chat:turn:start", "u1", false),
          carrier("accepted", "chat_X"),
          carrier("attempt:started", "chat_X"),
          carrier("completed", "chat_X"),
          turn("chat:turn:finish", "u1", false, { status: "completed" }),
        ]),
      ],
      { turns },
    );
    expect(events.map((e) => e.type)).toEqual(["chat.turn.started", "chat.turn.finished"]);
  });
});
