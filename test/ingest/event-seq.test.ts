import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { findAgent } from "../../src/store/read-models/agents";
import { eventGapOf } from "../../src/store/read-models/event-gaps";
import { tableStatements } from "../../worker/ingest/projections";
import { toRows } from "../../worker/ingest/rows";
import { makeEvent } from "../fixtures/events";
import { ingest } from "../store/store-helpers";

// The agents projection's event numbers (src/telemetry/seq.ts): seq_max is the highest number that arrived,
// seq_seen how many distinct numbered events arrived, each event id counted once however often it is
// delivered; seq_max - seq_seen never arrived.

const uid = () => crypto.randomUUID().slice(0, 8);

/** Numbered session events of one agent: numbers `seqs`, in that order. */
function numbered(agentName: string, seqs: number[]): TelemetryEvent[] {
  return seqs.map((seq) => ({ ...makeEvent("session.status_running", { turnSeq: seq }, { agentName, corr: { sessionName: agentName } }), seq }));
}

async function numbersOf(agentName: string) {
  return env.DB.prepare("SELECT seq_max, seq_seen FROM agents WHERE agent_class = 'ProbeAgent' AND agent_name = ?")
    .bind(agentName)
    .first<{ seq_max: number | null; seq_seen: number }>();
}

describe("the agents projection counts event numbers", () => {
  it("keeps the highest number and how many arrived; the difference is what never arrived", async () => {
    const name = `seq-${uid()}`;
    const events = numbered(name, [1, 2, 3, 4, 5, 6, 7]);
    // 3 and 6 are lost on the way.
    expect(await ingest(events.filter((e) => e.seq !== 3 && e.seq !== 6))).toMatchObject({ stored: 5, deadLettered: 0 });
    expect(await numbersOf(name)).toEqual({ seq_max: 7, seq_seen: 5 });
    const agent = await findAgent(env.DB, "ProbeAgent", name);
    expect(eventGapOf(agent!)).toEqual({ missing: 2, highest: 7, arrived: 5, restarted: false });
  });

  it("a redelivered batch, and an event twice in one batch, change nothing", async () => {
    const name = `seq-redeliver-${uid()}`;
    const events = numbered(name, [1, 2, 4]);
    await ingest(events);
    expect(await numbersOf(name)).toEqual({ seq_max: 4, seq_seen: 3 });
    // The same events again (a Queue redelivery, or an outbox resend after an eviction): new message ids.
    expect(await ingest(events)).toMatchObject({ stored: 3, deadLettered: 0 });
    // One batch carrying an event twice, next to one already stored.
    await ingest([events[0]!, events[0]!, events[2]!]);
    expect(await numbersOf(name)).toEqual({ seq_max: 4, seq_seen: 3 });
  });

  it("a missing event that arrives late closes its gap, in any order and batching", async () => {
    const name = `seq-late-${uid()}`;
    const events = numbered(name, [1, 2, 3, 4, 5]);
    await ingest([events[4]!, events[0]!]);
    expect(await numbersOf(name)).toEqual({ seq_max: 5, seq_seen: 2 });
    await ingest([events[2]!]);
    await ingest([events[3]!, events[1]!, events[4]!]);
    expect(await numbersOf(name)).toEqual({ seq_max: 5, seq_seen: 5 });
  });

  it("unnumbered events (older senders, the console's own events) count nothing; a lost last event shows only once a later one arrives", async () => {
    const name = `seq-mixed-${uid()}`;
    await ingest([makeEvent("session.status_idle", { turnSeq: 1 }, { agentName: name, corr: { sessionName: name } })]);
    expect(await numbersOf(name)).toEqual({ seq_max: null, seq_seen: 0 });
    expect(eventGapOf((await findAgent(env.DB, "ProbeAgent", name))!)).toMatchObject({ missing: 0, highest: null });
    const events = numbered(name, [1, 2, 3]);
    // 3 lost: nothing says so yet (numbers only show losses below the highest that arrived).
    await ingest([...events.slice(0, 2), makeEvent("session.status_idle", { turnSeq: 2 }, { agentName: name, corr: { sessionName: name } })]);
    expect(await numbersOf(name)).toEqual({ seq_max: 2, seq_seen: 2 });
    await ingest(numbered(name, [4]));
    expect(await numbersOf(name)).toEqual({ seq_max: 4, seq_seen: 3 });
  });

  it("numbers are per agent: another agent's numbers (or a forger's, under its own name) never move this agent's", async () => {
    const name = `seq-own-${uid()}`;
    await ingest(numbered(name, [1, 2]));
    await ingest([...numbered(`${name}-other`, [1, 1000]), { ...numbered(name, [1])[0]!, source: { agentClass: "SessionAgent", agentName: name }, seq: 9000 }]);
    expect(await numbersOf(name)).toEqual({ seq_max: 2, seq_seen: 2 });
  });

  it("a restart of the numbering (storage wiped) reads as restarted, not as a gap", async () => {
    const name = `seq-restart-${uid()}`;
    await ingest(numbered(name, [1, 2, 3, 4, 5]));
    // The agent is destroyed and created again under its name: numbers start at 1 again, with new event ids.
    await ingest(numbered(name, [1, 2]));
    const gap = eventGapOf((await findAgent(env.DB, "ProbeAgent", name))!);
    expect(gap).toEqual({ missing: 0, highest: 5, arrived: 7, restarted: true });
  });

  it.each([
    ["0", 0],
    ["negative", -3],
    ["a fraction", 1.5],
    ["a string", "7"],
    ["past 2^53", 2 ** 53],
    ["null", null],
  ])("a seq that is %s is refused to dead letters with a reason", async (_label, seq) => {
    const name = `seq-bad-${uid()}`;
    const e = { ...numbered(name, [1])[0]!, seq };
    expect(await ingest([e])).toMatchObject({ stored: 0, deadLettered: 1 });
    const row = await env.DB.prepare("SELECT reason FROM dead_letters WHERE instr(body, ?) > 0").bind(e.id).first<{ reason: string }>();
    expect(row?.reason).toMatch(/^invalid event: seq: /);
  });
});

