import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { beforeAll, describe, expect, it } from "vitest";
import type { AgentGapRow } from "../../../src/store/read-models/event-gaps";
import type { Page } from "../../../src/store/read-models/paging";
import { ingestBatch } from "../../../worker/ingest/consumer";
import type { GapAgent } from "../../fixtures/gap-agent";
import { loseStoredEvents, storedEvents } from "../../fixtures/outbox";
import { pollRows } from "../../helpers";
import { publishEnvTeamKeys } from "../access-tokens";
import { byTestId, mustTestId } from "../html";
import { call, getOverview, getText, uid } from "./harness";

// Events lost before they reach the Queue: a real agent (GapAgent, both mixins) records events, some of its
// outbox rows are deleted before the drain (what a crash of an in-memory queue does to events in flight), and
// the console must count exactly those, from the agent's own numbers: on the agent's page, on the overview,
// and in the list the overview's card links to. Redelivery must not change the count.

const enc = encodeURIComponent;
type Numbers = { seq_max: number | null; seq_seen: number };

const numbers = (name: string) =>
  env.DB.prepare("SELECT seq_max, seq_seen FROM agents WHERE agent_class = 'GapAgent' AND agent_name = ?").bind(name).first<Numbers>();

/**
 * Records `n` session events on the agent and, before the outbox drains, deletes the rows at positions `lose`
 * (0-based, among these n). Returns the outbox's own numbers for the n events and the ones deleted.
 */
async function recordLosing(name: string, n: number, lose: number[]): Promise<{ numbered: number[]; lost: number[] }> {
  const stub = await getAgentByName(env.GapAgent, name);
  const result = await runInDurableObject(stub, async (agent: GapAgent, state) => {
    for (let i = 0; i < n; i++) agent.telemetry.record("session.status_running", { turnSeq: i + 1 }, { sessionName: name });
    // stats() writes this turn's events to the outbox now; the drain has not run (it waits for a timer).
    agent.telemetry.stats();
    // The rows may still hold events already sent (cleared by the outbox's next write): these n are the last.
    const rows = storedEvents(state.storage.sql).slice(-n);
    const lost = lose.map((i) => rows[i]!.seq);
    loseStoredEvents(state.storage.sql, lost);
    return { numbered: rows.map((r) => r.seq), lost };
  });
  await stub.settleTelemetry();
  return result;
}

/** Every page of /agents?gaps=true as JSON. */
async function gapList(): Promise<AgentGapRow[]> {
  const all: AgentGapRow[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const res = await call(`/agents?gaps=true&limit=2${cursor ? `&cursor=${enc(cursor)}` : ""}`, { as: "viewer", headers: { Accept: "application/json" } });
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page<AgentGapRow>;
    all.push(...page.items);
    if (!page.next) return all;
    cursor = page.next;
  }
  throw new Error("too many pages");
}

/** The ground truth: every agent row of this test file's D1 whose numbers show a gap. */
async function agentsWithGapsInD1() {
  return (
    await env.DB.prepare("SELECT agent_class, agent_name, seq_max - seq_seen AS missing FROM agents WHERE seq_max > seq_seen ORDER BY agent_name").all<{
      agent_class: string;
      agent_name: string;
      missing: number;
    }>()
  ).results;
}

let lossy: { name: string; numbered: number[]; lost: number[] };
let twoLost: { name: string; lost: number[] };
let whole: string;

beforeAll(async () => {
  await publishEnvTeamKeys();
  // One agent does real work, then loses 2 of 6 events (not the last: numbers show a loss below the highest).
  const name = `gappy-${uid()}`;
  await (await getAgentByName(env.GapAgent, name)).work(2);
  lossy = { name, ...(await recordLosing(name, 6, [1, 3])) };
  // Another loses one event twice over: 2 in all.
  const second = `gappy2-${uid()}`;
  const a = await recordLosing(second, 3, [0]);
  const b = await recordLosing(second, 3, [1]);
  twoLost = { name: second, lost: [...a.lost, ...b.lost] };
  // And one loses nothing.
  whole = `whole-${uid()}`;
  await (await getAgentByName(env.GapAgent, whole)).work(1);
  await pollRows<Numbers>(
    "SELECT seq_max, seq_seen FROM agents WHERE agent_name IN (?, ?, ?)",
    [lossy.name, twoLost.name, whole],
    (r) => r.length === 3 && r.every((x) => x.seq_max !== null && x.seq_max >= 3),
  );
  await pollRows<Numbers>("SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?", [lossy.name], (r) => r[0]?.seq_max === 12 && r[0]?.seq_seen === 10);
  await pollRows<Numbers>("SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?", [twoLost.name], (r) => r[0]?.seq_max === 6 && r[0]?.seq_seen === 4);
});

