import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { SAVE_DELAY_MS } from "@agent-oncall/telemetry/outbox";
import { getAgentByName } from "agents";
import { expect, it } from "vitest";
import { chatIncidentLife, fiberLife, makeEvent } from "../test/fixtures/events";
import { ingestBatch } from "../worker/ingest/consumer";
import { toRows } from "../worker/ingest/rows";
import type { SegmentRow } from "../worker/ingest/segments";
import { interleave, median, medianRatio, quantile, ratioSpread, report, totalRatio } from "./report";

const BATCH = 100;

/** A realistic mix: fiber lives, chat incidents, op ambiguities, session status. */
function eventMix(n: number, tag: string): TelemetryEvent[] {
  const out: TelemetryEvent[] = [];
  for (let i = 0; out.length < n; i++) {
    const agentName = `bench-${tag}-${i % 50}`;
    out.push(...fiberLife(`f-${tag}-${i}`, agentName), ...chatIncidentLife(`inc-${tag}-${i}`, agentName));
    out.push(makeEvent("op.ambiguous", { opKind: "tool.call", detail: "no completion" }, { agentName, corr: { opId: `op-${tag}-${i}` } }));
    out.push(makeEvent("session.status_idle", {}, { agentName, corr: { sessionName: agentName } }));
  }
  return out.slice(0, n);
}

/** The baseline: a plain batched multi-row INSERT of the same segments (one per agent's chunk), within 100 bound parameters, no dedupe checks. */
async function rawInsert(events: TelemetryEvent[]): Promise<void> {
  const segs = new Map<number, SegmentRow[]>();
  for (const r of toRows(events, Date.now()).events) segs.set(r.ch, [...(segs.get(r.ch) ?? []), r]);
  const rows = [...segs.values()].map((g) => [
    g[0]!.agent_class,
    g[0]!.agent_name,
    g[0]!.k,
    g[g.length - 1]!.k,
    Math.min(...g.map((r) => r.t)),
    Math.max(...g.map((r) => r.t)),
    g.length,
    g[0]!.ra,
    JSON.stringify(g.map((r) => r.e)),
  ]);
  const cols = ["agent_class", "agent_name", "seq_from", "seq_to", "time_from", "time_to", "n", "received_at", "body"];
  const perStmt = Math.floor(100 / cols.length);
  const stmts: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += perStmt) {
    const chunk = rows.slice(i, i + perStmt);
    const sql = `INSERT INTO event_segments (${cols.join(",")}) VALUES ${chunk.map(() => `(${cols.map(() => "?").join(",")})`).join(",")} ON CONFLICT DO NOTHING`;
    stmts.push(env.DB.prepare(sql).bind(...chunk.flat()));
  }
  await env.DB.batch(stmts);
}

it("ingest path events/s vs a raw batched INSERT into the same local D1", async () => {
  const rounds = 12;
  const perRound = 1000;
  let round = 0;
  const times = await interleave(
    rounds,
    async () => {
      const evs = eventMix(perRound, `p${round++}`);
      for (let i = 0; i < evs.length; i += BATCH)
        await ingestBatch(
          env.DB,
          evs.slice(i, i + BATCH).map((body, j) => ({ id: `${i}-${j}`, body })),
        );
    },
    async () => {
      const evs = eventMix(perRound, `r${round++}`);
      for (let i = 0; i < evs.length; i += BATCH) await rawInsert(evs.slice(i, i + BATCH));
    },
  );
  const pipe = (perRound / median(times.a)) * 1000;
  const raw = (perRound / median(times.b)) * 1000;
  report(
    `ingest: pipeline ${pipe.toFixed(0)} events/s (validate + events + 5 projections), raw INSERT ${raw.toFixed(0)} events/s, ratio ${medianRatio(times).toFixed(2)}x (target >= 0.9x; median per-round ratio over ${rounds} interleaved rounds of ${perRound} events in batches of ${BATCH})`,
  );
  expect(pipe).toBeGreaterThan(0);
});

