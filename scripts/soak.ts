// `npm run soak -- [--minutes 30] [--kills 6] [--quiet-minutes 12] [--port 8765] [--persist-to .wrangler/soak]`
// A soak of `npm start`: the demo fleet and the console in one `wrangler dev`, SIGKILLed as a whole (every process
// of the stack, workerd included) at spread-out times and restarted on the same local state, then left quiet with
// the demo's ticks off while reconciliation runs each minute. All the while it polls the console's pages and counts
// what they answer. At the end it asks the console and, through the console's admin API, the agents themselves:
// - every run the console closed `ended_unreported`: is the SDK still running it (a contradiction), or is it the
//   SDK's own internal work (`__cf_internal_*`, which the console folds into the turn it serves: a contradiction);
// - runs and sessions still shown running after the quiet time, against the agents' live work;
// - what was lost where a person sees it: gaps in the agents' numbering and dead letters, as the overview counts them.
//   Only the outbox's agents are numbered: the demo's DemoFiberAgent is observed by the tail alone, so a loss of its
//   events shows only as a run of unknown end or a dead letter (docs/capture.md).
// Exits 1 on any contradiction or any 5xx. Output is for a person and for the closing note.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, openSync, rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { href, LISTS } from "../console/links.ts";
import { repoRoot } from "./wrangler-config.ts";

const args = z
  .object({
    minutes: z.coerce.number().min(1).max(240),
    kills: z.coerce.number().int().min(0).max(60),
    quietMinutes: z.coerce.number().min(1).max(60),
    port: z.coerce.number().int().min(1024).max(65535),
    persistTo: z.string().min(1),
  })
  .safeParse(
    (() => {
      const { values } = parseArgs({
        options: {
          minutes: { type: "string", default: "30" },
          kills: { type: "string", default: "6" },
          "quiet-minutes": { type: "string", default: "12" },
          port: { type: "string", default: "8765" },
          "persist-to": { type: "string", default: ".wrangler/soak" },
        },
      });
      return { minutes: values.minutes, kills: values.kills, quietMinutes: values["quiet-minutes"], port: values.port, persistTo: values["persist-to"] };
    })(),
  );
