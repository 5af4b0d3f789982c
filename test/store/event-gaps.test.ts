import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { beforeAll, describe, expect, it } from "vitest";
import { isBadRequest } from "../../src/store/read-models/errors";
import { agentsWithGaps, countAgentsWithGaps, eventGapOf } from "../../src/store/read-models/event-gaps";
import { overviewCounts } from "../../src/store/read-models/overview";
import { makeEvent } from "../fixtures/events";
import { ingest, rejection, walk } from "./store-helpers";

// agentsWithGaps (the overview card's list, and what reconciliation asks) and the overview's count, on agents
// ingested through the real consumer. Storage is per test file: these are the only agents.

const T = Date.now() - 3_600_000;

/** One agent's numbered events (its class and name), each `seq` in `seqs`, at time T + `at` minutes (lists order agents to the minute). */
function numbered(agentClass: string, agentName: string, seqs: number[], at: number): TelemetryEvent[] {
  return seqs.map((seq, i) => ({
    ...makeEvent("session.status_running", { turnSeq: seq }, { agentName, corr: { sessionName: agentName }, time: T + at * 60_000 + i }),
    source: { agentClass, agentName },
    seq,
  }));
}

// Newest last: last_seen grows with `at`.
const AGENTS: { cls: string; name: string; seqs: number[]; at: number; missing: number }[] = [
  { cls: "SupportAgent", name: "a-old-gap", seqs: [1, 3], at: 1, missing: 1 },
  { cls: "SupportAgent", name: "b-whole", seqs: [1, 2, 3], at: 2, missing: 0 },
  { cls: "ProbeAgent", name: "c-gap", seqs: [2, 5], at: 3, missing: 3 },
  { cls: "SupportAgent", name: "d-unnumbered", seqs: [], at: 4, missing: 0 },
  { cls: "ProbeAgent", name: "e-whole", seqs: [1], at: 5, missing: 0 },
  { cls: "SupportAgent", name: "f-gap", seqs: [1, 2, 4], at: 6, missing: 1 },
  { cls: "ProbeAgent", name: "g-restarted", seqs: [1, 2], at: 7, missing: 0 },
];

beforeAll(async () => {
  for (const a of AGENTS) {
    const events = a.seqs.length
      ? numbered(a.cls, a.name, a.seqs, a.at)
      : [
          {
            ...makeEvent("session.status_idle", { turnSeq: 1 }, { agentName: a.name, time: T + a.at * 60_000 }),
            source: { agentClass: a.cls, agentName: a.name },
          },
        ];
    expect(await ingest(events)).toMatchObject({ deadLettered: 0 });
  }
  // g restarted: numbers 1, 2 again under new event ids (its storage was wiped), newer still.
  await ingest(numbered("ProbeAgent", "g-restarted", [1, 2], 8));
});

describe("agentsWithGaps", () => {
  it("lists exactly the agents with events missing, most recently seen first, across pages", async () => {
    const all = await walk(
      (p) => agentsWithGaps(env.DB, { limit: p.limit, after: p.cursor }),
      1,
      (a) => `${a.agentClass}/${a.agentName}`,
    );
    expect(all.map((a) => [a.agentName, a.missing])).toEqual([
      ["f-gap", 1],
      ["c-gap", 3],
      ["a-old-gap", 1],
    ]);
    expect(all[1]).toMatchObject({ agentClass: "ProbeAgent", agentName: "c-gap", seqMax: 5, seqSeen: 2 });
    for (const a of all) expect(eventGapOf(a).missing).toBe(a.missing);
  });

  it("narrows to one class", async () => {
    const support = await walk(
      (p) => agentsWithGaps(env.DB, { limit: p.limit, after: p.cursor, agentClass: "SupportAgent" }),
      1,
      (a) => a.agentName,
    );
    expect(support.map((a) => a.agentName)).toEqual(["f-gap", "a-old-gap"]);
    expect((await agentsWithGaps(env.DB, { agentClass: "NoSuchAgent" })).items).toEqual([]);
  });

  it("refuses a cursor of another list, and a bad limit, with a sentence", async () => {
    const page = await agentsWithGaps(env.DB, { limit: 1 });
    expect(page.next).not.toBeNull();
    const other = await rejection(agentsWithGaps(env.DB, { after: page.next, agentClass: "SupportAgent" }));
    expect(isBadRequest(other)).toBe(true);
    expect(other.message).toContain("belongs to another list");
    const limit = await rejection(agentsWithGaps(env.DB, { limit: 0 }));
    expect(limit.message).toContain("limit must be a whole number from 1 to 200");
  });
});

describe("the overview's count", () => {
  it("counts the agents the list shows, and the events they miss", async () => {
    expect(await countAgentsWithGaps(env.DB)).toMatchObject({ n: 3, capped: false, missingEvents: 5 });
    expect((await overviewCounts(env.DB, Date.now())).agentsWithGaps).toEqual({ n: 3, capped: false, missingEvents: 5 });
  });

  it("looks at the window + 1 most recently seen agents, and says when there are more", async () => {
    // The newest four: g-restarted, f-gap, e-whole, d-unnumbered: one gap among them, and more agents exist.
    expect(await countAgentsWithGaps(env.DB, 3)).toMatchObject({ n: 1, capped: true, missingEvents: 1 });
    // Window 6 looks at all seven but cannot tell there is no eighth: "≥3", still true. Window 7: exact.
    expect(await countAgentsWithGaps(env.DB, 6)).toMatchObject({ n: 3, capped: true });
    expect(await countAgentsWithGaps(env.DB, 7)).toMatchObject({ n: 3, capped: false });
  });
});
