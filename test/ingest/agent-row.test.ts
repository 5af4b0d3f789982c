import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { HEARD_FROM_STEP_MS } from "../../src/store/heard-from";
import { listedAt } from "../../src/store/listed-at";
import { findAgent, listAgents } from "../../src/store/read-models/agents";
import { blockedAgents } from "../../src/store/read-models/blocked-agents";
import { eventGapOf } from "../../src/store/read-models/event-gaps";
import { recordReconciliation } from "../../src/store/reconciliations";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { getText } from "../worker/routes/harness";

/**
 * The agent registry costs a row written when something a person sees of the agent changes, not per message: its
 * last activity is stored once per HEARD_FROM_STEP_MS (src/store/heard-from.ts), and its list index entries move
 * with it. Events go through the real consumer, one Queue message per call, and the figures are D1's own
 * rows_written for the agents table.
 */

const MIN = 60_000;
const CLS = "ProbeAgent";
const uid = () => crypto.randomUUID().slice(0, 8);
/** The start of a minute, three hours ago: inside ingest's window, and each step below lands in a later minute. */
const T0 = listedAt(Date.now() - 3 * 3_600_000) + 1000;

/** An event of `agentName` at `time`, numbered `seq` when given (the outbox path; the tail carries no numbers). */
const event = (agentName: string, time: number, seq?: number): TelemetryEvent => ({
  ...makeEvent(
    "fiber.stashed",
    { fiberName: "etl", snapshot: { preview: `{"at":${time}}`, bytes: 10, truncated: false } },
    { agentName, corr: { fiberId: "f-1" }, time },
  ),
  ...(seq === undefined ? {} : { seq }),
});

/** Ingests one Queue message; what it wrote to the agents table (rows and index entries). */
async function agentsWritten(...events: TelemetryEvent[]): Promise<number> {
  const r = await ingestBatch(env.DB, [{ id: crypto.randomUUID(), body: events }], { now: Math.max(...events.map((e) => e.time)) + 1000 });
  expect(r.deadLettered).toBe(0);
  return r.rowsWrittenByTable.agents ?? 0;
}

