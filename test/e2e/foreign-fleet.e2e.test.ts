/**
 * The truth, end to end: a foreign Worker (test/fixtures/foreign-fleet, the truth matrix's fixture agents as a
 * customer deploys them) runs Tasks, managed fibers and plain runFibers next to the console in one real
 * `wrangler dev`, in three forms built from one definition: with both packages (the telemetry outbox), with the
 * admin package only, and with no package at all (both seen through the Worker's tail). The stack is SIGKILLed
 * twice mid-work (events still in the local in-memory Queue are lost, work in flight is interrupted), restarted
 * on the same persist dir, and left quiet until reconciliation may judge. Then, against what the SDK itself
 * reports: the two forms the console can ask must equal it in totals per kind and outcome; the form with no
 * package must show nothing false, and show a run whose end it cannot know as unknown, counted where a person sees it.
 *
 * Run twice, once per tail line the Worker may name the console in: `tail_consumers` (the fixture's own line) and
 * `streaming_tail_consumers` (the same Worker with that line instead), each on its own persist dir.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CHAT_TURN_STATUS, FIBER_STATUS, mapSdkState, TASK_STATE } from "@agent-oncall/telemetry/contract";
import { afterEach, expect, it } from "vitest";
import { readAbsolute, repoRoot, writeGeneratedConfig } from "../../scripts/wrangler-config.ts";
import { patient } from "../patience";
import { type DevServer, startDev, stop, until } from "./wrangler-dev";

const PORT = 8856;
const FIXTURE = "test/fixtures/foreign-fleet/wrangler.jsonc";
const { tail_consumers: line, ...streamed } = readAbsolute(path.join(repoRoot, FIXTURE));
/**
 * The Worker as each tail line carries it: the fixture as written (`tail_consumers`), and the same Worker naming the
 * console in `streaming_tail_consumers` instead (its classes, name and routes unchanged, so the console binds it alike).
 */
const CAPTURES = [
  { capture: "tail_consumers", app: FIXTURE },
  { capture: "streaming_tail_consumers", app: writeGeneratedConfig("foreign-fleet.streaming.jsonc", { ...streamed, streaming_tail_consumers: line }) },
];
const servers: DevServer[] = [];
// Each run's last stack is stopped before the next one starts on the same port.
afterEach(async () => {
  for (const s of servers.splice(0)) await stop(s, "SIGKILL");
});

type Agent = { agent: string; name: string };
const TASKS: Agent[] = [0, 1, 2].map((i) => ({ agent: "TruthTaskAgent", name: `foreign-tasks-${i}` }));
const FIBERS: Agent[] = [0, 1, 2].map((i) => ({ agent: "TruthFiberAgent", name: `foreign-fibers-${i}` }));
const CHATS: Agent[] = [0, 1].map((i) => ({ agent: "ThinkChatFixture", name: `foreign-chat-${i}` }));
// The same agents with the admin package only, and with no package: the same work, two agents of each.
const ADMIN_TASKS: Agent[] = [0, 1].map((i) => ({ agent: "AdminTruthTaskAgent", name: `admin-tasks-${i}` }));
const ADMIN_FIBERS: Agent[] = [0, 1].map((i) => ({ agent: "AdminTruthFiberAgent", name: `admin-fibers-${i}` }));
const BARE_TASKS: Agent[] = [0, 1].map((i) => ({ agent: "BareTruthTaskAgent", name: `bare-tasks-${i}` }));
const BARE_FIBERS: Agent[] = [0, 1].map((i) => ({ agent: "BareTruthFiberAgent", name: `bare-fibers-${i}` }));
const ALL_TASKS = [...TASKS, ...ADMIN_TASKS, ...BARE_TASKS];
const ALL_FIBERS = [...FIBERS, ...ADMIN_FIBERS, ...BARE_FIBERS];
const EVERYONE = [...ALL_TASKS, ...ALL_FIBERS, ...CHATS];
/** The forms the console can ask (reconciliation), each compared in totals with the SDK. */
const ASKABLE = { "both packages": [...TASKS, ...FIBERS, ...CHATS], "admin package only": [...ADMIN_TASKS, ...ADMIN_FIBERS] };
const BARE = [...BARE_TASKS, ...BARE_FIBERS];
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
 * was lost, "ended, not reported" is all anyone but the agent's own code can know. Nor is "unknown" where the
 * agent's recovery hook ran: the SDK's events (all the tail carries) do not say what the hook did (docs/capture.md).
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
    const ok = x.row ? c === "running" || c === "interrupted" : c === x.outcome || c === "ended_unreported" || (c === "unknown" && x.outcome === "recovered");
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

