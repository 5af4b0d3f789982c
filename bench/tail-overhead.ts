// `npm run bench`, tail overhead (Node, one real `wrangler dev`): what observing an agent through the console's tail
// costs the agent (issue 34, "Done when"): bytes added to its Worker, Durable Object rows written per event, and
// runFiber time with the console attached vs without, as the median of interleaved rounds measured inside the agent,
// printed beside an A/A interval (two untailed agents) that says how much of a difference the machine can resolve.
//
// One `wrangler dev` hosts the console (a tail consumer), the bare fleet (test/fixtures/bare-fleet: no package of
// ours) WITH its `tail_consumers` line, and three twins of the same code under other names, derived from the
// fixture's own config: one keeping the tail line, two without it. Only the first Worker gets a port, so the fixture
// reaches the twins' agents through Durable Object bindings the bench adds to its generated config. The measured
// agents all live in twins, each in a Worker (isolate) of its own, and every measured call takes the same path: the
// only difference between the tailed agent and the untailed ones is the tail line.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, prepareDevStack, waitForHealth } from "../scripts/dev-stack.ts";
import { generatedDir, readAbsolute, readWranglerConfig, repoRoot, type WranglerConfig, writeGeneratedConfig } from "../scripts/wrangler-config.ts";
import { d1 } from "../test/e2e/wrangler-dev.ts";
import { type BundleBytes, bundleWorker } from "./bundle.ts";

const FIXTURE = path.join(repoRoot, "test/fixtures/bare-fleet/wrangler.jsonc");
const PORT = Number(process.env.TAIL_BENCH_PORT ?? 8891);
/** Interleaved rounds, and runFibers per measured call (one agent invocation). */
const ROUNDS = Number(process.env.TAIL_BENCH_ROUNDS ?? 48);
const N = Number(process.env.TAIL_BENCH_N ?? 250);
const WARMUP_CALLS = 4;
const TARGET = 1.02;
const AA_WIDTH_TARGET = 0.02;

type Which = "tailed" | "untailed" | "untailed-aa";
const WHICH: Which[] = ["tailed", "untailed", "untailed-aa"];
const agentName = (w: Which) => `tail-bench-${w}`;
const log = (line: string) => console.log(`BENCH tail: ${line}`);

// ---------------------------------------------------------------------------------------------------------------
// Configs: all derived from the fixture's own wrangler.jsonc.

const consoleName = readWranglerConfig(path.join(repoRoot, "wrangler.jsonc")).name;
const fixture = readAbsolute(FIXTURE);
const tails = (fixture.tail_consumers ?? []) as { service?: string }[];
if (!tails.some((t) => t.service === consoleName))
  throw new Error(`${FIXTURE} no longer names the console (${consoleName}) in tail_consumers: there is no tail to measure`);

