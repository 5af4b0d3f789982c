import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { historyEvents, historySearch } from "../src/store/history/read";
import { writeHistory } from "../worker/ingest/history";
import { fleetEvents } from "./console-fleet";
import { report } from "./report";

/** R2 prices (Standard storage, per month): Class A operations per million, storage per GB. */
const CLASS_A_PER_MILLION = 4.5;
const STORAGE_PER_GB_MONTH = 0.015;
const BATCH = 100;
const EVENTS = 50_000;

it("R2 history: objects put (Class A) and compressed bytes per event, by shard count; reads' cost", async () => {
  const events = fleetEvents(EVENTS);
  const agents = new Set(events.map((e) => `${e.source.agentClass}/${e.source.agentName}`)).size;
  for (const shards of [1, 4, 16]) {
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
      bound += new Set(events.slice(i, i + BATCH).map((e) => Math.floor(e.time / 3_600_000))).size * shards;
    }
    const ms = performance.now() - t0;
    const putsPerMillion = (objects / events.length) * 1e6;
    const gbPerMillion = (bytes / events.length) * 1e6 / 1e9;
    report(
      `history: HISTORY_SHARDS=${shards}: ${(objects / (events.length / BATCH)).toFixed(2)} puts per batch of ${BATCH}, ${putsPerMillion.toFixed(0)} Class A per million events ($${((putsPerMillion / 1e6) * CLASS_A_PER_MILLION).toFixed(3)}), ` +
        `${(bytes / events.length).toFixed(1)} bytes/event gzip (${(raw / events.length).toFixed(0)} raw, ${(raw / bytes).toFixed(1)}x), storage $${(gbPerMillion * STORAGE_PER_GB_MONTH).toFixed(5)} per million events per month; ` +
        `write ${((events.length / ms) * 1000).toFixed(0)} events/s (${events.length} fleet events, ${agents} agents, local R2)`,
    );
    expect(objects).toBeLessThanOrEqual(bound);
  }
  // Reads against what the 4-shard pass wrote: the busiest agent's day, and an id lookup over a day.
  const byAgent = new Map<string, number>();
  for (const e of events) byAgent.set(JSON.stringify([e.source.agentClass, e.source.agentName]), (byAgent.get(JSON.stringify([e.source.agentClass, e.source.agentName])) ?? 0) + 1);
  const [hot] = [...byAgent.entries()].sort((a, b) => b[1] - a[1])[0]!;
  const [agentClass, agentName] = JSON.parse(hot) as [string, string];
  const mine = events.filter((e) => e.source.agentClass === agentClass && e.source.agentName === agentName);
  const to = mine.at(-1)!.time;
  const from = to - 86_400_000 + 1;
  const day = await historyEvents(env.HISTORY!, { shards: 4 }, { agent: { agentClass, agentName }, from, to });
  report(`history read: one agent's last 24 h (HISTORY_SHARDS=4): ${day.events.length} events, ${day.scan.lists} lists, ${day.scan.objectsListed} listed, ${day.scan.objectsSkipped} skipped by metadata, ${day.scan.objectsFetched} fetched (${day.scan.bytes} bytes)${day.scan.complete ? "" : `, incomplete: ${day.scan.reason}`}`);
  const traced = mine.at(-1)!;
  const search = await historySearch(env.HISTORY!, { traceId: traced.corr.traceId, to: String(to) });
  report(`history read: traceId lookup over 24 h: ${search.events.length} events, ${search.scan.lists} lists, ${search.scan.objectsListed} listed, ${search.scan.objectsSkipped} skipped by Bloom filter, ${search.scan.objectsFetched} fetched${search.scan.complete ? "" : `, incomplete: ${search.scan.reason}`}`);
  expect(day.events.length).toBeGreaterThan(0);
  expect(search.events.length).toBeGreaterThan(0);
});