/** Run statuses that say the console does not know how a run ended: a possible loss, never a claim. */
const NOT_KNOWN = new Set(["unknown", "ended_unreported"]);
/** Statuses of a run still open in the console. */
const OPEN = new Set(["running", "recovering", "interrupted"]);

type BareJudgement = { falsehoods: string[]; notKnown: string[]; notKnownIncidents: string[]; unseen: string[]; shown: number };

/**
 * Judges one agent without any package against the SDK's records, run by run: what the console shows of a run is
 * the SDK's outcome (the agent's own record for a plain runFiber), or says it does not know; a run is shown open
 * only while the SDK still runs it; and every run shown is one the SDK records. A run the console never heard of
 * is not a falsehood (listed apart, as `unseen`).
 */
async function judgeBare(s: DevServer, a: Agent): Promise<BareJudgement> {
  const t = (await (await fetch(`${s.appBase}/truth?${new URLSearchParams({ agent: a.agent, name: a.name })}`)).json()) as Truth;
  const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, limit: "200" });
  const page = (await (await fetch(`${s.base}/runs?${q}`, { headers: { Accept: "application/json" } })).json()) as {
    items: { runId: string; kind: string; status: string }[];
  };
  const shown = new Map(page.items.map((r) => [r.runId, r]));
  // What each run is, by the SDK's records: "running" while it runs, else how it ended.
  const truth = new Map<string, { kind: string; is: string }>();
  const is = (state: ReturnType<typeof mapSdkState<string, { outcome: string | null }>>, word: string) =>
    state ? (state.outcome ?? "running") : `unmapped:${word}`;
  for (const x of t.tasks ?? []) truth.set(x.runId, { kind: "task", is: is(mapSdkState(TASK_STATE, x.state), x.state) });
  for (const x of t.fibers ?? []) truth.set(x.fiberId, { kind: "managed_fiber", is: is(mapSdkState(FIBER_STATUS, x.status), x.status) });
  for (const x of t.runFibers ?? []) truth.set(x.id, { kind: "fiber", is: x.row ? "running" : (x.outcome ?? "ended") });
  const out: BareJudgement = { falsehoods: [], notKnown: [], notKnownIncidents: [], unseen: [], shown: page.items.length };
  for (const [id, want] of truth) {
    const c = shown.get(id);
    if (!c) out.unseen.push(`${a.name} ${want.kind} ${id} (${want.is})`);
    else if (c.kind !== want.kind) out.falsehoods.push(`${a.name} ${id}: the SDK's ${want.kind} is shown as a ${c.kind}`);
    else if (NOT_KNOWN.has(c.status)) out.notKnown.push(`${a.agent}/${a.name} ${id}`);
    else if (c.status === want.is || (want.is === "running" && OPEN.has(c.status))) continue;
    else out.falsehoods.push(`${a.name} ${want.kind} ${id}: the SDK says ${want.is}, the console shows ${c.status}`);
  }
  for (const r of page.items) if (!truth.has(r.runId)) out.falsehoods.push(`${a.name} ${r.kind} ${r.runId}: shown ${r.status}, the SDK records no such run`);
  // Its incidents: a fiber's recovery, shown as the SDK's record of that fiber says it ended, or as not known.
  const incidents = (await (await fetch(`${s.base}/incidents?${q}`, { headers: { Accept: "application/json" } })).json()) as {
    items: { incidentId: string; status: string }[];
  };
  for (const i of incidents.items) {
    const fiberId = i.incidentId.startsWith(`fiber:${a.agent}/${a.name}/`) ? i.incidentId.slice(`fiber:${a.agent}/${a.name}/`.length) : null;
    const want = fiberId ? truth.get(fiberId) : undefined;
    if (!want) out.falsehoods.push(`${a.name} incident ${i.incidentId} (${i.status}): the SDK records no fiber it could be the recovery of`);
    else if (i.status === "ended_unreported") out.notKnownIncidents.push(`${a.agent}/${a.name} ${i.incidentId}`);
    else if (!(INCIDENT_OF[want.is] ?? []).includes(i.status))
      out.falsehoods.push(`${a.name} incident ${i.incidentId}: the SDK's ${want.kind} is ${want.is}, the incident shows ${i.status}`);
  }
  return out;
}

/**
 * What a fiber's recovery incident may show, by how the SDK's record says the fiber is (in the words above): open
 * while it runs or the SDK keeps it interrupted (awaiting resolveFiber), else how it ended. A plain runFiber's
 * "recovered" is the agent's own record that its recovery hook ran.
 */