/** The fixture under another name, with its tail line or without it: the same code, observed or not. */
function twin(name: string, tailed: boolean): WranglerConfig {
  const { tail_consumers, ...rest } = fixture;
  return tailed ? { ...rest, tail_consumers, name } : { ...rest, name };
}
/** The console's key for the tailed twin's class: keyed apart by its Worker, or plain where the binding matched. */
const TAILED_CLASS = "(agent_class = 'BareFiberAgent' OR agent_class LIKE 'BareFiberAgent@%')";
const TWIN: Record<Which, string> = { tailed: `${fixture.name}-tailed`, untailed: `${fixture.name}-untailed`, "untailed-aa": `${fixture.name}-untailed-aa` };
const twinFile = (w: Which) => writeGeneratedConfig(`tail-bench.${TWIN[w]}.jsonc`, twin(TWIN[w], w === "tailed"));
const twinFiles = (Object.keys(TWIN) as Which[]).map(twinFile);
/** The fixture as it is (tail line kept), plus bindings to its twins' BareFiberAgent for the bench routes. */
const tailedFile = writeGeneratedConfig(`tail-bench.${fixture.name}.jsonc`, {
  ...fixture,
  durable_objects: {
    bindings: [
      ...(fixture.durable_objects?.bindings ?? []),
      { name: "BENCH_TAILED", class_name: "BareFiberAgent", script_name: TWIN.tailed },
      { name: "BENCH_UNTAILED", class_name: "BareFiberAgent", script_name: TWIN.untailed },
      { name: "BENCH_UNTAILED_AA", class_name: "BareFiberAgent", script_name: TWIN["untailed-aa"] },
    ],
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Bytes: the fixture bundled as `wrangler deploy` would, with and without its tail line.

function bundledBytes(config: string, label: string): BundleBytes {
  return bundleWorker(config, path.join(generatedDir, "tail-bench-bundle", label));
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics.

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo]! + (s[hi]! - s[lo]!) * (i - lo);
}
/**
 * A distribution-free 95% confidence interval of the median (order statistics by the normal approximation of the
 * binomial): unlike the middle half, it narrows as rounds are added.
 */
function medianCi(xs: number[]): [number, number] {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  const half = (1.96 * Math.sqrt(n)) / 2;
  const lo = Math.max(0, Math.floor(n / 2 - half) - 1);
  const hi = Math.min(n - 1, Math.ceil(n / 2 + half) - 1);
  return [s[lo]!, s[hi]!];
}
const f3 = (x: number) => x.toFixed(3);
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

// ---------------------------------------------------------------------------------------------------------------
// The stack, stopped whatever happens.

let dev: ChildProcess | undefined;
let persistDir: string | undefined;
/** Signals the whole process group (npx, wrangler and its workerd), as test/e2e/wrangler-dev.ts does. */
function killDev(signal: NodeJS.Signals): void {
  try {
    if (dev?.pid) process.kill(-dev.pid, signal);
  } catch {
    /* already gone */
  }
}
async function stopDev(): Promise<void> {
  if (!dev?.pid) return;
  killDev("SIGTERM");
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      process.kill(-dev.pid, 0);
    } catch {
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  killDev("SIGKILL");
  dev = undefined;
  if (persistDir && !process.env.KEEP_BENCH_DIR) rmSync(persistDir, { recursive: true, force: true });
}
process.on("exit", () => killDev("SIGKILL"));
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(s, () => {
    killDev("SIGKILL");
    process.exit(130);
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const t0 = Date.now();
  const plain = bundledBytes(twinFile("untailed"), "without-tail");
  const tailed = bundledBytes(FIXTURE, "with-tail");
  log(
    `bytes the tail adds to the agent's Worker: ${tailed.raw - plain.raw} minified, ${tailed.gz - plain.gz} gz (the bare fleet bundled for deploy with its tail_consumers line ${tailed.raw} B, without ${plain.raw} B: the line is configuration, no code) — target 0 ${tailed.raw === plain.raw ? "met" : "MISSED"}`,
  );

  persistDir = mkdtempSync(path.join(tmpdir(), "tail-bench-"));
  const port = await freePort(PORT);
  const stack = prepareDevStack({
    app: tailedFile,
    port,
    persistTo: persistDir,
    // Timeline segments on: the bench counts what the console stored from its D1 file (the agent's side, what is
    // measured, does not depend on where the console keeps event bodies; R2 by default).
    consoleVars: { AUTH_MODE: "dev", DEV_USER: "bench@example.com", DEV_ROLE: "operator", TIMELINE_SEGMENTS: "on" },
    inspectorPort: await freePort(port + 10_000),
    wranglerArgs: twinFiles.flatMap((f) => ["-c", f]),
  });
  // wrangler's own local observability attaches a streaming tail to EVERY Worker (the twins too): off, so "without"
  // means no tail at all and the only tail is the console's.
  dev = spawn("npx", stack.args, {
    cwd: repoRoot,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, CI: "true", X_LOCAL_OBSERVABILITY: "false" },
  });
  const logs: string[] = [];
  dev.stdout?.on("data", (d) => logs.push(String(d)));
  dev.stderr?.on("data", (d) => logs.push(String(d)));
  if (!(await waitForHealth(stack.base, 90_000, () => dev?.exitCode === null)))
    throw new Error(`wrangler dev did not start on ${stack.base}:\n${logs.join("").slice(-3000)}`);

  const fibersRun: Record<Which, number> = { tailed: 0, untailed: 0, "untailed-aa": 0 };
  async function call(w: Which, n: number, countRows = false) {
    const q = new URLSearchParams({ worker: w, name: agentName(w), n: String(n), ...(countRows ? { countRows: "1" } : {}) });
    const t = performance.now();
    const r = await fetch(`${stack.appBase}/bench/fibers?${q}`, { method: "POST", signal: AbortSignal.timeout(120_000) });
    const wall = performance.now() - t;
    const body = await json<{ ok: boolean; ms: number; dateMs: number; rowsWritten: number | null; error?: string }>(r, w);
    if (!body.ok) throw new Error(`${w}: ${r.status} ${body.error}`);
    fibersRun[w] += n;
    return { ...body, wall };
  }
  /** A route's JSON answer, or an error saying what came instead (wrangler answers an exception with an HTML page). */
  async function json<T>(r: Response, what: string): Promise<T> {
    const text = await r.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`${what}: ${r.status} ${text.slice(0, 300)}\n${logs.join("").slice(-2000)}`);
    }
  }
  const rowsOf = async (w: Which) =>
    (
      await json<{ rows: Record<string, number | null> }>(
        await fetch(`${stack.appBase}/bench/rows?${new URLSearchParams({ worker: w, name: agentName(w) })}`),
        w,
      )
    ).rows;
  /**
   * What the console stored for the tailed agent: ended runs and events (read from its local D1 file). The tailed
   * twin is another Worker's BareFiberAgent than the one the console binds, so the console keys it apart by its
   * Worker (`BareFiberAgent@…`, src/telemetry/workers.ts). A run that completes healthily leaves D1's runs table at
   * its end (a rollup and history): its `fiber.completed` in the agent's timeline is what is counted.
   */
  const stored = () => {
    const runs = Number(
      d1(
        persistDir!,
        `SELECT count(*) AS c FROM event_segments s, json_each(s.body) j WHERE ${TAILED_CLASS} AND s.agent_name = '${agentName("tailed")}' AND j.value ->> '$.y' = 'fiber.completed'`,
      )[0]!.c,
    );
    const events = Number(
      d1(persistDir!, `SELECT coalesce(sum(n), 0) AS c FROM event_segments WHERE ${TAILED_CLASS} AND agent_name = '${agentName("tailed")}'`)[0]!.c,
    );
    const deadLetters = Number(d1(persistDir!, "SELECT count(*) AS c FROM dead_letters")[0]!.c);
    return { runs, events, deadLetters };
  };
  /**
   * Waits until the console has stored every run of the tailed agent so far. The console's tail, Queue and ingest
   * share this machine's two cores with the agents; on the platform they run elsewhere. Waiting keeps their work
   * out of the next measured call, whichever agent it is.
   */
  async function consoleCaughtUp(timeoutMs = 60_000): Promise<number> {
    const start = Date.now();
    while (stored().runs < fibersRun.tailed) {
      if (Date.now() - start > timeoutMs) throw new Error(`the console stored ${stored().runs} of ${fibersRun.tailed} runs of the tailed agent`);
      await sleep(100);
    }
    return Date.now() - start;
  }

  // Storage before any bench work, then warm-up (JIT, first SQLite pages) on each agent.
  const rowsBefore = Object.fromEntries(await Promise.all(WHICH.map(async (w) => [w, await rowsOf(w)] as const))) as Record<
    Which,
    Record<string, number | null>
  >;
  let clockAdvances = true;
  const share: number[] = [];
  for (let i = 0; i < WARMUP_CALLS; i++)
    for (const w of WHICH) {
      const r = await call(w, N);
      if (r.ms <= 0) clockAdvances = false;
      share.push(r.ms / r.wall);
    }
  await consoleCaughtUp();
  const startedAt = Date.now();
  log(
    `the agent's clock ${clockAdvances ? "advances" : "DOES NOT advance"} during one invocation in local workerd (performance.now() between the first and last of ${N} runFibers moved in every warm-up call; it read ${pct(quantile(share, 0.5))} of the request's time seen from outside, median): times are ${clockAdvances ? "measured inside the agent, without the request hop" : "measured per request from outside, with the hop amortised over the runFibers of the call"}`,
  );

  // Interleaved rounds, the order rotating so no agent always runs first or after the tailed one.
  const times: Record<Which, number[]> = { tailed: [], untailed: [], "untailed-aa": [] };
  const orders: Which[][] = [
    ["tailed", "untailed", "untailed-aa"],
    ["untailed", "untailed-aa", "tailed"],
    ["untailed-aa", "tailed", "untailed"],
    ["tailed", "untailed-aa", "untailed"],
    ["untailed", "tailed", "untailed-aa"],
    ["untailed-aa", "untailed", "tailed"],
  ];
  let waited = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const w of orders[round % orders.length]!) {
      waited += await consoleCaughtUp();
      const r = await call(w, N);
      times[w].push(clockAdvances ? r.ms : r.wall);
    }
  }
  const roundsMs = Date.now() - startedAt;
  await consoleCaughtUp();

  // Rows: the same work once more with every statement's rows counted, and every table's rows after.
  const counted = Object.fromEntries(await Promise.all(WHICH.map(async (w) => [w, await call(w, N, true)] as const))) as Record<
    Which,
    Awaited<ReturnType<typeof call>>
  >;
  await consoleCaughtUp();
  const rowsAfter = Object.fromEntries(await Promise.all(WHICH.map(async (w) => [w, await rowsOf(w)] as const))) as Record<
    Which,
    Record<string, number | null>
  >;
  const seen = stored();
  await stopDev();

  // Figures.
  const ratios = times.tailed.map((t, i) => t / times.untailed[i]!);
  const aa = times["untailed-aa"].map((t, i) => t / times.untailed[i]!);
  const med = quantile(ratios, 0.5);
  const aaMed = quantile(aa, 0.5);
  const aaWidth = quantile(aa, 0.75) - quantile(aa, 0.25);
  const ci = medianCi(ratios);
  const aaCi = medianCi(aa);
  const aaCiWidth = aaCi[1] - aaCi[0];
  const perFiber = (w: Which) => quantile(times[w], 0.5) / N;
  log(
    `runFiber with the console attached (tail) vs without: median per-round ratio ${f3(med)}x, middle half of rounds ${f3(quantile(ratios, 0.25))}-${f3(quantile(ratios, 0.75))}x — target <= ${TARGET}x ${med <= TARGET ? "met" : "MISSED"}`,
  );
  log(
    `A/A (two untailed agents, the machine's noise alone): median ${f3(aaMed)}x, middle half of rounds ${f3(quantile(aa, 0.25))}-${f3(quantile(aa, 0.75))}x, width ${pct(aaWidth)} — narrower than ${pct(AA_WIDTH_TARGET)} ${aaWidth < AA_WIDTH_TARGET ? "yes" : "NO"}`,
  );
  log(
    `95% confidence interval of the median (narrows with more rounds, unlike the middle half): tail ${f3(ci[0])}-${f3(ci[1])}x; A/A ${f3(aaCi[0])}-${f3(aaCi[1])}x, width ${pct(aaCiWidth)} — narrower than ${pct(AA_WIDTH_TARGET)} ${aaCiWidth < AA_WIDTH_TARGET ? "yes" : "NO"}`,
  );
  const eventsPerFiber = seen.events / fibersRun.tailed;
  log(
    `per runFiber (one stash), medians: tailed ${f3(perFiber("tailed"))} ms, untailed ${f3(perFiber("untailed"))} ms, untailed A/A ${f3(perFiber("untailed-aa"))} ms; the difference of the medians per event published ${(((perFiber("tailed") - perFiber("untailed")) / eventsPerFiber) * 1000).toFixed(1)} µs (${ROUNDS} interleaved rounds of ${N} runFibers per agent invocation, order rotating; each call starts after the console stored the tailed agent's runs so far, ${(waited / 1000).toFixed(1)} s waited; wrangler's own local observability tail off)`,
  );
  const events = seen.events;
  const countedEvents = N * eventsPerFiber;
  const extraRows = (counted.tailed.rowsWritten ?? 0) - (counted.untailed.rowsWritten ?? 0);
  const tablesOf = (w: Which) => Object.keys(rowsAfter[w]).sort().join(",");
  const sameTables =
    tablesOf("tailed") === tablesOf("untailed") && Object.keys(rowsBefore.tailed).sort().join(",") === Object.keys(rowsBefore.untailed).sort().join(",");
  const grown = (w: Which) =>
    Object.entries(rowsAfter[w])
      .filter(([t, c]) => c !== null && c !== (rowsBefore[w][t] ?? 0))
      .map(([t, c]) => `${t} ${rowsBefore[w][t] ?? 0}->${c}`)
      .join(", ") || "none";
  log(
    `Durable Object rows written per event on the agent by observing: ${f3(extraRows / countedEvents)} (${N} runFibers counted statement by statement: tailed agent ${counted.tailed.rowsWritten} rows, untailed ${counted.untailed.rowsWritten}; ${f3(eventsPerFiber)} events stored by the console per runFiber) — target 0 ${extraRows === 0 ? "met" : "MISSED"}`,
  );
  log(
    `the agent's storage: tables ${sameTables ? "identical with and without the tail" : "DIFFER with the tail"} (${tablesOf("tailed")}; the runtime's own _cf_ tables cannot be read); rows changed over the bench: tailed ${grown("tailed")}; untailed ${grown("untailed")}`,
  );
  log(
    `the console stored ${seen.runs} of ${fibersRun.tailed} runFibers of the tailed agent (${events} events, ${seen.deadLetters} dead letters); ${((Date.now() - t0) / 1000).toFixed(0)} s in all, ${(roundsMs / 1000).toFixed(0)} s of rounds`,
  );
  if (seen.runs !== fibersRun.tailed) throw new Error("the tail did not deliver every run: the figures above do not measure an attached console");
}

main()
  .catch((e: unknown) => {
    console.error(`✖ tail-overhead bench: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  })
  .finally(() => stopDev());
