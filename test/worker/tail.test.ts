import { env } from "cloudflare:workers";
import type { TailItem } from "@agent-oncall/telemetry/tail";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env";
import { handleTail } from "../../worker/tail";
import { count, pollRows } from "../helpers";

/** A trace item of one agent invocation, carrying SDK messages as the runtime forwards them. */
function item(name: string, messages: { type: string; payload: Record<string, unknown> }[], over: Partial<TailItem> = {}): TailItem {
  const t = Date.now();
  return {
    scriptName: null,
    durableObjectId: crypto.randomUUID().replace(/-/g, ""),
    eventTimestamp: t,
    truncated: false,
    diagnosticsChannelEvents: messages.map((m) => ({
      timestamp: t,
      channel: `agents:${m.type.split(":")[0]}`,
      message: { ...m, agent: "TailedAgent", name, timestamp: t },
    })),
    ...over,
  };
}

const run = (fiberId: string, end: "completed" | "failed") => [
  { type: "fiber:run:started", payload: { fiberId, fiberName: "import", managed: false } },
  end === "completed"
    ? { type: "fiber:run:completed", payload: { fiberId, fiberName: "import", managed: false, elapsedMs: 5 } }
    : { type: "fiber:run:failed", payload: { fiberId, fiberName: "import", managed: false, error: "quota exceeded" } },
];

describe("the console's tail handler", () => {
  it("puts captured events through the telemetry Queue into the store, once however often an item is delivered", async () => {
    const name = `tailed-${crypto.randomUUID().slice(0, 8)}`;
    const items = [item(name, run("f-ok", "completed")), item(name, run("f-bad", "failed"))];
    const r = await handleTail(items, env as Env);
    expect(r).toMatchObject({ items: 2, read: 4, sent: 4, losses: 0, sendFailed: 0 });
    const rows = await pollRows<{ fiber_id: string; outcome: string; error: string | null }>(
      "SELECT fiber_id, outcome, error FROM runs WHERE agent_name = ? ORDER BY fiber_id",
      [name],
      (rs) => rs.length === 2 && rs.every((x) => x.outcome),
    );
    expect(rows).toEqual([
      { fiber_id: "f-bad", outcome: "failed", error: "quota exceeded" },
      { fiber_id: "f-ok", outcome: "completed", error: null },
    ]);
    // The runtime may deliver an item again: the same ids, stored once.
    await handleTail(items, env as Env);
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [name], (rs) => rs.length === 4);
    await scheduler.wait(1500);
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE agent_name = ?", name)).toBe(4);
  });

  it("keeps what the runtime cut short and what it could not read as dead letters with their reason", async () => {
    const name = `cut-${crypto.randomUUID().slice(0, 8)}`;
    const cut = item(name, run("f-1", "completed").slice(0, 1), { truncated: true });
    const garbled: TailItem = { ...item(name, []), diagnosticsChannelEvents: [{ timestamp: Date.now(), channel: "agents:fiber", message: "not an event" }] };
    const r = await handleTail([cut, garbled], env as Env);
    expect(r).toMatchObject({ sent: 1, losses: 2 });
    const letters = (
      await env.DB.prepare("SELECT reason, body FROM dead_letters WHERE body LIKE ? ORDER BY reason").bind(`%${name}%`).all<{ reason: string; body: string }>()
    ).results;
    expect(letters.map((l) => l.reason)).toEqual([
      "events lost: the Workers runtime cut this invocation's diagnostics short (its per-invocation limit); the agent's later events of that invocation never reached the console",
    ]);
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ agentClass: "TailedAgent", agentName: name, worker: "(not named: local dev)" });
    // The garbled one names no agent (its message is unreadable): it is found by where it came from.
    const unread = await env.DB.prepare("SELECT reason FROM dead_letters WHERE body LIKE ?").bind(`%${garbled.durableObjectId}%`).first<{ reason: string }>();
    expect(unread?.reason).toMatch(/^unreadable diagnostics message on agents:fiber/);
  });

  it("keeps the events as dead letters when the Queue refuses them (the platform does not retry a tail)", async () => {
    const name = `refused-${crypto.randomUUID().slice(0, 8)}`;
    const refusing = {
      ...env,
      TELEMETRY_QUEUE: {
        send: () => Promise.reject(new Error("queue over its limit")),
        sendBatch: () => Promise.reject(new Error("queue over its limit")),
      },
    } as unknown as Env;
    const r = await handleTail([item(name, run("f-1", "completed"))], refusing);
    expect(r).toMatchObject({ sent: 0, sendFailed: 2 });
    const letters = (
      await env.DB.prepare("SELECT reason, event_type, body FROM dead_letters WHERE body LIKE ? ORDER BY event_type").bind(`%${name}%`).all<{
        reason: string;
        event_type: string;
        body: string;
      }>()
    ).results;
    expect(letters.map((l) => [l.event_type, l.reason])).toEqual([
      ["fiber.completed", "captured from the tail, but the telemetry Queue refused it"],
      ["fiber.started", "captured from the tail, but the telemetry Queue refused it"],
    ]);
    expect(JSON.parse(letters[0]!.body)).toMatchObject({ type: "fiber.completed", source: { agentClass: "TailedAgent", agentName: name } });
  });
});
