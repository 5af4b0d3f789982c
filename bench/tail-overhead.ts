// `npm run bench`, tail overhead (Node, one real `wrangler dev`): what observing an agent through the console's tail
// costs the agent (issue 34, "Done when"): bytes added to its Worker, Durable Object rows written per event, and
// runFiber time with the console attached vs without, as the median of interleaved rounds measured inside the agent,
// printed beside an A/A interval (two untailed agents) that says how much of a difference the machine can resolve.
//
// One `wrangler dev` hosts the console (a tail consumer), the bare fleet (test/fixtures/bare-fleet: no package of
// ours) WITH its `tail_consumers` line, and four twins of the same code under other names, derived from the
// fixture's own config: one keeping the tail line, one naming the console in `streaming_tail_consumers` instead,
// two without a tail. Only the first Worker gets a port, so the fixture reaches the twins' agents through Durable
// Object bindings the bench adds to its generated config. The measured agents all live in twins, each in a Worker
// (isolate) of its own, and every measured call takes the same path: the only difference between a tailed agent and
// the untailed ones is its tail line.
//
// The agent's clock moves in whole milliseconds, and a call must stay short (below), so one call's time is read to
// a few percent: besides the median of per-round ratios the bench prints their trimmed mean, which averages over
// the clock's steps, with a bootstrap interval; the A/A pair is read the same ways, so its interval says what each
// reading can resolve.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, prepareDevStack, waitForHealth } from "../scripts/dev-stack.ts";
import { generatedDir, readAbsolute, readWranglerConfig, repoRoot, type WranglerConfig, writeGeneratedConfig } from "../scripts/wrangler-config.ts";
import { d1 } from "../test/e2e/wrangler-dev.ts";
import { type BundleBytes, bundleWorker } from "./bundle.ts";
import { medianCi, quantile, ROUND_CYCLE, trimmedMean, trimmedMeanCi } from "./rounds.ts";

const FIXTURE = path.join(repoRoot, "test/fixtures/bare-fleet/wrangler.jsonc");
const PORT = Number(process.env.TAIL_BENCH_PORT ?? 8891);
/**
 * Interleaved rounds: as many whole cycles (8 rounds, bench/rounds.ts) as fit in ROUNDS_SECONDS, at most MAX_ROUNDS. runFibers
 * per measured call (one agent invocation): a call stays under the streaming tail's per-invocation limit (about
 * 11,760 stream events, spans included: ~99 per runFiber here; a call of 250 lost the events past its ~118th
 * runFiber, and the bench stops on a missing run).
 */
const ROUNDS_SECONDS = Number(process.env.TAIL_BENCH_SECONDS ?? 110);
const MAX_ROUNDS = Number(process.env.TAIL_BENCH_ROUNDS ?? 400);
const N = Number(process.env.TAIL_BENCH_N ?? 100);
const WARMUP_CALLS = 3;
/** The fraction of rounds the trimmed mean sets aside at each end. */
const TRIM = 0.2;
const TARGET = 1.02;
const AA_WIDTH_TARGET = 0.02;

type Which = "tailed" | "streamed" | "untailed" | "untailed-aa";
const WHICH: Which[] = ["tailed", "streamed", "untailed", "untailed-aa"];
/** The agents the console observes, and the tail line that makes it (classic, streaming). */
const OBSERVED = ["tailed", "streamed"] as const;
type Observed = (typeof OBSERVED)[number];
const agentName = (w: Which) => `tail-bench-${w}`;
const log = (line: string) => console.log(`BENCH tail: ${line}`);

// ---------------------------------------------------------------------------------------------------------------
// Configs: all derived from the fixture's own wrangler.jsonc.

const consoleName = readWranglerConfig(path.join(repoRoot, "wrangler.jsonc")).name;
const fixture = readAbsolute(FIXTURE);
const tails = (fixture.tail_consumers ?? []) as { service?: string }[];
if (!tails.some((t) => t.service === consoleName))
  throw new Error(`${FIXTURE} no longer names the console (${consoleName}) in tail_consumers: there is no tail to measure`);

/**
 * The fixture under another name: with its tail line, with the same consumers named as a streaming tail instead, or
 * with no tail: the same code, observed either way or not.
 */
