import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { expect } from "vitest";
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