const stored = async (agentName: string) => {
  const a = await findAgent(env.DB, CLS, agentName);
  return { lastSeen: a?.lastSeen, listedAt: a?.listedAt };
};

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the agent registry row", () => {
  it("is written when the agent is first heard from, then not for its messages within a step, then once per step", async () => {
    const name = `heard-${uid()}`;
    expect(await agentsWritten(event(name, T0))).toBeGreaterThan(0);
    expect(await stored(name)).toEqual({ lastSeen: T0, listedAt: listedAt(T0) });
    // A minute and four minutes on (other minutes, so the old rule moved the list entries too): nothing written.
    expect(await agentsWritten(event(name, T0 + MIN))).toBe(0);
    expect(await agentsWritten(event(name, T0 + 4 * MIN), event(name, T0 + 4 * MIN + 500))).toBe(0);
    expect(await stored(name)).toEqual({ lastSeen: T0, listedAt: listedAt(T0) });
    // A step on: the row and its entries in the two activity lists, once.
    const later = T0 + HEARD_FROM_STEP_MS;
    expect(await agentsWritten(event(name, later))).toBe(3);
    expect(await stored(name)).toEqual({ lastSeen: later, listedAt: listedAt(later) });
    // The list orders it by what is stored: it comes back with its stored activity.
    const listed = (await listAgents(env.DB, { agentClass: CLS }, { limit: 200 })).items.find((a) => a.agentName === name);
    expect(listed).toMatchObject({ lastSeen: later, listedAt: listedAt(later) });
  });

  it("stores the latest time of a message that spans a step, and never moves back for a late or redelivered event", async () => {
    const name = `late-${uid()}`;
    await agentsWritten(event(name, T0));
    // One message whose events span more than a step (a backlog flushed at once): its latest time is stored.
    const last = T0 + HEARD_FROM_STEP_MS + 2 * MIN;
    expect(await agentsWritten(event(name, T0 + 2 * MIN), event(name, last))).toBe(3);
    expect((await stored(name)).lastSeen).toBe(last);
    // An event from before what is stored, even a step before it: nothing written, nothing moved.
    expect(await agentsWritten(event(name, last - HEARD_FROM_STEP_MS - MIN))).toBe(0);
    expect((await stored(name)).lastSeen).toBe(last);
  });

  it("still counts every numbered event: a numbered message writes the row alone, its list entries only per step", async () => {
    const name = `numbered-${uid()}`;
    await agentsWritten(event(name, T0, 1));
    // Event 3 never arrives. Each message moves the counts (the row), not the lists (no entry).
    expect(await agentsWritten(event(name, T0 + MIN, 2))).toBe(1);
    expect(await agentsWritten(event(name, T0 + 2 * MIN, 4), event(name, T0 + 2 * MIN + 1, 5))).toBe(1);
    const a = await findAgent(env.DB, CLS, name);
    expect(a).toMatchObject({ lastSeen: T0, seqMax: 5, seqSeen: 4 });
    expect(eventGapOf(a!)).toMatchObject({ highest: 5, arrived: 4, missing: 1 });
    // A step on, the counts and the activity move in one row write, with the two list entries.
    expect(await agentsWritten(event(name, T0 + HEARD_FROM_STEP_MS, 6))).toBe(3);
    expect(await findAgent(env.DB, CLS, name)).toMatchObject({ lastSeen: T0 + HEARD_FROM_STEP_MS, seqMax: 6, seqSeen: 5 });
  });

  it("stores an event at once when reconciliation found the agent's events blocked after it last heard from it", async () => {
    const name = `blocked-${uid()}`;
    await agentsWritten(event(name, T0));
    await recordReconciliation(env.DB, { agentClass: CLS, agentName: name, askedAt: T0 + MIN, findings: 0, error: null, pipeline: "no_queue" });
    expect((await blockedAgents(env.DB, { agentClass: CLS })).items.map((a) => a.agentName)).toContain(name);
    // Its binding is back: an event two minutes after the ask, within the step, is stored, and the list drops it.
    expect(await agentsWritten(event(name, T0 + 3 * MIN))).toBe(3);
    expect((await stored(name)).lastSeen).toBe(T0 + 3 * MIN);
    expect((await blockedAgents(env.DB, { agentClass: CLS })).items.map((a) => a.agentName)).not.toContain(name);
    // Heard from since the ask: back to once per step.
    expect(await agentsWritten(event(name, T0 + 4 * MIN))).toBe(0);
  });

  /**
   * The quiet fleet: 3 events per agent per minute, arriving as one message of 3 events per agent and
   * minute, a batch carrying one message of each agent; ten minutes after every agent was first heard from. What
   * the agents table wrote, and the events stored.
   */
  async function quietFleet(numbered: boolean) {
    const agents = Array.from({ length: 20 }, (_, i) => `quiet-${i}-${uid()}`);
    const start = T0 + 3_600_000;
    const seq = (n: number) => (numbered ? n : undefined);
    await ingestBatch(
      env.DB,
      agents.map((a) => ({ id: crypto.randomUUID(), body: [event(a, start, seq(1))] })),
      { now: start + 1000 },
    );
    let events = 0;
    let written = 0;
    for (let m = 1; m <= 10; m++) {
      const at = start + m * MIN;
      const r = await ingestBatch(
        env.DB,
        agents.map((a) => ({
          id: crypto.randomUUID(),
          body: [0, 1, 2].map((i) => event(a, at + i * 20_000, seq(3 * m - 1 + i))),
        })),
        { now: at + 41_000 },
      );
      events += r.stored;
      written += r.rowsWrittenByTable.agents ?? 0;
    }
    console.log(
      `[agent row] quiet fleet, ${agents.length} agents x 10 min, ${numbered ? "numbered" : "unnumbered"}: ${(written / events).toFixed(3)} agents rows written per event`,
    );
    expect(events).toBe(agents.length * 30);
    return { agents: agents.length, written };
  }

  it("costs a quiet fleet's registry one row write per agent and step, not one per message", async () => {
    const r = await quietFleet(false);
    // Each agent's activity moves at minutes 5 and 10: the row and its two list entries, twice, for its 30 events
    // (0.20 per event). Before: the row per message and, each minute, the row again with both entries: 4 per message,
    // 1.33 per event.
    expect(r.written).toBe(r.agents * 2 * 3);
  });

  it("costs a numbered quiet fleet the row per message, and its list entries per step only", async () => {
    const r = await quietFleet(true);
    // Eight messages move only the counts (the row); at minutes 5 and 10 the activity moves too, in the same row
    // write, with the two list entries: 8 + 2 x 3 per agent (0.47 per event; 1.33 before).
    expect(r.written).toBe(r.agents * (8 + 2 * 3));
  });

  it("is listed with what its last-heard-from time means", async () => {
    const name = `page-${uid()}`;
    await agentsWritten(event(name, T0));
    const page = await getText(`/agents?agentClass=${CLS}`, "viewer");
    expect(page.status).toBe(200);
    expect(page.text).toContain("last heard from");
    const note = /<p[^>]*data-testid="heard-from-note"[^>]*>([\s\S]*?)<\/p>/.exec(page.text)?.[1];
    expect(note).toContain(`at most once every ${HEARD_FROM_STEP_MS / MIN} minutes`);
  });
});
