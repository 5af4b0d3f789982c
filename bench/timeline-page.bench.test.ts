import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { expect, it } from "vitest";
import { app } from "../worker/app";
import { ingestBatch } from "../worker/ingest/consumer";
import { writeHistory } from "../worker/ingest/history";
import { fleetEvents } from "./console-fleet";
import { median, type RatioStats, ratioStats, ratioText, report, rounds } from "./report";

/**
 * Timeline pages read from the R2 history: a run's, a session's and an incident's page rendered by the console's app
 * against the bare reads of that page (the D1 statements and the R2 list and get calls it made, replayed with the
 * same concurrency; a get includes reading and gunzipping its body, which the reader cannot skip). Beside it, the
 * same pages with no bucket bound, which read their timelines from D1's segments alone (the console before R2
 * became the timelines' source).
 */

const ORIGIN = "http://console.localhost";
const EVENTS = 30_000;
const BATCH = 100;
/** Live traffic: 1,000 agents at a tenth of the demo's measured rate, as history.bench.test.ts replays it. */
const RATE_PER_S = 243;
const ROUNDS = 15;
/** Requests per side per sample: workerd's clock ticks in whole milliseconds. */
const REPS = 10;
const RATIO_TARGET = 2;

/** One read a page made; `phase` = reads finished before it was issued (reads of one phase ran concurrently). */
type Read = { phase: number } & (
  | { kind: "d1"; batch: boolean; stmts: { sql: string; args: unknown[] }[]; rowsRead: number }
  | { kind: "list"; opts: R2ListOptions }
  | { kind: "get"; key: string }
);

/** Records every read a page makes on D1 and R2, running each on the real binding. */
function recorder() {
  const reads: Read[] = [];
  let finished = 0;
  const track = async <T>(r: Read, run: () => Promise<T>): Promise<T> => {
    reads.push(r);
    const out = await run();
    finished++;
    return out;
  };
  type Rec = D1PreparedStatement & { real: D1PreparedStatement; sql: string; args: unknown[] };
  const stmt = (sql: string, args: unknown[], real: D1PreparedStatement): Rec => {
    const all = () => {
      const r: Read = { phase: finished, kind: "d1", batch: false, stmts: [{ sql, args }], rowsRead: 0 };
      return track(r, async () => {
        const res = await real.all();
        r.rowsRead = Number(res.meta.rows_read ?? 0);
        return res;
      });
    };
    return {
      real,
      sql,
      args,
      bind: (...a: unknown[]) => stmt(sql, a, real.bind(...a)),
      all,
      run: all,
      first: (async (col?: string) => {
        const row = (await all()).results[0] as Record<string, unknown> | undefined;
        return row === undefined ? null : col ? (row[col] ?? null) : row;
      }) as D1PreparedStatement["first"],
    } as unknown as Rec;
  };
  const db = {
    prepare: (sql: string) => stmt(sql, [], env.DB.prepare(sql)),
    batch: (ss: D1PreparedStatement[]) => {
      const recs = ss as Rec[];
      const r: Read = { phase: finished, kind: "d1", batch: true, stmts: recs.map((s) => ({ sql: s.sql, args: s.args })), rowsRead: 0 };
      return track(r, async () => {
        const res = await env.DB.batch(recs.map((s) => s.real));
        r.rowsRead = res.reduce((n, x) => n + Number(x.meta.rows_read ?? 0), 0);
        return res;
      });
    },
  } as unknown as D1Database;
  const bucket = env.HISTORY!;
  const history = {
    list: (opts: R2ListOptions) => track({ phase: finished, kind: "list", opts }, () => bucket.list(opts)),
    get: (key: string) => track({ phase: finished, kind: "get", key }, () => bucket.get(key)),
  } as unknown as R2Bucket;
  return { db, history, reads };
}

/** The bare reads of a page: its recorded reads, those of one phase concurrently, phases in order. */
function bareReads(reads: Read[]): () => Promise<void> {
  const phases = [...new Set(reads.map((r) => r.phase))].sort((a, b) => a - b).map((p) => reads.filter((r) => r.phase === p));
  const prep = (s: { sql: string; args: unknown[] }) => env.DB.prepare(s.sql).bind(...s.args);
  const one = async (r: Read): Promise<unknown> => {
    if (r.kind === "d1") return r.batch ? env.DB.batch(r.stmts.map(prep)) : prep(r.stmts[0]!).all();
    if (r.kind === "list") return env.HISTORY!.list(r.opts);
    const obj = await env.HISTORY!.get(r.key);
    return obj ? new Response(obj.body.pipeThrough(new DecompressionStream("gzip"))).text() : null;
  };
  return async () => {
    for (const group of phases) await Promise.all(group.map(one));
  };
}

