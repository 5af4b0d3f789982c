import { OUTBOX_SHIPPED_MARK } from "@agent-oncall/telemetry";
import { captureFromTail, LIMIT_EXCEEDED_CHANNEL, type TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it } from "vitest";

/**
 * Trace items as the Workers runtime hands them to a Tail Worker, carrying the agents SDK's diagnostics messages
 * in the shape the SDK publishes them (agents 0.32: `{ type, agent, name, payload, timestamp }` on `agents:*`).
 */
const T = 1_796_000_000_000;
const msg = (type: string, payload: Record<string, unknown>, name = "acme", agent = "SupportAgent") => ({ type, agent, name, payload, timestamp: T });
const channelOf = (type: string) => `agents:${type.split(":")[0]}`;
function item(messages: unknown[], over: Partial<TailItem> = {}): TailItem {
  return {
    scriptName: "support-worker",
    durableObjectId: "a".repeat(64),
    eventTimestamp: T,
    truncated: false,
    diagnosticsChannelEvents: messages.map((m) => ({ timestamp: T, channel: channelOf((m as { type?: string })?.type ?? "x:y"), message: m })),
    ...over,
  };
}

const started = msg("fiber:run:started", { fiberId: "f1", fiberName: "import", managed: false });
const completed = msg("fiber:run:completed", { fiberId: "f1", fiberName: "import", managed: false, elapsedMs: 12 });

