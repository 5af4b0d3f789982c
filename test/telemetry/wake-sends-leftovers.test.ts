import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Telemetry } from "@agent-oncall/telemetry";
import { getAgentByName } from "agents";
import { expect, it } from "vitest";
import { eventsOf, probe, rejectionOf } from "../helpers";
import { patient } from "../patience";

// An agent evicted right after its work, as a poison turn is at every start, has stored events it never sent. The
// next wake sends them before the agent handles anything, so a call, or a recovery, sees them gone and the console
// hears of the agent even if this life is cut short as well.

it("a wake sends what an evicted predecessor stored and did not send before the first call runs", async () => {
  const { name, stub } = await probe();
  expect((await rejectionOf(stub.recordThenEvict(3))).message).toContain("test eviction after work");

  const woken = await getAgentByName(env.ProbeAgent, name);
  const first = await woken.telemetryFirstSeen();
  expect(first.pending).toBe(0);
  expect(first.sent).toBe(3);
  expect(first.sendErrors).toBe(0);
  // They reach the console once each, in their order, numbered 1-3 by the evicted life.
  await expect.poll(async () => (await eventsOf(name)).length, { timeout: patient(10_000) }).toBe(3);
  expect((await eventsOf(name)).map((e) => [e.type, (e as { seq?: number }).seq])).toEqual([
    ["session.status_running", 1],
    ["session.status_running", 2],
    ["session.status_running", 3],
  ]);
});

it("a Queue that does not answer holds the start only for the wait, and the events stay stored for a later send", async () => {
  const stub = await getAgentByName(env.PlainAdminAgent, `leftovers-${crypto.randomUUID().slice(0, 8)}`);
  await runInDurableObject(stub, async (_instance, state) => {
    const hung = { sendBatch: () => new Promise<never>(() => {}) };
    const telemetry = new Telemetry({ source: { agentClass: "PlainAdminAgent", agentName: "leftovers" }, queue: hung, sql: state.storage.sql });
    telemetry.record("session.status_running", { turnSeq: 1 }, { sessionName: "leftovers" });
    // Resolves although the send never does (a hang here would time the test out: an agent that never starts).
    await telemetry.flushWithin(50);
    expect(telemetry.stats()).toMatchObject({ pending: 1, sent: 0 });
  });
});