function twin(name: string, w: Which): WranglerConfig {
  const { tail_consumers, ...rest } = fixture;
  if (w === "tailed") return { ...rest, tail_consumers, name };
  if (w === "streamed") return { ...rest, streaming_tail_consumers: tail_consumers, name };
  return { ...rest, name };
}
/** The console's key for the observed twins' class: keyed apart by its Worker, or plain where the binding matched. */
const TAILED_CLASS = "(agent_class = 'BareFiberAgent' OR agent_class LIKE 'BareFiberAgent@%')";
const TWIN: Record<Which, string> = {
  tailed: `${fixture.name}-tailed`,
  streamed: `${fixture.name}-streamed`,
  untailed: `${fixture.name}-untailed`,
  "untailed-aa": `${fixture.name}-untailed-aa`,
};
const twinFile = (w: Which) => writeGeneratedConfig(`tail-bench.${TWIN[w]}.jsonc`, twin(TWIN[w], w));
const twinFiles = (Object.keys(TWIN) as Which[]).map(twinFile);
/** The fixture as it is (tail line kept), plus bindings to its twins' BareFiberAgent for the bench routes. */
const tailedFile = writeGeneratedConfig(`tail-bench.${fixture.name}.jsonc`, {
  ...fixture,
  durable_objects: {
    bindings: [
      ...(fixture.durable_objects?.bindings ?? []),
      { name: "BENCH_TAILED", class_name: "BareFiberAgent", script_name: TWIN.tailed },
      { name: "BENCH_STREAMED", class_name: "BareFiberAgent", script_name: TWIN.streamed },
      { name: "BENCH_UNTAILED", class_name: "BareFiberAgent", script_name: TWIN.untailed },
      { name: "BENCH_UNTAILED_AA", class_name: "BareFiberAgent", script_name: TWIN["untailed-aa"] },
    ],
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Bytes: the fixture bundled as `wrangler deploy` would, with and without its tail line (either kind).

function bundledBytes(config: string, label: string): BundleBytes {
  return bundleWorker(config, path.join(generatedDir, "tail-bench-bundle", label));
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting (the statistics are in bench/rounds.ts).

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
  const streamed = bundledBytes(twinFile("streamed"), "with-streaming-tail");
  log(
    `bytes the tail adds to the agent's Worker: ${tailed.raw - plain.raw} minified, ${tailed.gz - plain.gz} gz (the bare fleet bundled for deploy with its tail_consumers line ${tailed.raw} B, without ${plain.raw} B: the line is configuration, no code) — target 0 ${tailed.raw === plain.raw ? "met" : "MISSED"}`,
  );
  log(
    `bytes the streaming tail adds to the agent's Worker: ${streamed.raw - plain.raw} minified, ${streamed.gz - plain.gz} gz (with a streaming_tail_consumers line instead ${streamed.raw} B) — target 0 ${streamed.raw === plain.raw ? "met" : "MISSED"}`,
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
  // The console's events Queue delivers at once instead of after its 1 s batch window: the bench waits for the
  // console after each observed call (below), and that wait is mostly the window. The agents' side is unchanged.
  const consoleFile = stack.args.find((a) => path.basename(a).startsWith(`console.${fixture.name}.`));
  if (!consoleFile) throw new Error(`no console config among ${stack.args.join(" ")}`);
  const consoleConfig = readWranglerConfig(consoleFile);
  const consumers = (consoleConfig.queues as { consumers?: { queue: string; max_batch_timeout?: number }[] } | undefined)?.consumers ?? [];
  const telemetry = consumers.find((c) => c.queue === "agent-telemetry");
  if (!telemetry) throw new Error(`${consoleFile} has no consumer of agent-telemetry`);
  telemetry.max_batch_timeout = 0;
  writeGeneratedConfig(path.basename(consoleFile), consoleConfig);
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

  const fibersRun: Record<Which, number> = { tailed: 0, streamed: 0, untailed: 0, "untailed-aa": 0 };
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
   * What the console stored for each observed agent: ended runs and events (read from its local D1 file). The
   * observed twins are other Workers' BareFiberAgent than the one the console binds, so the console keys them apart
   * by Worker (`BareFiberAgent@…`, src/telemetry/workers.ts). A run that completes healthily leaves D1's runs table
   * at its end (a rollup and history): its `fiber.completed` in the agent's timeline is what is counted.
   */
  const stored = () => {
    const count = (sql: string) =>
      Object.fromEntries(OBSERVED.map((w) => [w, Number(d1(persistDir!, sql.replaceAll("$NAME", `'${agentName(w)}'`))[0]!.c)] as const)) as Record<
        Observed,
        number
      >;
    const runs = count(
      `SELECT count(*) AS c FROM event_segments s, json_each(s.body) j WHERE ${TAILED_CLASS} AND s.agent_name = $NAME AND j.value ->> '$.y' = 'fiber.completed'`,
    );
    const events = count(`SELECT coalesce(sum(n), 0) AS c FROM event_segments WHERE ${TAILED_CLASS} AND agent_name = $NAME`);
    const deadLetters = Number(d1(persistDir!, "SELECT count(*) AS c FROM dead_letters")[0]!.c);
    return { runs, events, deadLetters };
  };
  /**
   * Waits until the console has stored every run of the observed agents so far. The console's tail, Queue and
   * ingest share this machine's two cores with the agents; on the platform they run elsewhere. Waiting keeps their
   * work out of the next measured call, whichever agent it is. Only a call to an observed agent gives it work.
   */
  const behind = () => {
    const { runs } = stored();
    return OBSERVED.filter((w) => runs[w] < fibersRun[w]).map((w) => `${w} ${runs[w]} of ${fibersRun[w]}`);
  };
  async function consoleCaughtUp(timeoutMs = 60_000): Promise<number> {
    const start = Date.now();
    while (behind().length) {
      if (Date.now() - start > timeoutMs)
        throw new Error(
          `the console stored only these runs of the observed agents: ${behind().join(", ")} (${stored().deadLetters} dead letters; a streamed invocation past the runtime's limit is cut short)`,
        );
      await sleep(50);
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

  // Interleaved rounds in a cycle balanced across round boundaries (bench/rounds.ts): a Latin square balanced only
  // within rounds left one untailed twin after an observed call 3 times in 4 and the other 2 in 4, and the A/A pair
  // read 1.15x (2026-12-06 22:21 UTC).
  const times: Record<Which, number[]> = { tailed: [], streamed: [], untailed: [], "untailed-aa": [] };
  /** Per call: whether an observed agent's call came right before it (a check on the balance). */
  const afterObserved: Record<Which, boolean[]> = { tailed: [], streamed: [], untailed: [], "untailed-aa": [] };
  const square = ROUND_CYCLE;
  let waited = 0;
  let previous: Which | undefined;
  let rounds = 0;
  while (rounds < MAX_ROUNDS && (rounds % square.length !== 0 || Date.now() - startedAt < ROUNDS_SECONDS * 1000)) {
    for (const i of square[rounds % square.length]!) {
      const w = WHICH[i]!;
      const observedBefore = previous === "tailed" || previous === "streamed";
      if (observedBefore) waited += await consoleCaughtUp();
      afterObserved[w].push(observedBefore);
      const r = await call(w, N);
      previous = w;
      times[w].push(clockAdvances ? r.ms : r.wall);
    }
    rounds++;
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

  // Figures: each round's ratio to the untailed agent of the same round; the A/A pair is the same code untailed.
  const ratiosOf = (w: Which, xs: Record<Which, number[]>) => xs[w].map((t, i) => t / xs.untailed[i]!);
  const verdict = (what: string, w: Which, xs: Record<Which, number[]>) => {
    const r = ratiosOf(w, xs);
    const [lo, hi] = medianCi(r);
    return `${what} ${f3(quantile(r, 0.5))}x (95% interval of the median ${f3(lo)}-${f3(hi)}x, middle half ${f3(quantile(r, 0.25))}-${f3(quantile(r, 0.75))}x)`;
  };
  const trimmed = (w: Which) => {
    const r = ratiosOf(w, times);
    const [lo, hi] = trimmedMeanCi(r, TRIM);
    return { mean: trimmedMean(r, TRIM), lo, hi, text: `${f3(trimmedMean(r, TRIM))}x (95% bootstrap interval ${f3(lo)}-${f3(hi)}x)` };
  };
  for (const [w, label] of [
    ["tailed", "classic tail (tail_consumers)"],
    ["streamed", "streaming tail (streaming_tail_consumers)"],
  ] as const) {
    const med = quantile(ratiosOf(w, times), 0.5);
    log(
      `runFiber with the console attached by the ${label} vs without: ${verdict("median per-round ratio", w, times)}; ${pct(TRIM)}-trimmed mean ${trimmed(w).text} — target <= ${TARGET}x ${med <= TARGET ? "met" : "MISSED"}`,
    );
  }
  const [aaLo, aaHi] = medianCi(ratiosOf("untailed-aa", times));
  const aa = trimmed("untailed-aa");
  log(
    `A/A (two untailed agents, the machine's noise alone): ${verdict("median", "untailed-aa", times)}, interval width ${pct(aaHi - aaLo)} — narrower than ${pct(AA_WIDTH_TARGET)} ${aaHi - aaLo < AA_WIDTH_TARGET ? "yes" : "NO"}; trimmed mean ${aa.text}, width ${pct(aa.hi - aa.lo)} — narrower than ${pct(AA_WIDTH_TARGET)} ${aa.hi - aa.lo < AA_WIDTH_TARGET ? "yes" : "NO"} (the agent's clock moves in whole ms: a call of ${N} runFibers reads ${f3(quantile(times.untailed, 0.5))} ms, median)`,
  );
  const untailedAfter = (observed: boolean) =>
    quantile(
      (["untailed", "untailed-aa"] as const).flatMap((w) => times[w].filter((_, i) => afterObserved[w][i] === observed)),
      0.5,
    );
  const afterShare = (w: Which) => pct(afterObserved[w].filter(Boolean).length / afterObserved[w].length);
  log(
    `carry-over: an untailed call right after an observed one read ${f3(untailedAfter(true) / untailedAfter(false))}x one after an untailed one (medians); calls right after an observed one: classic ${afterShare("tailed")}, streaming ${afterShare("streamed")}, untailed ${afterShare("untailed")}, A/A ${afterShare("untailed-aa")}`,
  );
  const perFiber = (w: Which) => quantile(times[w], 0.5) / N;
  const eventsPerFiber = (w: Observed) => seen.events[w] / fibersRun[w];
  const perEventUs = (w: Observed) => (((perFiber(w) - perFiber("untailed")) / eventsPerFiber(w)) * 1000).toFixed(1);
  log(
    `per runFiber (one stash), medians: classic-tailed ${f3(perFiber("tailed"))} ms, streaming-tailed ${f3(perFiber("streamed"))} ms, untailed ${f3(perFiber("untailed"))} ms, untailed A/A ${f3(perFiber("untailed-aa"))} ms; the difference of the medians per event published: classic ${perEventUs("tailed")} µs, streaming ${perEventUs("streamed")} µs (${rounds} interleaved rounds of ${N} runFibers per agent invocation; each call after an observed agent's starts once the console stored its runs, ${(waited / 1000).toFixed(1)} s waited; wrangler's own local observability tail off)`,
  );
  const tablesOf = (w: Which) => Object.keys(rowsAfter[w]).sort().join(",");
  const tablesBefore = (w: Which) => Object.keys(rowsBefore[w]).sort().join(",");
  const grown = (w: Which) =>
    Object.entries(rowsAfter[w])
      .filter(([t, c]) => c !== null && c !== (rowsBefore[w][t] ?? 0))
      .map(([t, c]) => `${t} ${rowsBefore[w][t] ?? 0}->${c}`)
      .join(", ") || "none";
  for (const w of OBSERVED) {
    const extraRows = (counted[w].rowsWritten ?? 0) - (counted.untailed.rowsWritten ?? 0);
    log(
      `Durable Object rows written per event on the agent by observing (${w === "tailed" ? "classic" : "streaming"} tail): ${f3(extraRows / (N * eventsPerFiber(w)))} (${N} runFibers counted statement by statement: observed agent ${counted[w].rowsWritten} rows, untailed ${counted.untailed.rowsWritten}; ${f3(eventsPerFiber(w))} events stored by the console per runFiber) — target 0 ${extraRows === 0 ? "met" : "MISSED"}`,
    );
  }
  const sameTables = OBSERVED.every((w) => tablesOf(w) === tablesOf("untailed") && tablesBefore(w) === tablesBefore("untailed"));
  log(
    `the agent's storage: tables ${sameTables ? "identical with and without either tail" : "DIFFER with a tail"} (${tablesOf("tailed")}; the runtime's own _cf_ tables cannot be read); rows changed over the bench: classic-tailed ${grown("tailed")}; streaming-tailed ${grown("streamed")}; untailed ${grown("untailed")}`,
  );
  log(
    `the console stored ${seen.runs.tailed} of ${fibersRun.tailed} runFibers of the classic-tailed agent (${seen.events.tailed} events) and ${seen.runs.streamed} of ${fibersRun.streamed} of the streaming-tailed one (${seen.events.streamed} events), ${seen.deadLetters} dead letters; ${((Date.now() - t0) / 1000).toFixed(0)} s in all, ${(roundsMs / 1000).toFixed(0)} s of rounds`,
  );
  if (OBSERVED.some((w) => seen.runs[w] !== fibersRun[w]))
    throw new Error("a tail did not deliver every run: the figures above do not measure an attached console");
}

main()
  .catch((e: unknown) => {
    console.error(`✖ tail-overhead bench: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  })
  .finally(() => stopDev());
