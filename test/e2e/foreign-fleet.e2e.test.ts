/**
 * The truth, end to end: a foreign Worker (test/fixtures/foreign-fleet, the truth matrix's fixture agents as a
 * customer deploys them) runs Tasks, managed fibers and plain runFibers next to the console in one real
 * `wrangler dev`. The stack is SIGKILLed twice mid-work (events still in the local in-memory Queue are lost,
 * work in flight is interrupted), restarted on the same persist dir, and left quiet until reconciliation may
 * judge. Then the console's totals per kind and outcome must equal what the SDK itself reports.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CHAT_TURN_STATUS, FIBER_STATUS, mapSdkState, TASK_STATE } from "@agent-oncall/telemetry/contract";
import { afterAll, expect, it } from "vitest";
import { type DevServer, startDev, stop, until } from "./wrangler-dev";

const PORT = 8856;
const APP = "test/fixtures/foreign-fleet/wrangler.jsonc";
const servers: DevServer[] = [];
afterAll(async () => {
  for (const s of servers) await stop(s, "SIGKILL");
});

type Agent = { agent: "TruthFiberAgent" | "TruthTaskAgent" | "ThinkChatFixture"; name: string };
const TASKS: Agent[] = [0, 1, 2].map((i) => ({ agent: "TruthTaskAgent", name: `foreign-tasks-${i}` }));
const FIBERS: Agent[] = [0, 1, 2].map((i) => ({ agent: "TruthFiberAgent", name: `foreign-fibers-${i}` }));
const CHATS: Agent[] = [0, 1].map((i) => ({ agent: "ThinkChatFixture", name: `foreign-chat-${i}` }));
const TASK_WORK = ["task:complete", "task:fail", "task:nap", "task:hang"];
const FIBER_WORK = ["managed:complete", "managed:fail", "managed:hang", "fiber:complete", "fiber:hang"];

async function work(s: DevServer, a: Agent, w: string): Promise<void> {
  const q = new URLSearchParams({ agent: a.agent, name: a.name, work: w });
  const r = await fetch(`${s.appBase}/work?${q}`, { method: "POST", signal: AbortSignal.timeout(30_000) });
  expect(r.status, `${w} on ${a.name}: ${await r.clone().text()}`).toBe(200);
}

type Truth = {
  submissions?: { submissionId: string; status: string }[];
  tasks?: { runId: string; state: string }[];
  fibers?: { fiberId: string; status: string }[];
  runFibers?: { id: string; outcome: string | null; row: boolean }[];
};

/** What the SDK records for one agent, as "kind/status" → count, translated by the one mapping. */
async function sdkTotals(s: DevServer, a: Agent, totals: Map<string, number>): Promise<void> {
  const r = await fetch(`${s.appBase}/truth?${new URLSearchParams({ agent: a.agent, name: a.name })}`, { signal: AbortSignal.timeout(30_000) });
  const t = (await r.json()) as Truth;
  const add = (k: string) => totals.set(k, (totals.get(k) ?? 0) + 1);
  for (const x of t.submissions ?? []) {
    const m = mapSdkState(CHAT_TURN_STATUS, x.status);
    add(`chat_turn/${m ? (m.outcome ?? "running") : `unmapped:${x.status}`}`);
  }
  for (const x of t.tasks ?? []) {
    const m = mapSdkState(TASK_STATE, x.state);
    add(`task/${m ? (m.outcome ?? "running") : `unmapped:${x.state}`}`);
  }
  for (const x of t.fibers ?? []) {
    const m = mapSdkState(FIBER_STATUS, x.status);
    add(`managed_fiber/${m ? (m.outcome ?? "running") : `unmapped:${x.status}`}`);
  }
  // A plain runFiber has no SDK record once it ends (its cf_agents_runs row is deleted): only its count is the SDK's.
  // How each ended is checked apart (plainFiberContradictions), against what the agent's own callback recorded.
  for (const x of t.runFibers ?? []) add(x.row ? "fiber/running" : "fiber/ended");
}

/**
 * Plain runFibers whose console status contradicts what the agent's own callback and recovery hook recorded.
 * "ended_unreported" is no contradiction: the SDK keeps no record of an ended runFiber, so when its end event
 * was lost, "ended, not reported" is all anyone but the agent's own code can know.
 */
async function plainFiberContradictions(s: DevServer, a: Agent): Promise<string[]> {
  const t = (await (await fetch(`${s.appBase}/truth?${new URLSearchParams({ agent: a.agent, name: a.name })}`)).json()) as Truth;
  const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, kind: "fiber", limit: "200" });
  const shown = new Map(
    (
      (await (await fetch(`${s.base}/runs?${q}`, { headers: { Accept: "application/json" } })).json()) as { items: { runId: string; status: string }[] }
    ).items.map((r) => [r.runId, r.status]),
  );
  const out: string[] = [];
  for (const x of t.runFibers ?? []) {
    const c = shown.get(x.id);
    const ok = x.row ? c === "running" || c === "interrupted" : c === x.outcome || c === "ended_unreported";
    if (!ok) out.push(`${a.name} ${x.id}: agent recorded ${x.row ? "a live row" : x.outcome}, console shows ${c ?? "nothing"}`);
  }
  return out;
}