describe("capture from the tail", () => {
  it("turns the SDK's messages into contract events of the agent they name, at the SDK's time", () => {
    const c = captureFromTail([item([started, completed])]);
    expect(c.losses).toEqual([]);
    expect(c.events.map((e) => [e.type, e.source, e.corr.fiberId, e.time])).toEqual([
      ["fiber.started", { agentClass: "SupportAgent", agentName: "acme" }, "f1", T],
      ["fiber.completed", { agentClass: "SupportAgent", agentName: "acme" }, "f1", T],
    ]);
    expect(c.read).toBe(2);
  });

  it("gives a redelivered item the same ids, and two identical messages of one invocation different ones", () => {
    const twice = item([msg("schedule:execute", { callback: "tick", id: "s1" }), msg("schedule:execute", { callback: "tick", id: "s1" })]);
    const first = captureFromTail([twice]).events.map((e) => e.id);
    const again = captureFromTail([twice]).events.map((e) => e.id);
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(2);
    // The same message in another invocation (another start time) or another Durable Object is another event.
    const later = captureFromTail([item([msg("schedule:execute", { callback: "tick", id: "s1" })], { eventTimestamp: T + 1 })]).events[0]!.id;
    const elsewhere = captureFromTail([item([msg("schedule:execute", { callback: "tick", id: "s1" })], { durableObjectId: "b".repeat(64) })]).events[0]!.id;
    expect(new Set([first[0], later, elsewhere]).size).toBe(3);
    // Ids sort by time, then by place in the invocation.
    expect([...first].sort()).toEqual(first);
  });

  it("never reads what is not the SDK's: logs, exceptions and other channels stay unread", () => {
    const secret = {
      get type(): string {
        throw new Error("read a message of another channel");
      },
    };
    const it_ = item([started]);
    const c = captureFromTail([
      { ...it_, diagnosticsChannelEvents: [{ timestamp: T, channel: "my-app:audit", message: secret }, ...it_.diagnosticsChannelEvents!] },
    ]);
    expect(c.events.map((e) => e.type)).toEqual(["fiber.started"]);
    expect(c.read).toBe(1);
    expect(c.losses).toEqual([]);
  });

  it("sets the SDK's per-call noise aside, counted, and sends nothing for it", () => {
    const c = captureFromTail([item([msg("rpc", { method: "getState" }), msg("state:update", {}), started])]);
    expect(c.events.map((e) => e.type)).toEqual(["fiber.started"]);
    expect(c).toMatchObject({ read: 3, noise: 2 });
  });

  it("records the runtime's limit notice as a loss of that agent's events, once however often the item comes", () => {
    const cut: TailItem = {
      ...item([started]),
      truncated: true,
      diagnosticsChannelEvents: [...item([started]).diagnosticsChannelEvents!, { timestamp: T, channel: LIMIT_EXCEEDED_CHANNEL, message: undefined }],
    };
    const c = captureFromTail([cut]);
    expect(c.events).toHaveLength(1);
    expect(c.losses).toHaveLength(1);
    expect(c.losses[0]!.reason).toMatch(/events lost: the Workers runtime cut this invocation's diagnostics short/);
    expect(JSON.parse(c.losses[0]!.body)).toMatchObject({ worker: "support-worker", agentClass: "SupportAgent", agentName: "acme", limitNotice: true });
    expect(captureFromTail([cut]).losses[0]!.key).toBe(c.losses[0]!.key);
  });

  it("keeps an unreadable message as a loss with its reason, and still takes the rest of the item", () => {
    const c = captureFromTail([
      item([]),
      {
        ...item([completed]),
        diagnosticsChannelEvents: [
          { timestamp: T, channel: "agents:fiber", message: "fiber done" },
          { timestamp: T, channel: "agents:fiber", message: { type: "fiber:run:started", payload: [1, 2] } },
          { timestamp: T, channel: "agents:fiber", message: undefined },
          ...item([completed]).diagnosticsChannelEvents!,
        ],
      },
    ]);
    expect(c.events.map((e) => e.type)).toEqual(["fiber.completed"]);
    expect(c.losses.map((l) => l.reason)).toEqual([
      "unreadable diagnostics message on agents:fiber: not an agents-SDK event (no type, or a payload that is not an object)",
      "unreadable diagnostics message on agents:fiber: not an agents-SDK event (no type, or a payload that is not an object)",
      "unreadable diagnostics message on agents:fiber: not an agents-SDK event (no message)",
    ]);
    expect(new Set(c.losses.map((l) => l.key)).size).toBe(3);
    expect(JSON.parse(c.losses[0]!.body)).toMatchObject({ channel: "agents:fiber", position: 0, message: '"fiber done"' });
  });

  it("skips what an agent's telemetry mixin already ships through its outbox, so a Worker with both reports each event once", () => {
    const c = captureFromTail([item([{ ...started, [OUTBOX_SHIPPED_MARK]: true }, completed])]);
    expect(c.events.map((e) => e.type)).toEqual(["fiber.completed"]);
    expect(c).toMatchObject({ read: 2, viaOutbox: 1 });
  });

  it("masks credentials in what it captures, as the outbox path does", () => {
    const c = captureFromTail([
      item([msg("fiber:run:failed", { fiberId: "f1", fiberName: "import", error: "401 for token=sk-live_abcdefghijklmnopqrstuvwx" })]),
    ]);
    expect(JSON.stringify(c.events[0]!.payload)).not.toContain("sk-live_abcdefghijklmnopqrstuvwx");
  });

  it("says a plain runFiber's recovery hook resumed it only when a run of its name started while the hook ran, else unknown", () => {
    // The SDK's order on wake (agents 0.32 _checkRunFibers): detected, interrupted, attempt, the hook, handled.
    const recovery = (fiberId: string, during: unknown[], status = "user", managed = false) => [
      msg("fiber:recovery:detected", { fiberId, fiberName: "export", managed }),
      msg("fiber:run:interrupted", { fiberId, fiberName: "export", managed }),
      msg("fiber:recovery:attempt", { fiberId, fiberName: "export", managed }),
      ...during,
      msg("fiber:recovery:handled", { fiberId, fiberName: "export", managed, status }),
    ];
    const again = (fiberId: string, fiberName = "export") => msg("fiber:run:started", { fiberId, fiberName, managed: false });
    const handled = (messages: unknown[]) => {
      const e = captureFromTail([item(messages)]).events.filter((x) => x.type === "fiber.recovery.handled");
      return e.map((x) => [x.corr.fiberId, (x.payload as { hook?: string }).hook ?? null, (x.payload as { resumedAs?: string }).resumedAs ?? null]);
    };
    expect(handled(recovery("old-1", [again("new-1")]))).toEqual([["old-1", "resumed", "new-1"]]);
    // Nothing started, or a run of another name (the SDK does not say it is this work): unknown, never "recovered".
    expect(handled(recovery("old-2", []))).toEqual([["old-2", "unknown", null]]);
    expect(handled(recovery("old-3", [again("other-1", "cleanup")]))).toEqual([["old-3", "unknown", null]]);
    // A run started after the hook returned is not the hook's.
    expect(handled([...recovery("old-4", []), again("late-1")])).toEqual([["old-4", "unknown", null]]);
    // A managed fiber's outcome is the SDK's ledger's, and the SDK's internal fibers are its own: no word added.
    expect(handled(recovery("old-5", [], "managed", true))).toEqual([["old-5", null, null]]);
    expect(handled(recovery("old-6", [], "internal"))).toEqual([["old-6", null, null]]);
  });

  it("says a managed fiber whose recovery hook threw is failed with the hook's error, as the SDK records it; a plain one gets no word", () => {
    const failed = (managed: boolean) =>
      captureFromTail([item([msg("fiber:recovery:failed", { fiberId: "mf", fiberName: "sync", managed, error: "hook crashed", reason: "handler_error" })])])
        .events.filter((x) => x.type === "fiber.recovery.failed")
        .map((x) => {
          const p = x.payload as { fiberStatus?: string; fiberError?: string };
          return [p.fiberStatus ?? null, p.fiberError ?? null];
        });
    expect(failed(true)).toEqual([["error", "hook crashed"]]);
    expect(failed(false)).toEqual([[null, null]]);
  });
});