it("runFiber with telemetry vs without, same agent and same work", async () => {
  const plain = await getAgentByName(env.BenchPlainAgent, "bench");
  const withTel = await getAgentByName(env.BenchTelemetryAgent, "bench");
  // A second plain agent: the same measure between two identical agents (A/A) says what the machine's noise alone reads.
  const twin = await getAgentByName(env.BenchPlainAgent, "bench-twin");
  // The same telemetry with the outbox written once per 100 ms instead of each turn: what that write costs, by difference.
  const flushing = await getAgentByName(env.BenchTelemetryFlushAgent, "bench");
  const steps = 5;
  // Warm the instances up.
  for (let i = 0; i < 20; i++) {
    await plain.run(steps);
    await withTel.run(steps);
    await twin.run(steps);
    await flushing.run(steps);
  }
  // Many short rounds. 40 rounds of 20 calls gave 0.92-1.26x from run to run on a loaded 2-core machine: other
  // processes preempt a round at random, and a preempted round's ratio says nothing about telemetry. Preemption only
  // ever adds time, so the verdict compares each side's quieter rounds (25th percentile of round times); the median
  // per-round ratio and the middle half of the rounds are printed too. The Workers clock here ticks in whole
  // milliseconds, so a round of 20 calls (~20 ms) could only read 1.00x or 1.05x, never between: a round is 100
  // calls (~100 ms, 1% steps).
  const calls = 100;
  const rounds = 100;
  const round = (agent: { run(steps: number): Promise<number> }) => async () => {
    for (let i = 0; i < calls; i++) await agent.run(steps);
  };
  const times = await interleave(rounds, round(plain), round(withTel));
  const stats = await withTel.settle();
  const aa = await interleave(rounds, round(plain), round(twin));
  const aaQuiet = quantile(aa.b, 0.25) / quantile(aa.a, 0.25);
  const flush = await interleave(rounds, round(plain), round(flushing));
  const flushQuiet = quantile(flush.b, 0.25) / quantile(flush.a, 0.25);
  const a = median(times.a) / calls;
  const b = median(times.b) / calls;
  const quiet = quantile(times.b, 0.25) / quantile(times.a, 0.25);
  const spread = ratioSpread(times);
  report(
    `runFiber: without telemetry ${a.toFixed(3)} ms/call, with telemetry ${b.toFixed(3)} ms/call (medians); ratio of the quieter rounds (25th percentile round times) ${quiet.toFixed(3)}x, target <= 1.05x ${quiet <= 1.05 ? "met" : "MISSED"}; median per-round ratio ${medianRatio(times).toFixed(3)}x, middle half of rounds ${spread.p25.toFixed(3)}-${spread.p75.toFixed(3)}x; all rounds' time ${totalRatio(times).toFixed(3)}x (background sends included); the same quieter-rounds ratio between two plain agents (A/A: the machine's noise alone) ${aaQuiet.toFixed(3)}x, middle half of rounds ${ratioSpread(aa).p25.toFixed(3)}-${ratioSpread(aa).p75.toFixed(3)}x; with outboxWrites "flush" (no outbox write per call; loses the last ${SAVE_DELAY_MS} ms at an eviction) ${flushQuiet.toFixed(3)}x, middle half of rounds ${ratioSpread(flush).p25.toFixed(3)}-${ratioSpread(flush).p75.toFixed(3)}x (${rounds} interleaved rounds of ${calls} RPC calls; ${steps} synchronous stashes per fiber; telemetry sent ${stats.sent}, errors ${stats.sendErrors}, outbox rows written ${stats.outboxRowsWritten})`,
  );
  expect(stats.sendErrors).toBe(0);
});

it("Durable Object rows written per event by the telemetry outbox, and events per Queue message, on a demo-like session workload", {
  timeout: 120_000,
}, async () => {
  // Session turns of about 14 events each (after stash coalescing): busy (30 turns 50 ms apart) and paced (8 turns 2 s
  // apart, nearer the demo fleet's 146 events per agent per minute, where flushes and quiet spells cost their own rows).
  const measure = async (ns: typeof env.BenchDemoLikeAgent | typeof env.BenchDemoLikeFlushAgent, turns: number, gapMs: number) => {
    const agent = await getAgentByName(ns as typeof env.BenchDemoLikeAgent, `demo-like-${crypto.randomUUID().slice(0, 8)}`);
    const { rows, events, messages } = await agent.workload(turns, gapMs);
    return { rows, events, messages, perEvent: rows / events, perMessage: events / messages, perTurn: rows / turns };
  };
  const verdict = (x: number) => (x <= 0.2 ? "met" : "MISSED");
  const line = (m: Awaited<ReturnType<typeof measure>>) =>
    `${m.perEvent.toFixed(3)} rows/event (${m.rows} rows / ${m.events} events; ${m.perTurn.toFixed(1)} rows per session turn) ${verdict(m.perEvent)}, ${m.perMessage.toFixed(2)} events/message (${m.messages} messages)`;
  for (const [pace, turns, gapMs] of [
    ["busy", 30, 50],
    ["paced", 8, 2000],
  ] as const) {
    const turn = await measure(env.BenchDemoLikeAgent, turns, gapMs);
    const flush = await measure(env.BenchDemoLikeFlushAgent, turns, gapMs);
    report(
      `DO rows written per event (telemetry outbox; demo-like session turns, ${pace}: ${turns} turns ${gapMs} ms apart; 2 model calls, 1 tool call, 8 checkpoints each; target <= 0.2): outboxWrites "turn" (default; nothing lost at an eviction) ${line(turn)}; outboxWrites "flush" (an eviction loses the last ${SAVE_DELAY_MS} ms) ${line(flush)}; before (an INSERT, AUTOINCREMENT's counter and a DELETE per event, every checkpoint of a microtask run shipped; measured on the same workload) 2.69 rows/event, 51 rows per session turn, 19 events per session turn instead of 13`,
    );
    expect(turn.events).toBeGreaterThan(0);
  }
});
