import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { historyStopWords } from "../console/words";
import { slotOf } from "../src/store/history/layout";
import { historyEvents, historySearch } from "../src/store/history/read";
import { writeHistory } from "../worker/ingest/history";
import { fleetEvents } from "./console-fleet";
import { report } from "./report";

/** R2 prices (Standard storage, per month): Class A operations per million, storage per GB. */
const CLASS_A_PER_MILLION = 4.5;
const STORAGE_PER_GB_MONTH = 0.015;
const BATCH = 100;
const EVENTS = 50_000;
/** Live traffic: 1,000 agents at a tenth of the demo's measured rate (14.6 events per agent per minute). */
const RATE_PER_S = 243;

it("R2 history: objects put (Class A) and compressed bytes per event, by shard count; reads' cost", async () => {
  // The fleet's events (its shapes, agents and mix), replayed as live traffic: consecutive at RATE_PER_S, so a
  // batch of 100 spans 0.4 s as a consumer's would (the fleet itself spreads them over 7 days).
  const start = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;
  const fleet = fleetEvents(EVENTS);
  const agents = new Set(fleet.map((e) => `${e.source.agentClass}/${e.source.agentName}`)).size;
  // Each shard count writes on its own day, so reads and id lookups below see only the 4-shard layout.
  const replay = (day: number) => fleet.map((e, i) => ({ ...e, time: start - day * 86_400_000 + Math.floor((i * 1000) / RATE_PER_S) }));
  const passes = [1, 4, 16] as const;
  const events = replay(passes.indexOf(4) * 2);
  for (const [p, shards] of passes.entries()) {
    const events = replay(p * 2);
    // A fresh bucket folder per count (the count is in the keys), batches of 100 in time order as a consumer gets them.
    let objects = 0;
    let bytes = 0;
    let raw = 0;
    // The bound: one object per (hour, shard) a batch touches.
    let bound = 0;
    const t0 = performance.now();
    for (let i = 0; i < events.length; i += BATCH) {
      const r = await writeHistory(env.HISTORY!, events.slice(i, i + BATCH), { shards, receivedAt: Date.now() });
      objects += r.objects;
      bytes += r.bytes;
      raw += r.rawBytes;
      bound += new Set(events.slice(i, i + BATCH).map((e) => slotOf(e.time))).size * shards;
    }
    const ms = performance.now() - t0;
    const putsPerMillion = (objects / events.length) * 1e6;
    const gbPerMillion = ((bytes / events.length) * 1e6) / 1e9;
    report(
      `history: HISTORY_SHARDS=${shards}: ${(objects / (events.length / BATCH)).toFixed(2)} puts per batch of ${BATCH}, ${putsPerMillion.toFixed(0)} Class A per million events ($${((putsPerMillion / 1e6) * CLASS_A_PER_MILLION).toFixed(3)}), ` +
        `${(bytes / events.length).toFixed(1)} bytes/event gzip (${(raw / events.length).toFixed(0)} raw, ${(raw / bytes).toFixed(1)}x), storage $${(gbPerMillion * STORAGE_PER_GB_MONTH).toFixed(5)} per million events per month; ` +
        `write ${((events.length / ms) * 1000).toFixed(0)} events/s (${events.length} fleet events from ${agents} agents at ${RATE_PER_S}/s, local R2)`,
    );
    expect(objects).toBeLessThanOrEqual(bound);
  }
  // Reads against what the 4-shard pass wrote: the busiest agent's whole span, a 2-minute window of it, and an id lookup.
  const byAgent = new Map<string, number>();
  for (const e of events)
    byAgent.set(JSON.stringify([e.source.agentClass, e.source.agentName]), (byAgent.get(JSON.stringify([e.source.agentClass, e.source.agentName])) ?? 0) + 1);
  const [hot] = [...byAgent.entries()].sort((a, b) => b[1] - a[1])[0]!;
  const [agentClass, agentName] = JSON.parse(hot) as [string, string];
  const mine = events.filter((e) => e.source.agentClass === agentClass && e.source.agentName === agentName);
  const to = mine.at(-1)!.time;
  const from = mine[0]!.time;
  const reads = { whole: [from, to], "2 min": [to - 120_000, to] } as const;
  let day: Awaited<ReturnType<typeof historyEvents>> | null = null;
  for (const [name, [lo, hi]] of Object.entries(reads)) {
    const r = await historyEvents(env.HISTORY!, { shards: 4 }, { agent: { agentClass, agentName }, from: lo, to: hi });
    day ??= r;
    report(
      `history read: busiest agent (${mine.length} events), ${name} (${((hi - lo) / 60_000).toFixed(1)} min), HISTORY_SHARDS=4: ${r.events.length} events, ${r.scan.lists} lists, ${r.scan.objectsListed} listed, ${r.scan.objectsSkipped} skipped by metadata, ${r.scan.objectsFetched} fetched (${r.scan.bytes} bytes)${r.scan.complete ? "" : `, incomplete: ${r.scan.stop ? historyStopWords(r.scan.stop) : "?"}`}`,
    );
  }
  const traced = mine.at(-1)!;
  const search = await historySearch(env.HISTORY!, { traceId: traced.corr.traceId, to: String(to) });
  report(
    `history read: traceId lookup over 24 h (HISTORY_SHARDS=4): ${search.events.length} events, ${search.scan.lists} lists, ${search.scan.objectsListed} listed, ${search.scan.objectsSkipped} skipped by Bloom filter, ${search.scan.objectsFetched} fetched${search.scan.complete ? "" : `, incomplete: ${search.scan.stop ? historyStopWords(search.scan.stop) : "?"}`}`,
  );
  expect(day!.events.length).toBeGreaterThan(0);
  const want = events.filter(
    (e) => e.corr.traceId === traced.corr.traceId && e.time <= to && e.time >= Math.floor(to / 3_600_000) * 3_600_000 - 23 * 3_600_000,
  );
  expect(search.events.map((e) => e.id).sort()).toEqual(want.map((e) => e.id).sort());
});
