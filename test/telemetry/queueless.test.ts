import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { afterEach, expect, it, vi } from "vitest";

// An agent whose Worker lacks the telemetry Queue binding: nothing can reach the console, so the log says so once,
// naming the binding, and the events wait in the agent's storage (bounded: test/telemetry/outbox.test.ts).

afterEach(() => vi.restoreAllMocks());

it("an agent without its Queue binding says so once, naming the binding, and keeps its events for when one is bound", async () => {
  const warn = vi.spyOn(console, "warn");
  const agent = await getAgentByName(env.QueuelessAgent, `queueless-${crypto.randomUUID().slice(0, 8)}`);
  await agent.work();
  await agent.work();
  const stats = await agent.telemetryStats();
  const lines = warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("NO_SUCH_TELEMETRY_QUEUE"));
  expect(lines).toEqual([expect.stringMatching(/^\[agents-telemetry\] no Queue binding "NO_SUCH_TELEMETRY_QUEUE" in this Worker: events wait/)]);
  // Two fibers' starts, checkpoints and ends: stored, none sent, none dropped.
  expect(stats).toMatchObject({ sent: 0, dropped: 0, pending: 6 });
});