/** The entity in `events` whose id field has the most events, with its agent. */
function busiest(events: TelemetryEvent[], id: (e: TelemetryEvent) => string | undefined) {
  const n = new Map<string, { n: number; e: TelemetryEvent }>();
  for (const e of events) {
    const k = id(e);
    if (!k) continue;
    const key = JSON.stringify([e.source.agentClass, e.source.agentName, k]);
    n.set(key, { n: (n.get(key)?.n ?? 0) + 1, e });
  }
  const [key, v] = [...n.entries()].sort((a, b) => b[1].n - a[1].n)[0]!;
  const [agentClass, agentName, value] = JSON.parse(key) as [string, string, string];
  return { agentClass, agentName, value, events: v.n };
}

it("timeline pages from R2: render vs bare reads (D1 and R2), and the D1-only timelines beside them", async () => {
  // The fleet's events replayed as live traffic over the last minutes, ingested as the consumer does: D1, then R2.
  const start = Date.now() - Math.ceil(EVENTS / RATE_PER_S) * 1000 - 60_000;
  const events = fleetEvents(EVENTS).map((e, i) => ({ ...e, time: start + Math.floor((i * 1000) / RATE_PER_S) }));
  let objects = 0;
  for (let i = 0; i < events.length; i += BATCH) {
    const batch = events.slice(i, i + BATCH);
    const now = batch.at(-1)!.time + 1_500;
    await ingestBatch(
      env.DB,
      batch.map((body, j) => ({ id: `tl-${i + j}`, body })),
      { now },
    );
    objects += (await writeHistory(env.HISTORY!, batch, { shards: 4, receivedAt: now })).objects;
  }
  const run = busiest(events, (e) => e.corr.fiberId);
  const session = busiest(events, (e) => e.corr.sessionName);
  const incident = busiest(events, (e) => e.corr.incidentId);
  const owner = (x: { agentClass: string; agentName: string }) => `agentClass=${encodeURIComponent(x.agentClass)}&agentName=${encodeURIComponent(x.agentName)}`;
  const pages = [
    { name: "run page", path: `/runs/${encodeURIComponent(run.value)}?${owner(run)}`, events: run.events },
    { name: "session page", path: `/sessions/${encodeURIComponent(session.value)}?${owner(session)}`, events: session.events },
    { name: "incident page", path: `/incidents/${encodeURIComponent(incident.value)}?${owner(incident)}`, events: incident.events },
  ];
  report(`timeline pages: ${EVENTS} fleet events at ${RATE_PER_S}/s in batches of ${BATCH}, ${objects} R2 objects (HISTORY_SHARDS=4)`);
  const results: { name: string; variant: string; ratio: RatioStats; pageMs: number; readsMs: number }[] = [];
  for (const p of pages) {
    for (const variant of ["R2", "D1 only"] as const) {
      const rec = recorder();
      const envOf = (history: R2Bucket | undefined, db: D1Database) => ({ ...env, DB: db, HISTORY: variant === "R2" ? history : undefined });
      const captured = await app.fetch(new Request(`${ORIGIN}${p.path}`), envOf(rec.history, rec.db), createExecutionContext());
      const html = await captured.text();
      expect(captured.status, `${p.path}: ${html.slice(0, 200)}`).toBe(200);
      const page = async () => {
        for (let i = 0; i < REPS; i++) await (await app.fetch(new Request(`${ORIGIN}${p.path}`), envOf(env.HISTORY, env.DB), createExecutionContext())).text();
      };
      const bare = bareReads(rec.reads);
      const reads = async () => {
        for (let i = 0; i < REPS; i++) await bare();
      };
      for (let i = 0; i < 3; i++) {
        await page();
        await reads();
      }
      const t = await rounds(ROUNDS, { reads, readsTwin: reads, page });
      const ratio = ratioStats(t.page, t.reads);
      const aa = ratioStats(t.readsTwin, t.reads);
      const count = (k: Read["kind"]) => rec.reads.filter((r) => r.kind === k).length;
      const rows = rec.reads.reduce((n, r) => n + (r.kind === "d1" ? r.rowsRead : 0), 0);
      results.push({ name: p.name, variant, ratio, pageMs: median(t.page) / REPS, readsMs: median(t.reads) / REPS });
      report(
        `timeline ${p.name} (${p.events} events of its entity), timeline from ${variant}: ${rows} D1 rows read in ${count("d1")} round trips, ${count("list")} R2 lists, ${count("get")} R2 gets; ` +
          `app ${(median(t.page) / REPS).toFixed(2)} ms vs bare reads ${(median(t.reads) / REPS).toFixed(2)} ms: page/reads ${ratioText(ratio)}; A/A ${ratioText(aa)}` +
          (variant === "R2" ? `; target <= ${RATIO_TARGET}x by the median: ${ratio.median <= RATIO_TARGET ? "met" : "MISSED"}` : ""),
      );
    }
  }
  expect(results).toHaveLength(pages.length * 2);
}, 600_000);