describe("events lost before the Queue", () => {
  it("the console's gap equals exactly the events deleted from the agent's outbox, by the outbox's own numbers", async () => {
    const stub = await getAgentByName(env.GapAgent, lossy.name);
    const shipped = (await stub.shipped()).map((e) => e.seq!);
    // The work's 6 events were 1-6; the outbox numbered the recorded ones 7-12 and lost two of them.
    expect(lossy.numbered).toEqual([7, 8, 9, 10, 11, 12]);
    expect(lossy.lost).toEqual([8, 10]);
    expect([...shipped, ...lossy.lost].sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(await numbers(lossy.name)).toEqual({ seq_max: 12, seq_seen: 10 });
    expect(await numbers(whole)).toEqual({ seq_max: 3, seq_seen: 3 });
  });

  it("a batch the Queue got twice (a lost acknowledgement, so the outbox resent it), and a batch redelivered to the consumer, leave the gap as it was", async () => {
    const stub = await getAgentByName(env.GapAgent, lossy.name);
    await stub.loseNextAcks(1);
    const stats = await runInDurableObject(stub, async (agent: GapAgent) => {
      agent.telemetry.record("session.status_idle", { turnSeq: 7 }, { sessionName: lossy.name });
      return agent.settleTelemetry();
    });
    expect(stats).toMatchObject({ pending: 0 });
    expect(stats.sendErrors).toBeGreaterThanOrEqual(1);
    const shipped = await stub.shipped();
    const last = shipped[shipped.length - 1]!;
    // Sent twice, same id, same number.
    expect(shipped.filter((e) => e.id === last.id).map((e) => e.seq)).toEqual([13, 13]);
    // A marker sent after both deliveries: once it is counted, so are they (the Queue delivers in order here).
    await stub.recordEvent("session.status_idle", { turnSeq: 8 }, { sessionName: lossy.name });
    await stub.settleTelemetry();
    await pollRows<Numbers>("SELECT seq_max, seq_seen FROM agents WHERE agent_name = ?", [lossy.name], (r) => r[0]?.seq_max === 14);
    expect(await numbers(lossy.name)).toEqual({ seq_max: 14, seq_seen: 12 });

    // Everything the agent ever sent, delivered to the consumer again as new messages.
    const bodies = shipped.map((e) => JSON.stringify([e]));
    const r = await ingestBatch(
      env.DB,
      bodies.map((body, i) => ({ id: `redeliver-${i}-${uid()}`, body })),
    );
    expect(r.deadLettered).toBe(0);
    expect(await numbers(lossy.name)).toEqual({ seq_max: 14, seq_seen: 12 });
  });

  it("the agent page says how many events never arrived, what that means and what the console did", async () => {
    const res = await getText(`/agents/GapAgent/${enc(lossy.name)}`, "viewer");
    expect(res.status).toBe(200);
    const gap = mustTestId(res.text, "event-gap");
    expect(gap.attrs).toMatchObject({ "data-missing": "2", "data-highest": "14", "data-arrived": "12" });
    // What the console did: it asked the agent (reconciliation closes what the agent still records).
    expect(mustTestId(gap.html, "event-gap-action").attrs["data-asked"]).toBe("true");
    const ok = await getText(`/agents/GapAgent/${enc(whole)}`, "viewer");
    expect(mustTestId(ok.text, "event-gap-none").attrs["data-missing"]).toBe("0");
    expect(byTestId(ok.text, "event-gap")).toBeUndefined();
  });

  it("the overview counts the agents with a gap, and its card links to a list of exactly those agents", async () => {
    const truth = await agentsWithGapsInD1();
    expect(truth.map((t) => [t.agent_name, t.missing])).toEqual(
      [
        [lossy.name, 2],
        [twoLost.name, 2],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    const overview = (await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as {
      counts: { agentsWithGaps: { n: number; capped: boolean; missingEvents: number } };
    };
    expect(overview.counts.agentsWithGaps).toEqual({ n: truth.length, capped: false, missingEvents: 4 });

    const html = (await getOverview("viewer")).text;
    const tag = /<a\s([^>]*data-testid="count-Agents with missing events"[^>]*)>\s*<div class="n">(\d+)<\/div>/.exec(html);
    expect(tag, "the overview has the card").not.toBeNull();
    const attrs = Object.fromEntries([...tag![1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!.replace(/&amp;/g, "&")]));
    expect(attrs).toMatchObject({ class: "card alert", href: "/agents?gaps=true", "data-figure": String(truth.length) });
    expect(attrs["data-figure-capped"]).toBeUndefined();
    const card = [tag![0], attrs.href!, tag![2]!] as const;
    expect(Number(card[2])).toBe(truth.length);

    // The link's list, as JSON across pages of 2 and as the page the card opens: exactly those agents.
    const list = await gapList();
    expect(list.map((a) => [a.agentName, a.missing]).sort()).toEqual(truth.map((t) => [t.agent_name, t.missing]).sort());
    const page = (await getText(card[1], "viewer")).text;
    const rows = [...page.matchAll(/data-testid="agent-row" data-agent-class="([^"]*)" data-agent-name="([^"]*)" data-missing="(\d+)"/g)].map((m) => [
      m[2],
      Number(m[3]),
    ]);
    expect(rows.length).toBe(Number(card[2]));
    expect(rows.sort()).toEqual(truth.map((t) => [t.agent_name, t.missing]).sort());
  });

  it("/agents validates its filters with a sentence", async () => {
    const res = await getText("/agents?gaps=maybe", "viewer");
    expect(res.status).toBe(400);
    const refused = mustTestId(res.text, "error-message");
    expect(refused.attrs["data-code"]).toBe("invalid_input");
    expect(refused.text).toContain("gaps");
  });
});