const INCIDENT_OF: Record<string, string[]> = {
  running: ["open"],
  interrupted: ["open"],
  recovered: ["recovered"],
  completed: ["recovered"],
  failed: ["failed"],
  cancelled: ["skipped"],
};

/** How many runs of these agents the console's run list shows with each status that says it does not know (`/runs?outcome=…`). */
async function notKnownCounted(s: DevServer, agents: Agent[]): Promise<string[]> {
  const out: string[] = [];
  for (const a of agents)
    for (const outcome of NOT_KNOWN) {
      const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, outcome, limit: "200" });
      const page = (await (await fetch(`${s.base}/runs?${q}`, { headers: { Accept: "application/json" } })).json()) as { items: { runId: string }[] };
      for (const r of page.items) out.push(`${a.agent}/${a.name} ${r.runId}`);
    }
  return out.sort();
}

/** Every run the fleet's run list shows with a status that says the console does not know how it ended, as "class/name id". */
async function fleetNotKnownRuns(s: DevServer): Promise<string[]> {
  const out: string[] = [];
  for (const outcome of NOT_KNOWN) {
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ outcome, limit: "200", ...(cursor ? { cursor } : {}) });
      const page = (await (await fetch(`${s.base}/runs?${q}`, { headers: { Accept: "application/json" } })).json()) as {
        items: { agentClass: string; agentName: string; runId: string }[];
        next: string | null;
      };
      for (const r of page.items) out.push(`${r.agentClass}/${r.agentName} ${r.runId}`);
      cursor = page.next;
    } while (cursor);
  }
  return out.sort();
}

/** The incidents of these agents the incident list shows ended, not reported (`/incidents?status=ended_unreported`). */
async function endedUnreportedIncidents(s: DevServer, agents: Agent[]): Promise<string[]> {
  const out: string[] = [];
  for (const a of agents) {
    const q = new URLSearchParams({ agentClass: a.agent, agentName: a.name, status: "ended_unreported", limit: "200" });
    const page = (await (await fetch(`${s.base}/incidents?${q}`, { headers: { Accept: "application/json" } })).json()) as { items: { incidentId: string }[] };
    for (const i of page.items) out.push(`${a.agent}/${a.name} ${i.incidentId}`);
  }
  return out.sort();
}

it.for(CAPTURES)(
  "$capture: after two SIGKILLs mid-work and a quiet spell, the console equals the SDK where it can ask, and shows nothing false where it cannot",
  {
    timeout: patient(90_000),
  },
  (c) => foreignFleet(c),
);