/** What the console shows for one agent: its run list (JSON), as "kind/status" → count. */
async function consoleTotals(s: DevServer, a: Agent, totals: Map<string, number>): Promise<void> {
  const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, limit: "200" });
  const r = await fetch(`${s.base}/runs?${q}`, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(30_000) });
  const page = (await r.json()) as { items: { kind: string; status: string }[] };
  for (const run of page.items) {
    const k = run.kind === "fiber" ? (run.status === "running" || run.status === "interrupted" ? "fiber/running" : "fiber/ended") : `${run.kind}/${run.status}`;
    totals.set(k, (totals.get(k) ?? 0) + 1);
  }
}

const table = (sdk: Map<string, number>, shown: Map<string, number>) =>
  [...new Set([...sdk.keys(), ...shown.keys()])]
    .sort()
    .map(
      (k) =>
        `${k.padEnd(32)} SDK ${String(sdk.get(k) ?? 0).padStart(3)}   console ${String(shown.get(k) ?? 0).padStart(3)}${(sdk.get(k) ?? 0) === (shown.get(k) ?? 0) ? "" : "   ✗"}`,
    )
    .join("\n");

it("after two SIGKILLs mid-work and a quiet spell, the console's totals per kind and outcome equal the SDK's", { timeout: 420_000 }, async () => {
  const persistDir = mkdtempSync(path.join(tmpdir(), "foreign-fleet-"));
  // Reconciliation may judge work quiet for a minute (the cron's age, RECONCILE_AFTER_MINUTES, at its smallest).
  const vars = { RECONCILE_AFTER_MINUTES: "1", RECONCILE_BATCH: "100" };
  let server = await startDev({ port: PORT, persistDir, app: APP, vars });
  servers.push(server);

  // Round 1: every kind of work, some finishing, some waiting, some hanging; then the whole process tree dies.
  for (const a of TASKS) for (const w of TASK_WORK) await work(server, a, w);
  for (const a of FIBERS) for (const w of FIBER_WORK) await work(server, a, w);
  for (const a of CHATS) await work(server, a, "chat:stall");
  await until("the console to know every agent", async () => {
    const r = await fetch(`${server.base}/api/agents?limit=50`, { headers: { Accept: "application/json" } });
    const names = ((await r.json()) as { items: { agentName: string }[] }).items.map((x) => x.agentName);
    return [...TASKS, ...FIBERS, ...CHATS].every((a) => names.includes(a.name));
  });
  // The stalled turns must have reached the console before the kill. Reconciliation asks agents with open work or
  // a visible gap in their numbers; a turn none of whose events ever arrived, on an agent that emits nothing after
  // (round 2's events are lost too), is out of its reach. Production Queues keep a message once send() resolves.
  await until("the console to know each stalled chat turn", async () => {
    for (const a of CHATS) {
      const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, kind: "chat_turn", limit: "10" });
      const r = await fetch(`${server.base}/runs?${q}`, { headers: { Accept: "application/json" } });
      if (((await r.json()) as { items: unknown[] }).items.length === 0) return false;
    }
    return true;
  });
  await stop(server, "SIGKILL");

  // Round 2: restart, wake everyone (the SDK recovers and replays on wake), start more work, and kill again at once:
  // what was still in the local Queue is lost.
  server = await startDev({ port: PORT, persistDir, app: APP, vars });
  servers.push(server);
  for (const a of [...TASKS, ...FIBERS, ...CHATS]) await sdkTotals(server, a, new Map());
  for (const a of TASKS) await work(server, a, "task:complete");
  for (const a of FIBERS) await work(server, a, "managed:complete");
  await stop(server, "SIGKILL");

  // Round 3: restart, wake everyone, and let it be quiet past the reconcile age; then the cron's pass runs.
  server = await startDev({ port: PORT, persistDir, app: APP, vars });
  servers.push(server);
  for (const a of [...TASKS, ...FIBERS, ...CHATS]) await sdkTotals(server, a, new Map());
  await new Promise((r) => setTimeout(r, 65_000));
  const pass = await fetch(`${server.base}/api/reconcile`, {
    method: "POST",
    headers: { Accept: "application/json", Origin: server.base, "X-CSRF-Token": await csrf(server) },
  });
  expect(pass.status).toBe(200);

  // Everything reconciliation recorded arrives through the Queue: compare once the console stops changing.
  let last = "";
  const result = await until(
    "the console's totals to settle",
    async () => {
      const sdk = new Map<string, number>();
      const shown = new Map<string, number>();
      for (const a of [...TASKS, ...FIBERS, ...CHATS]) {
        await sdkTotals(server, a, sdk);
        await consoleTotals(server, a, shown);
      }
      const t = table(sdk, shown);
      const done = t === last ? { sdk, shown, t } : null;
      last = t;
      await new Promise((r) => setTimeout(r, 2_000));
      return done;
    },
    60_000,
  );
  console.log(`[foreign-fleet] totals per kind/status after the SIGKILLs and reconciliation:\n${result.t}`);
  expect(Object.fromEntries(result.shown), result.t).toEqual(Object.fromEntries(result.sdk));
  const contradictions = (await Promise.all(FIBERS.map((a) => plainFiberContradictions(server, a)))).flat();
  expect(contradictions).toEqual([]);
});

async function csrf(s: DevServer): Promise<string> {
  const r = await fetch(`${s.base}/api/csrf`, { headers: { Accept: "application/json" } });
  return ((await r.json()) as { token: string }).token;
}
