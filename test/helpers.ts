import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { expect } from "vitest";
import { historyEvents } from "../src/store/history/read";
import { carriesRunId } from "../src/store/history/run";
import { foldRunRows, foldRuns } from "../src/store/history/run-fold";
import { getStoredRun, type RunWithSnapshot } from "../src/store/read-models";
import { consoleConfig } from "../worker/config";
import { patient } from "./patience";

/** A fresh probe agent stub with a unique name per call site. */
export async function probe(name = `probe-${crypto.randomUUID().slice(0, 8)}`) {
  return { name, stub: await getAgentByName(env.ProbeAgent, name) };
}

/** The `n` of a one-row D1 query on the home database (`SELECT COUNT(*) AS n …`). */
export const count = async (sql: string, ...binds: unknown[]) =>
  Number(
    (await env.DB.prepare(sql)
      .bind(...binds)
      .first<{ n: number }>())!.n,
  );

/**
 * Polls a D1 query until `check` passes (queues deliver asynchronously); on timeout, shows the last rows and any dead
 * letters. `timeout` is what a quiet machine needs at most: the wait allows test/patience.ts's factor on top, for a
 * loaded one, and returns as soon as the rows are there.
 */
export async function pollRows<T>(sql: string, binds: unknown[], check: (rows: T[]) => boolean, timeout = 10_000): Promise<T[]> {
  let last: T[] = [];
  const deadline = Date.now() + patient(timeout);
  for (;;) {
    last = (
      await env.DB.prepare(sql)
        .bind(...binds)
        .all<T>()
    ).results;
    if (check(last)) return last;
    if (Date.now() > deadline) break;
    await scheduler.wait(50);
  }
  const dead = (await env.DB.prepare("SELECT reason, event_type FROM dead_letters ORDER BY received_at DESC LIMIT 5").all()).results;
  expect.fail(
    `condition not met within ${patient(timeout)} ms.\nlast rows: ${JSON.stringify(last).slice(0, 3000)}\nrecent dead letters: ${JSON.stringify(dead)}`,
  );
}

/** All stored events of one agent instance, oldest first. */
export async function eventsOf(agentName: string) {
  return (
    await env.DB.prepare("SELECT * FROM events WHERE agent_name = ? ORDER BY time, id").bind(agentName).all<{
      id: string;
      type: string;
      payload: string;
      fiber_id: string | null;
      incident_id: string | null;
      trace_id: string | null;
    }>()
  ).results;
}

/**
 * Awaits a promise that must reject and returns its error. Used instead of
 * `expect(p).rejects` because Workers RPC promises are custom thenables that
 * vitest would also report as unhandled.
 */
export async function rejectionOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/**
 * The test env with some settings replaced and every other binding inherited. Defines the settings as own properties:
 * assigning them would write through the shared env (a proxy in the prototype chain) and leak into later test files.
 */
export function envWith<T extends object>(vars: Record<string, unknown>, base: T = env as T): T {
  return Object.create(base, Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { value, enumerable: true }]))) as T;
}

/**
 * An agent's runs rows as the console holds them (by agent name, every class it reported under): D1's, plus the runs
 * that completed healthily and so left D1, folded from the R2 history by ingest's own mapping (history/run-fold.ts),
 * as D1 would have held them. Rows are keyed by SQL column name, like `SELECT * FROM runs`.
 */
export async function runRowsOf(agentName: string): Promise<Record<string, unknown>[]> {
  const d1 = (await env.DB.prepare("SELECT * FROM runs WHERE agent_name = ?").bind(agentName).all<Record<string, unknown>>()).results;
  const classes = (await env.DB.prepare("SELECT agent_class FROM agents WHERE agent_name = ?").bind(agentName).all<{ agent_class: string }>()).results;
  const have = new Set(d1.map((r) => `${r.agent_class}\u0000${r.fiber_id}`));
  const out = [...d1];
  for (const { agent_class: agentClass } of classes) {
    const now = Date.now();
    const read = await historyEvents(
      env.HISTORY,
      { shards: consoleConfig(env).history.shards },
      { agent: { agentClass, agentName }, from: now - 8 * 86_400_000, to: now + 600_000, limits: { maxHours: 8 * 24 + 1 } },
    );
    for (const r of foldRunRows(read.events, { healthy: true })) if (!have.has(`${r.agent_class}\u0000${r.fiber_id}`)) out.push(r);
  }
  return out.sort((a, b) => String(a.fiber_id).localeCompare(String(b.fiber_id)));
}

/** Polls runRowsOf(agentName), filtered by `where`, until `check` passes (as pollRows does for a D1 query). */
export async function pollRunRows<T = Record<string, unknown>>(
  agentName: string,
  where: (row: T) => boolean,
  check: (rows: T[]) => boolean,
  timeout = 10_000,
): Promise<T[]> {
  let last: T[] = [];
  const deadline = Date.now() + patient(timeout);
  for (;;) {
    last = ((await runRowsOf(agentName)) as T[]).filter(where);
    if (check(last)) return last;
    if (Date.now() > deadline) break;
    await scheduler.wait(100);
  }
  expect.fail(`condition not met within ${patient(timeout)} ms.\nlast runs rows: ${JSON.stringify(last).slice(0, 3000)}`);
}

/**
 * One run as the console shows it (its run page): D1's row, or, for a run D1 does not hold (it completed healthily),
 * folded from the agent's R2 history by ingest's own mapping.
 */
export async function shownRun(id: string, owner: { agentClass: string; agentName: string }): Promise<RunWithSnapshot | null> {
  const stored = await getStoredRun(env.DB, id, owner);
  if (stored) return stored;
  const now = Date.now();
  const read = await historyEvents(
    env.HISTORY,
    { shards: consoleConfig(env).history.shards },
    { agent: owner, from: now - 8 * 86_400_000, to: now + 600_000, match: (e) => carriesRunId(e, id), limits: { maxHours: 8 * 24 + 1 } },
  );
  return foldRuns(read.events).find((r) => r.fiberId === id) ?? null;
}
