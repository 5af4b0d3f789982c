import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { AGENT_CHANNEL, PARENT_MESSAGE_TYPE } from "@agent-oncall/admin-rpc/facts";
import { parseEvent } from "@agent-oncall/telemetry";
import { captureFromTail, type TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it } from "vitest";
import { recordSkip } from "../../src/admin-rpc/pause";

/**
 * What an agent publishes on its own diagnostics channel (the admin package's helper, src/admin-rpc/publish.ts), as a
 * Tail Worker receives it beside the SDK's messages: contract events the SDK does not publish, and a sub-agent's
 * ancestry before its SDK messages.
 */
const T = 1_796_000_000_000;
type Entry = { channel: string; message: unknown };
const ours = (message: unknown): Entry => ({ channel: AGENT_CHANNEL, message });
const sdk = (type: string, payload: Record<string, unknown>, name = "helper", agent = "Helper"): Entry => ({
  channel: `agents:${type.split(":")[0]}`,
  message: { type, agent, name, payload, timestamp: T },
});
const published = (type: string, payload: Record<string, unknown>, over: Record<string, unknown> = {}) =>
  ours({ v: 1, type, agent: "SupportAgent", name: "acme", payload, timestamp: T, ...over });
const parent = (hub: string) =>
  ours({ v: 1, type: PARENT_MESSAGE_TYPE, agent: "Helper", name: "helper", parentPath: [{ className: "Hub", name: hub }], payload: {}, timestamp: T });
const item = (entries: Entry[]): TailItem => ({
  scriptName: "support-worker",
  durableObjectId: "a".repeat(64),
  eventTimestamp: T,
  truncated: false,
  diagnosticsChannelEvents: entries.map((e) => ({ timestamp: T, ...e })),
});

describe("the agent's own channel at the tail", () => {
  it("turns a published event into a valid contract event of the agent it names, with a stable id", () => {
    const usage = published("model.usage", { inputTokens: 1200, outputTokens: 80, model: "scripted" }, { corr: { requestId: "req-1" } });
    const c = captureFromTail([item([usage])]);
    expect(c.losses).toEqual([]);
    expect(c.events.map((e) => [e.type, e.source, e.corr, e.payload, e.time])).toEqual([
      ["model.usage", { agentClass: "SupportAgent", agentName: "acme" }, { requestId: "req-1" }, { inputTokens: 1200, outputTokens: 80, model: "scripted" }, T],
    ]);
    expect(parseEvent(c.events[0]).ok).toBe(true);
    expect(captureFromTail([item([usage])]).events[0]!.id).toBe(c.events[0]!.id);
  });

  it("masks credentials in what an agent published before it leaves the tail handler", () => {
    const c = captureFromTail([
      item([
        published("op.ambiguous", { opKind: "charge", idempotent: false, detail: "retried with sk_live_abcdefghijklmnopqrstuvwx" }, { corr: { opId: "op-1" } }),
      ]),
    ]);
    expect(c.losses).toEqual([]);
    const detail = (c.events[0]!.payload as { detail: string }).detail;
    expect(detail).toContain("retried with");
    expect(detail).not.toContain("sk_live_abcdefghijklmnopqrstuvwx");
  });

  it("keys a sub-agent's SDK messages by the ancestry it announced before them, so two parents' helpers stay two agents", () => {
    const started = (fiberId: string) => sdk("fiber:run:started", { fiberId, fiberName: "job", managed: false });
    const c = captureFromTail([
      item([parent("north"), started("f1"), parent("south"), started("f2"), sdk("fiber:run:started", { fiberId: "f3", fiberName: "job" }, "other")]),
    ]);
    expect(c.losses).toEqual([]);
    expect(c.events.map((e) => [e.corr.fiberId, e.source.agentName, e.source.parentPath])).toEqual([
      ["f1", "Hub:north › helper", [{ className: "Hub", name: "north" }]],
      ["f2", "Hub:south › helper", [{ className: "Hub", name: "south" }]],
      // Another agent of the item announced nothing: keyed by its own name, as before.
      ["f3", "other", undefined],
    ]);
    // The ancestry message is not an event of its own.
    expect(c.events).toHaveLength(3);
  });

  it("keeps every message it cannot take as a loss with its reason, and the rest of the item", () => {
    const c = captureFromTail([
      item([
        ours("not an object"),
        published("op.ambiguous", { opKind: "charge" }),
        published("admin.force_idle", { actor: "me", reason: "x", result: "ok" }),
        published("model.usage", { inputTokens: 1, outputTokens: 2 }, { v: 99 }),
        ours({ v: 1, type: PARENT_MESSAGE_TYPE, agent: "Helper", name: "helper", payload: {}, timestamp: T }),
        published("session.status_idle", { detail: "forced idle: stuck" }),
      ]),
    ]);
    expect(c.events.map((e) => e.type)).toEqual(["session.status_idle"]);
    expect(c.losses.map((l) => l.reason)).toEqual([
      expect.stringMatching(new RegExp(`^unreadable message on ${AGENT_CHANNEL}: .*expected object`)),
      expect.stringMatching(/not a valid op\.ambiguous event: payload\.(idempotent|detail)/),
      `unreadable message on ${AGENT_CHANNEL}: "admin.force_idle" is not an event type an agent publishes`,
      expect.stringMatching(/: v: /),
      `unreadable message on ${AGENT_CHANNEL}: an ancestry message without its parentPath`,
    ]);
    // Each loss keeps the message as it arrived and where it came from, and is stable on redelivery.
    expect(JSON.parse(c.losses[1]!.body)).toMatchObject({
      worker: "support-worker",
      agentClass: "SupportAgent",
      agentName: "acme",
      channel: AGENT_CHANNEL,
      position: 1,
    });
    expect(captureFromTail([item([ours("not an object")])]).losses[0]!.key).toBe(c.losses[0]!.key);
    expect(new Set(c.losses.map((l) => l.key)).size).toBe(5);
  });

  it("takes the admin mixin's report of a recovery its pause held back, as the console's recovery.skipped_paused", () => {
    // What the mixin publishes (pause.ts recordSkip through publish.ts), caught on the channel as the runtime would forward it.
    const seen: unknown[] = [];
    const take = (m: unknown) => seen.push(m);
    subscribe(AGENT_CHANNEL, take);
    try {
      class PausedAgent {
        readonly name = "p-1";
      }
      const pause = { reason: "retries run up the bill", pausedAt: T, until: T + 3_600_000, skipped: 1, held: ["fib-1"], active: true };
      recordSkip(new PausedAgent() as never, { id: "fib-1", name: "import", status: "interrupted" } as never, pause);
    } finally {
      unsubscribe(AGENT_CHANNEL, take);
    }
    expect(seen).toHaveLength(1);
    const c = captureFromTail([item(seen.map((m) => ours(m)))]);
    expect(c.losses).toEqual([]);
    expect(c.events.map((e) => [e.type, e.source, e.corr, e.payload])).toEqual([
      [
        "recovery.skipped_paused",
        { agentClass: "PausedAgent", agentName: "p-1" },
        { fiberId: "fib-1", incidentId: "fiber:PausedAgent/p-1/fib-1" },
        { kind: "managed_fiber", fiberName: "import", decision: "held", reason: "retries run up the bill", until: T + 3_600_000 },
      ],
    ]);
  });
});