if (!args.success) {
  console.error(`✖ ${args.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join("; ")}`);
  process.exit(2);
}
const o = args.data;
const base = `http://127.0.0.1:${o.port}`;
const stackLog = path.join(repoRoot, `${o.persistTo}.log`);
const log = (s: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${s}`);

/** Every process below `pid` (the stack's tree), from ps: what a SIGKILL of the whole stack must reach. */
function tree(pid: number): number[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [p, pp] of rows) if (pp === out[i]) out.push(p);
  return out;
}

function start(demo: boolean): ChildProcess {
  const child = spawn(process.execPath, ["scripts/dev-stack.ts", "--demo", "--port", String(o.port), "--persist-to", o.persistTo], {
    cwd: repoRoot,
    env: { ...process.env, DEMO: demo ? "on" : "off", CI: "true" },
    // The stack's own output goes to a file beside its state: the soak's lines stay readable.
    stdio: ["ignore", openSync(stackLog, "a"), openSync(stackLog, "a")],
  });
  return child;
}

function killAll(child: ChildProcess): number {
  const pids = tree(child.pid!);
  for (const p of pids)
    try {
      process.kill(p, "SIGKILL");
    } catch {}
  return pids.length;
}

async function healthy(timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      if ((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5_000) })).ok) return true;
    } catch {}
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return false;
}

const PAGES = (["overview", "runs", "incidents", "sessions", "ops", "stuck", "awake", "agents", "alerts", "audit"] as const).map((l) => LISTS[l]);
const polled = { requests: 0, byStatus: new Map<number, number>(), down: 0, fiveXx: [] as string[] };
let polling = true;
async function poll(): Promise<void> {
  for (let i = 0; polling; i++) {
    const p = PAGES[i % PAGES.length]!;
    const json = i % 2 === 0;
    try {
      const r = await fetch(`${base}${p}`, { headers: json ? { Accept: "application/json" } : {}, signal: AbortSignal.timeout(30_000) });
      await r.arrayBuffer();
      polled.requests++;
      polled.byStatus.set(r.status, (polled.byStatus.get(r.status) ?? 0) + 1);
      if (r.status >= 500) polled.fiveXx.push(`${r.status} ${p}${json ? " (json)" : ""}`);
    } catch {
      polled.down++;
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

async function getJson<T>(p: string): Promise<T> {
  const r = await fetch(`${base}${p}`, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(60_000) });
  if (!r.ok) throw new Error(`${p}: ${r.status} ${(await r.text()).slice(0, 200)}`);
  return (await r.json()) as T;
}

type RunItem = { fiberId: string; agentClass: string; agentName: string; name: string | null; kind: string; outcome: string | null };
async function allRuns(query: string): Promise<RunItem[]> {
  const out: RunItem[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 200; pages++) {
    const q: string = href(LISTS.runs, { ...Object.fromEntries(new URLSearchParams(query)), limit: 100, ...(cursor ? { cursor } : {}) });
    const page: { items: RunItem[]; next: string | null } = await getJson(q);
    out.push(...page.items);
    if (!page.next) break;
    cursor = page.next;
  }
  return out;
}

/** The ids of work the agent runs now, by the SDK (`/api/agents/:class/:name`: run rows, fibers, Tasks runs). */
async function liveIds(agentClass: string, agentName: string): Promise<Set<string> | null> {
  const r = await fetch(`${base}/api/agents/${encodeURIComponent(agentClass)}/${encodeURIComponent(agentName)}`, {
    headers: { Accept: "application/json" },
    signal: AbortSignal.timeout(60_000),
  });
  if (!r.ok) return null;
  const body = (await r.json()) as { value: { runs: { runs: { id: string }[]; tasks?: { id: string }[] } } };
  return new Set([...body.value.runs.runs.map((x) => x.id), ...(body.value.runs.tasks ?? []).map((x) => x.id)]);
}

async function reconcile(): Promise<void> {
  const { token } = await getJson<{ token: string }>("/api/csrf");
  await fetch(`${base}/api/reconcile`, { method: "POST", headers: { Origin: base, "X-CSRF-Token": token }, signal: AbortSignal.timeout(120_000) });
}

/** The overview's figures about what did not arrive (gaps, dead letters, blocked or unreachable agents), at any depth. */
function lossFigures(v: unknown, at = "", out: Record<string, unknown> = {}): Record<string, unknown> {
  if (v && typeof v === "object" && !Array.isArray(v))
    for (const [k, x] of Object.entries(v)) {
      const p = at ? `${at}.${k}` : k;
      if (/gap|lost|loss|dead|unreach|blocked/i.test(k)) out[p] = x;
      else lossFigures(x, p, out);
    }
  return out;
}

async function main(): Promise<void> {
  rmSync(path.join(repoRoot, o.persistTo), { recursive: true, force: true });
  rmSync(stackLog, { force: true });
  mkdirSync(path.dirname(stackLog), { recursive: true });
  log(
    `${o.minutes} min of the demo fleet with ${o.kills} SIGKILLs of the whole stack, then ${o.quietMinutes} min quiet; console ${base}, state ${o.persistTo}`,
  );
  let child = start(true);
  if (!(await healthy(180_000))) throw new Error("the stack did not answer /health within 180 s");
  void poll();
  const t0 = Date.now();
  const span = o.minutes * 60_000;
  // Kills spread over the busy time, each at a random point of its own slice (never in the first or last minute).
  const kills = Array.from({ length: o.kills }, (_, i) => 60_000 + ((i + 0.2 + Math.random() * 0.6) * (span - 120_000)) / o.kills);
  const restarts: number[] = [];
  for (const at of kills) {
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + at - Date.now())));
    const n = killAll(child);
    log(`SIGKILL: ${n} processes of the stack`);
    await new Promise((r) => setTimeout(r, 3_000));
    const k = Date.now();
    child = start(true);
    if (!(await healthy(180_000))) throw new Error("the stack did not come back within 180 s");
    restarts.push(Date.now() - k);
    log(`back after ${((Date.now() - k) / 1000).toFixed(0)} s`);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, t0 + span - Date.now())));
  // Quiet: the same state, the demo's ticks off; reconciliation as the cron would run it.
  child.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 5_000));
  killAll(child);
  child = start(false);
  if (!(await healthy(180_000))) throw new Error("the stack did not come back for the quiet time");
  log("quiet: demo ticks off, reconciling every minute");
  const quietEnd = Date.now() + o.quietMinutes * 60_000;
  while (Date.now() < quietEnd) {
    await reconcile().catch((e: Error) => log(`reconcile failed: ${e.message}`));
    await new Promise((r) => setTimeout(r, Math.min(60_000, Math.max(0, quietEnd - Date.now()))));
  }
  polling = false;

  // What the console shows, against what the agents say.
  const unreported = await allRuns("outcome=ended_unreported");
  const internal = unreported.filter((r) => (r.name ?? "").startsWith("__cf_internal"));
  const running = await allRuns("outcome=running");
  const agents = new Map<string, Set<string> | null>();
  const contradicted: string[] = [];
  for (const r of [...unreported, ...running]) {
    const key = `${r.agentClass}\u0000${r.agentName}`;
    if (!agents.has(key)) agents.set(key, await liveIds(r.agentClass, r.agentName));
    const live = agents.get(key);
    if (live === null) continue;
    const isLive = live?.has(r.fiberId) ?? false;
    if (r.outcome === "ended_unreported" && isLive)
      contradicted.push(`${r.agentClass}/${r.agentName} ${r.fiberId}: shown ended_unreported, the SDK still runs it`);
    if (r.outcome === null && !isLive)
      contradicted.push(`${r.agentClass}/${r.agentName} ${r.fiberId}: shown running after ${o.quietMinutes} quiet minutes, the SDK runs no such work`);
  }
  for (const r of internal) contradicted.push(`${r.agentClass}/${r.agentName} ${r.fiberId}: the SDK's internal ${r.name} shown as a run of its own`);
  // Every run the console lists, by outcome: what the soak made (a soak with no work proves nothing).
  const byOutcome = new Map<string, number>();
  for (const r of await allRuns("")) byOutcome.set(r.outcome ?? "running", (byOutcome.get(r.outcome ?? "running") ?? 0) + 1);
  const overview = await getJson<Record<string, unknown>>("/");
  const losses = JSON.stringify(lossFigures(overview));
  killAll(child);

  console.log("\nSOAK result");
  console.log(
    `  busy ${o.minutes} min, ${o.kills} SIGKILLs of the whole stack (back in ${restarts.map((ms) => `${(ms / 1000).toFixed(0)} s`).join(", ")}), quiet ${o.quietMinutes} min`,
  );
  console.log(
    `  polled ${polled.requests} answers (${[...polled.byStatus].map(([s, n]) => `${s}: ${n}`).join(", ")}), ${polled.down} while the stack was down; 5xx: ${polled.fiveXx.length}`,
  );
  for (const f of polled.fiveXx.slice(0, 10)) console.log(`    ${f}`);
  console.log(`  runs the console lists: ${[...byOutcome].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  console.log(`  runs ended_unreported: ${unreported.length} (SDK-internal among them: ${internal.length}); still shown running: ${running.length}`);
  console.log(`  contradicted by the agents' own records: ${contradicted.length}`);
  for (const c of contradicted.slice(0, 20)) console.log(`    ${c}`);
  console.log(`  losses as the overview counts them: ${losses}`);
  process.exit(contradicted.length || polled.fiveXx.length ? 1 : 0);
}

main().catch((e: unknown) => {
  console.error(`✖ ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