describe("what the numbers cost at ingest", () => {
  /**
   * Runs one batch's statements as ingest does; what D1 reports per statement (the first is the rollups'), and
   * apart, what the agents statements wrote.
   */
  async function cost(events: TelemetryEvent[]) {
    const rows = toRows(events, Date.now());
    const stmts = tableStatements(env.DB, rows.events, rows.projections, rows.rollups);
    const results = await env.DB.batch(stmts.map((s) => s.stmt));
    const written = results.map((r) => r.meta.rows_written ?? 0);
    return {
      written,
      agents: written.filter((_, i) => stmts[i]!.table === "agents").reduce((a, b) => a + b, 0),
      // Every other projection statement: not the rollups' (the first) nor the segments' (the last).
      others: written.filter((_, i) => i > 0 && i < written.length - 1 && stmts[i]!.table !== "agents"),
      read: results.reduce((n, r) => n + (r.meta.rows_read ?? 0), 0),
    };
  }

  it("costs the agents row once per numbered message (the counts move), and adds nothing elsewhere", async () => {
    const figures: Record<string, unknown> = {};
    const strip = (events: TelemetryEvent[]) => events.map(({ seq: _s, ...e }) => e as TelemetryEvent);
    for (const size of [1, 20]) {
      const a = `cost-plain-${uid()}`;
      const b = `cost-numbered-${uid()}`;
      // Same events for two new agents, then a second batch for each (the agents row exists by then).
      const plain = [
        strip(
          numbered(
            a,
            Array.from({ length: size }, (_, i) => i + 1),
          ),
        ),
        strip(numbered(a, [size + 1])),
      ];
      const withSeq = [
        numbered(
          b,
          Array.from({ length: size }, (_, i) => i + 1),
        ),
        numbered(b, [size + 1]),
      ];
      const p = [await cost(plain[0]!), await cost(plain[1]!)];
      const n = [await cost(withSeq[0]!), await cost(withSeq[1]!)];
      // A new agent costs the same either way. Then an unnumbered message within the step of its last activity
      // writes no agents row (src/store/heard-from.ts), while a numbered one writes the row once: its counts moved.
      expect(n[0]!.agents).toBe(p[0]!.agents);
      expect([p[1]!.agents, n[1]!.agents]).toEqual([0, 1]);
      // Every other projection statement (not the rollups', whose 5-minute bucket may be new for one batch and not
      // the other, an insert against an update) writes the same rows; the segments' (the last) writes fewer for
      // numbered events: a contiguous run is one segment, unnumbered events one each.
      expect(n.map((c) => c.others)).toEqual(p.map((c) => c.others));
      n.forEach((c, i) => {
        expect(c.written.at(-1)!).toBeLessThanOrEqual(p[i]!.written.at(-1)!);
      });
      expect(n[0]!.written.at(-1)).toBe(3);
      expect(await numbersOf(b)).toEqual({ seq_max: size + 1, seq_seen: size + 1 });
      figures[`batch of ${size} + 1`] = { plain: p, numbered: n };
    }
    console.log(`[event-seq cost] ${JSON.stringify(figures)}`);
  });

  it("adds the field's bytes to each event on the wire", () => {
    const e = numbered("bytes", [1])[0]!;
    const { seq: _s, ...plain } = e;
    for (const seq of [1, 1000, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      const delta = JSON.stringify({ ...plain, seq }).length - JSON.stringify(plain).length;
      expect(delta).toBe(7 + String(seq).length);
    }
  });
});
