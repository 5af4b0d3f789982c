import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { foldRows } from "../../src/store/merge";
import { partitionOf, type Store } from "../../src/store/partitions";
import { type PaceResult, paceRetention } from "../../src/store/retention-pace";
import * as schema from "../../src/store/schema";
import { names } from "../../src/store/sql-names";
import { ledgerBucket } from "./ledger";
import { type ProjectionName, SPECS } from "./projections";
import { type BatchRows, toRows } from "./rows";

const G = names(schema.eventSegments);
const R = names(schema.eventRollups);
const RS = names(schema.respentRollups);
const D = names(schema.deadLetters);
const L = names(schema.eventLedger);

const distinct = (keys: Iterable<string>) => new Set(keys).size;

/**
 * How many rows a batch's rows may have added, per table: the keys it touched (a key already stored adds none, so
 * this is an upper bound). Timeline segments: one per agent and chunk (segments.ts: the rows the segment insert writes).
 */
export function addedByTable(rows: BatchRows): Record<string, number> {
  const out: Record<string, number> = {};
  out[G.$table] = distinct(rows.events.map((e) => `${e.agent_class}\u0000${e.agent_name}\u0000${e.ch}`));
  for (const name of Object.keys(SPECS) as ProjectionName[]) {
    const spec = SPECS[name];
    out[spec.table] = (out[spec.table] ?? 0) + foldRows(spec, rows.projections[name]).length;
  }
  // The ledger: one row per slot the batch's events fall in (ledger.ts).
  out[L.$table] = distinct(rows.events.map((e) => String(ledgerBucket(e.t))));
  out[R.$table] = distinct(rows.rollups.map((r) => `${r.bucket}\u0000${r.type}\u0000${r.dim}`));
  out[RS.$table] = distinct(rows.rollups.filter((r) => Number(r.amount) > 0).map((r) => `${r.bucket}\u0000${r.agent_class}\u0000${r.agent_name}`));
  return out;
}

/**
 * After a batch is stored: one slice of paced retention (src/store/retention-pace.ts) on every partition the batch
 * wrote to, each deleting up to `pace` x what the batch added there, all partitions at once. Dead letters live in
 * the home database (partition 0). A failure is logged, never thrown: the batch is stored, and the cron is the
 * backstop.
 */
export async function paceAfterBatch(
  store: Store,
  events: readonly TelemetryEvent[],
  deadLettered: number,
  opts: { pace: number; maxAgeDays: number; hotWindowHours: number; now: number },
): Promise<PaceResult[]> {
  if (opts.pace <= 0) return [];
  const n = store.parts.length;
  const groups: TelemetryEvent[][] = Array.from({ length: n }, () => []);
  for (const e of events) groups[partitionOf(e.source.agentClass, e.source.agentName, n)]!.push(e);
  const slices = groups.map(async (g, i) => {
    if (!g.length && !(i === 0 && deadLettered)) return null;
    const added = addedByTable(toRows(g, opts.now));
    if (i === 0) added[D.$table] = deadLettered;
    const agents = [...new Map(g.map((e) => [`${e.source.agentClass}\u0000${e.source.agentName}`, e.source])).values()];
    try {
      return await paceRetention(store.parts[i]!, { ...opts, added, agents });
    } catch (e) {
      console.error(`[retention] paced slice${n > 1 ? ` on partition ${i}` : ""} failed: ${e instanceof Error ? e.message : String(e)}`);
      return null;
    }
  });
  return (await Promise.all(slices)).filter((r): r is PaceResult => r !== null);
}
