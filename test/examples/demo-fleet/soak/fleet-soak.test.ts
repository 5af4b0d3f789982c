import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { runDemoTick } from "../../../../examples/demo-fleet/src/demo/driver";
import { openNowSql, shownStatusSql } from "../../../../src/store/read-models";
import { consoleAdminClient } from "../../../../worker/admin-client";
import { liveWork } from "../../../../worker/reconcile/agent";
import { reconcileStale } from "../../../../worker/reconcile/pass";
import { SeededRandom } from "../../../fixtures/seeded-random";
import { patient } from "../../../patience";

// A short soak of the demo fleet, driven as `npm start` drives it (session agents with planned evictions,
// poison turns and ambiguous charges; Think chat agents evicted mid-stream, stalling and compacting; fiber
// jobs failing and evicted), then one reconciliation pass. At the end the console must match the agents:
// every run it shows running is live in its agent, every session it shows running is in a running agent,
// and no incident is open without an event or a confirmation by its agent within the reconcile age.

const SEED = 20261123;
const TICKS = 24;
/** The reconcile age of this soak (production default: 10 minutes). */
const AGE_MS = 3_000;
const viewer = { email: "soak@example.com", role: "viewer" as const };

type Row = Record<string, unknown>;
const rows = async <T = Row>(sql: string, ...binds: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...binds)
      .all<T>()
  ).results;

/** Waits until the stored event count stops changing for `quietMs`: what was sent has been ingested. */
async function drained(quietMs = 1_500, timeoutMs = patient(30_000)) {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const [{ n }] = (await rows<{ n: number }>("SELECT COUNT(*) AS n FROM events")) as [{ n: number }];
    if (n !== last) [last, since] = [n, Date.now()];
    else if (Date.now() - since >= quietMs) return n;
    await scheduler.wait(200);
  }
  return last;
}

it(`the demo fleet for ${TICKS} ticks (seed ${SEED}): afterwards every running row is live in its agent and no incident is open without activity`, {
  timeout: patient(240_000),
}, async () => {
  const random = new SeededRandom(SEED);
  const log: string[] = [];
  for (let t = 0; t < TICKS; t++) log.push(...(await runDemoTick(env as never, { fleetSize: 4 }, () => random.next())));

  // Wake every agent until none has work in memory (waking is also what lets the SDK recover an evicted one).
  const agents = await rows<{ agent_class: string; agent_name: string }>("SELECT agent_class, agent_name FROM agents");
  const admin = consoleAdminClient(env, viewer);
  const settleBy = Date.now() + patient(60_000);
  for (;;) {
    const busy: string[] = [];
    for (const a of agents) {
      const live = await admin.live({ agentClass: a.agent_class, agentName: a.agent_name });
      if (!live.ok || live.value.status.status === "running" || live.value.runs.tasks.length > 0) busy.push(`${a.agent_class}/${a.agent_name}`);
    }
    if (busy.length === 0 || Date.now() > settleBy) break;
    await scheduler.wait(500);
  }
  await drained();

  // Everything is now older than the reconcile age: one pass, as the cron runs it.
  await scheduler.wait(AGE_MS);
  const pass = await reconcileStale(env, { afterMs: AGE_MS, batch: 100, unknownAfterMs: 60 * 60_000 });
  await drained();
  const now = Date.now();

  // 1. Every run the console shows running is live in its agent.
  const running = await rows<{ fiber_id: string; kind: string; agent_class: string; agent_name: string }>(
    "SELECT fiber_id, kind, agent_class, agent_name FROM runs WHERE outcome IS NULL",
  );
  const notLive: string[] = [];
  for (const r of running) {
    const live = await admin.live({ agentClass: r.agent_class, agentName: r.agent_name });
    const work = live.ok ? liveWork(live.value.status, live.value.runs) : null;
    const alive = work?.liveRunIds.has(r.fiber_id);
    if (!alive) notLive.push(`${r.kind} ${r.fiber_id} of ${r.agent_class}/${r.agent_name}`);
  }
  expect(notLive, "runs the console shows running that their agent does not have").toEqual([]);

  // 2. Every session shown running belongs to an agent that says it is running.
  const sessions = await rows<{ session_name: string; agent_class: string; agent_name: string }>(
    "SELECT session_name, agent_class, agent_name FROM sessions WHERE status IN ('running', 'rescheduled')",
  );
  const idleButRunning: string[] = [];
  for (const s of sessions) {
    const live = await admin.live({ agentClass: s.agent_class, agentName: s.agent_name });
    if (!live.ok || live.value.status.status !== "running") idleButRunning.push(`${s.agent_class}/${s.agent_name} ${s.session_name}`);
  }
  expect(idleButRunning, "sessions shown running whose agent is not").toEqual([]);

  // 3. No incident open without activity: an event within the age, or its agent confirmed it is still recovering.
  const open = await rows<{ incident_id: string; last_seen: number; confirmed_at: number | null }>(
    // Open now: the SDK's word open, and no newer force idle or reconciliation closed it.
    `SELECT incident_id, last_seen, confirmed_at FROM incidents WHERE ${openNowSql()}`,
  );
  const stale = open.filter((i) => now - i.last_seen > AGE_MS && !(i.confirmed_at !== null && i.confirmed_at >= i.last_seen));
  expect(
    stale.map((i) => i.incident_id),
    "incidents open without an event or a confirmation",
  ).toEqual([]);

  // What the soak went through, for the record (and proof that it exercised what on-call cares about).
  const byStatus = await rows<{ status: string; n: number }>(`SELECT ${shownStatusSql()} AS status, COUNT(*) AS n FROM incidents GROUP BY 1 ORDER BY 1`);
  const byKind = await rows<{ kind: string; outcome: string | null; n: number }>(
    "SELECT kind, outcome, COUNT(*) AS n FROM runs GROUP BY kind, outcome ORDER BY kind, outcome",
  );
  const [{ n: events }] = (await rows<{ n: number }>("SELECT COUNT(*) AS n FROM events")) as [{ n: number }];
  const findings = pass.flatMap((p) => p.findings.map((f) => `${f.type}:${f.finding}`));
  console.log(
    [
      `soak: ${TICKS} ticks, ${agents.length} agents, ${events} events; ${log.filter((l) => /evict/.test(l)).length} planned evictions`,
      `runs: ${byKind.map((r) => `${r.kind}/${r.outcome ?? "running"} ${r.n}`).join(", ")}`,
      `incidents: ${byStatus.map((r) => `${r.status} ${r.n}`).join(", ")}`,
      `reconciliation: asked ${pass.length} agents, ${findings.length} findings (${[...new Set(findings)].join(", ") || "none"}), ${pass.filter((p) => p.error).length} could not answer`,
      `at the end: ${running.length} running runs, all live; ${sessions.length} running sessions; ${open.length} open incidents, none stale`,
    ].join("\n"),
  );
  expect(events).toBeGreaterThan(100);
  expect(byStatus.reduce((n, r) => n + r.n, 0)).toBeGreaterThan(0);
  expect(byKind.map((r) => r.kind)).toEqual(expect.arrayContaining(["fiber", "chat_turn"]));
});