/** The test, for the Worker `APP` whose tail line is `capture`. */
async function foreignFleet({ capture, app: APP }: (typeof CAPTURES)[number]): Promise<void> {
  const persistDir = mkdtempSync(path.join(tmpdir(), `foreign-fleet-${capture}-`));
  const t0 = Date.now();
  // Reconciliation may judge work quiet for a minute (the cron's age, RECONCILE_AFTER_MINUTES, at its smallest); a
  // run of an agent it cannot ask is shown unknown after a minute with no event (RECONCILE_UNKNOWN_AFTER_MINUTES).
  const vars = { RECONCILE_AFTER_MINUTES: "1", RECONCILE_BATCH: "100", RECONCILE_UNKNOWN_AFTER_MINUTES: "1" };
  let server = await startDev({ port: PORT, persistDir, app: APP, vars });
  servers.push(server);

  // Round 1: every kind of work, some finishing, some waiting, some hanging; then the whole process tree dies.
  for (const a of ALL_TASKS) for (const w of TASK_WORK) await work(server, a, w);
  for (const a of ALL_FIBERS) for (const w of FIBER_WORK) await work(server, a, w);
  for (const a of CHATS) await work(server, a, "chat:stall");
  await until("the console to know every agent", async () => {
    const r = await fetch(`${server.base}/api/agents?limit=100`, { headers: { Accept: "application/json" } });
    const names = ((await r.json()) as { items: { agentName: string }[] }).items.map((x) => x.agentName);
    return EVERYONE.every((a) => names.includes(a.name));
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
  for (const a of EVERYONE) await sdkTotals(server, a, new Map());
  for (const a of ALL_TASKS) await work(server, a, "task:complete");
  for (const a of ALL_FIBERS) await work(server, a, "managed:complete");
  await stop(server, "SIGKILL");

  // Round 3: restart, wake everyone, and let it be quiet past the reconcile age; then the cron's pass runs.
  server = await startDev({ port: PORT, persistDir, app: APP, vars });
  servers.push(server);
  for (const a of EVERYONE) await sdkTotals(server, a, new Map());
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
      const forms = new Map<string, { sdk: Map<string, number>; shown: Map<string, number>; t: string }>();
      for (const [form, agents] of Object.entries(ASKABLE)) {
        const sdk = new Map<string, number>();
        const shown = new Map<string, number>();
        for (const a of agents) {
          await sdkTotals(server, a, sdk);
          await consoleTotals(server, a, shown);
        }
        forms.set(form, { sdk, shown, t: table(sdk, shown) });
      }
      const bare = await Promise.all(BARE.map((a) => judgeBare(server, a)));
      const snapshot = JSON.stringify([[...forms.values()].map((f) => f.t), bare]);
      const done = snapshot === last ? { forms, bare } : null;
      last = snapshot;
      await new Promise((r) => setTimeout(r, 2_000));
      return done;
    },
    60_000,
  );

  // The forms the console can ask: after reconciliation, equal to the SDK.
  for (const [form, { sdk, shown, t }] of result.forms) {
    console.log(`[foreign-fleet ${capture}] ${form}: totals per kind/status after the SIGKILLs and reconciliation:\n${t}`);
    expect(Object.fromEntries(shown), `${form}:\n${t}`).toEqual(Object.fromEntries(sdk));
  }
  const contradictions = (await Promise.all([...FIBERS, ...ADMIN_FIBERS].map((a) => plainFiberContradictions(server, a)))).flat();
  expect(contradictions).toEqual([]);

  // No package: nothing false; what the console cannot know is shown as such, and counted where a person looks.
  const falsehoods = result.bare.flatMap((b) => b.falsehoods);
  const notKnown = result.bare.flatMap((b) => b.notKnown).sort();
  const unseen = result.bare.flatMap((b) => b.unseen);
  console.log(
    `[foreign-fleet ${capture}] no package: ${result.bare.reduce((n, b) => n + b.shown, 0)} runs shown, ${falsehoods.length} false, ${notKnown.length} shown as not known (unknown or ended_unreported), ${unseen.length} the SDK records that the console never heard of${notKnown.length ? `\n  not known: ${notKnown.join(", ")}` : ""}${unseen.length ? `\n  never heard of:\n  ${unseen.join("\n  ")}` : ""}`,
  );
  expect(falsehoods).toEqual([]);
  expect(await notKnownCounted(server, BARE)).toEqual(notKnown);
  // Counted where a person looks: the overview's possible losses count every run the fleet's lists show as not known,
  // the bare Worker's among them, and its section shows that count; each bare agent's page shows its own.
  const fleetNotKnown = await fleetNotKnownRuns(server);
  const overview = (await (await fetch(`${server.base}/`, { headers: { Accept: "application/json" } })).json()) as {
    losses: { runs: Record<string, { n: number; capped: boolean }> };
  };
  const counted = [...NOT_KNOWN].reduce((n, o) => n + overview.losses.runs[o]!.n, 0);
  console.log(
    `[foreign-fleet ${capture}] overview: ${counted} runs counted as possible losses; ${fleetNotKnown.length} in the fleet's lists, ${notKnown.length} of the Worker with no package`,
  );
  expect(counted).toBe(fleetNotKnown.length);
  expect(notKnown.filter((r) => !fleetNotKnown.includes(r))).toEqual([]);
  const section = await (await fetch(`${server.base}/partials/overview`)).text();
  if (counted) expect(section).toContain(`data-testid="possible-losses" data-runs="${counted}"`);
  else expect(section).not.toMatch(/data-testid="loss-runs-/);
  for (const b of BARE) {
    const page = await (await fetch(`${server.base}/agents/${b.agent}/${b.name}`)).text();
    const own = notKnown.filter((r) => r.startsWith(`${b.agent}/${b.name} `)).length;
    expect(page, `${b.name}'s page`).toContain(`data-testid="agent-not-known" data-runs="${own}"`);
  }
  const notKnownIncidents = result.bare.flatMap((b) => b.notKnownIncidents).sort();
  console.log(
    `[foreign-fleet ${capture}] no package: ${notKnownIncidents.length} incidents shown ended_unreported${notKnownIncidents.length ? `: ${notKnownIncidents.join(", ")}` : ""}`,
  );
  expect(await endedUnreportedIncidents(server, BARE)).toEqual(notKnownIncidents);
  console.log(`[foreign-fleet ${capture}] ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

async function csrf(s: DevServer): Promise<string> {
  const r = await fetch(`${s.base}/api/csrf`, { headers: { Accept: "application/json" } });
  return ((await r.json()) as { token: string }).token;
}
