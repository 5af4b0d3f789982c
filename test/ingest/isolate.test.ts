import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/partitions";
import { handleTelemetryBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { count } from "../helpers";

const HOUR = 3_600_000;

/**
 * The real local D1, except that the partition's first batch() fails the way an overloaded D1 does: the whole
 * batch refused. (The home database's own bookkeeping, the partition count check, goes through unharmed.)
 */
function refusingFirstBatch(db: D1Database): Store {
  let refused = false;
  const flaky = new Proxy(db, {
    get(target, key) {
      if (key === "batch" && !refused) {
        return async () => {
          refused = true;
          throw new Error("D1_ERROR: Network connection lost.");
        };
      }
      const v = Reflect.get(target, key);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { home: db, parts: [flaky] };
}

describe("a batch D1 refuses as a whole", () => {
  it("stores each message alone, acks each one, and still runs paced retention for what they added", async () => {
    const agentName = `isolate-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    // Five timeline segments of this agent older than the hot window: due for paced retention.
    await env.DB.batch(
      Array.from({ length: 5 }, (_, i) =>
        env.DB.prepare(
          "INSERT INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body) VALUES ('ProbeAgent', ?, ?, ?, ?, ?, 1, ?, '[]')",
        ).bind(agentName, i + 1, i + 1, now - 60 * HOUR + i, now - 60 * HOUR + i, now - 60 * HOUR + i),
      ),
    );
    const messages = [1, 2, 3].map((i) => ({
      id: `${agentName}-${i}`,
      timestamp: new Date(),
      attempts: 1,
      body: { ...makeEvent("session.status_idle", { turnSeq: i }, { agentName, time: now - 1000 + i, corr: { sessionName: agentName } }), seq: 100 + i },
    }));
    const batch = createMessageBatch("agent-telemetry", messages);
    await handleTelemetryBatch(batch, { ...env, RETENTION_PACE: "5" }, refusingFirstBatch(env.DB));
    const result = await getQueueResult(batch, createExecutionContext());

    expect(result.ackAll).toBe(false);
    expect([...result.explicitAcks].sort()).toEqual(messages.map((m) => m.id).sort());
    expect(result.retryMessages).toEqual([]);
    // Every event is in the timeline, and the due segments went with the messages that were stored alone.
    const stored = await env.DB.prepare("SELECT SUM(n) AS n FROM event_segments WHERE agent_name = ? AND time_to >= ?")
      .bind(agentName, now - HOUR)
      .first<{ n: number }>();
    expect(stored!.n).toBe(3);
    expect(await count("SELECT COUNT(*) AS n FROM event_segments WHERE agent_name = ? AND time_to < ?", agentName, now - 48 * HOUR)).toBe(0);
  });
});
