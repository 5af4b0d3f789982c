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
