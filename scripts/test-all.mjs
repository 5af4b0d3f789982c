// `npm test`: every check and every test suite, each run even when an earlier one failed, then one summary of all
// of them and a last line `N passed, N failed` (tests). Exits non-zero if any step failed. Only the prerequisites
// (the static assets, the packages' build) stop the run early: without them every suite would fail the same way.
//
//   npm test                                   everything, as CI runs it (.ci/run)
//   npm test -- --only vendor,db:check,main    some steps only (names as in the summary)
//   npm test -- --only main -- test/x.test.ts  and vitest's file filters for the suites that run
//
// Plain Node; npm runs it on the Node 22 that node_modules brings (scripts/bootstrap.mjs installs it first).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** Each step: what the summary calls it, the command, a vitest config for the suites, `prerequisite` to stop on failure. */
const STEPS = [
  { name: "vendor", cmd: ["node", "scripts/vendor.mjs"], prerequisite: true },
  { name: "ensure-chromium", cmd: ["node", "scripts/ensure-chromium.mjs"] },
  { name: "build:packages", cmd: ["npm", "run", "--silent", "build:packages"], prerequisite: true },
  { name: "types:check", cmd: ["npm", "run", "--silent", "types:check"] },
  { name: "typecheck", cmd: ["npm", "run", "--silent", "typecheck"] },
  { name: "db:check", cmd: ["npm", "run", "--silent", "db:check"] },
  { name: "rooms:check", cmd: ["npm", "run", "--silent", "rooms:check"] },
  { name: "main", vitest: "vitest.config.ts" },
  { name: "alone", vitest: "vitest.alone.config.ts" },
  { name: "chat", vitest: "vitest.chat.config.ts" },
  { name: "e2e", vitest: "vitest.e2e.config.ts" },
];

function parseArgs(argv) {
  const split = argv.indexOf("--");
  const own = split < 0 ? argv : argv.slice(0, split);
  const filters = split < 0 ? [] : argv.slice(split + 1);
  let only = null;
  for (let i = 0; i < own.length; i++) {
    const a = own[i];
    if (a === "--only") only = own[++i];
    else if (a.startsWith("--only=")) only = a.slice("--only=".length);
    else {
      console.error(`✖ unknown option ${a}; usage: npm test [-- --only step,step] [-- vitest file filters]`);
      process.exit(2);
    }
  }
  const names =
    only
      ?.split(",")
      .map((s) => s.trim())
      .filter(Boolean) ?? null;
  const unknown = (names ?? []).filter((n) => !STEPS.some((s) => s.name === n));
  if (unknown.length) {
    console.error(`✖ unknown step ${unknown.join(", ")}; the steps are ${STEPS.map((s) => s.name).join(", ")}`);
    process.exit(2);
  }
  return { names, filters };
}

/**
 * Runs one command with the terminal's output. The workerd suites open many sockets and files at once: the soft
 * limit on open files is raised to the hard one first where a shell allows it (many systems default to 1024).
 */
function run(cmd) {
  const raised = process.platform === "win32" ? cmd : ["sh", "-c", 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', "sh", ...cmd];
  const r = spawnSync(raised[0], raised.slice(1), { stdio: "inherit" });
  if (r.error) console.error(`✖ could not start ${cmd.join(" ")}: ${r.error.message}`);
  return { code: r.status ?? 1, signal: r.signal };
}

/** The counts in vitest's JSON report, or null when the suite ended before writing it. */
function countsOf(file) {
  try {
    const j = JSON.parse(readFileSync(file, "utf8"));
    const failures = [];
    for (const file of j.testResults ?? [])
      for (const a of file.assertionResults ?? [])
        if (a.status === "failed") failures.push({ file: path.relative(process.cwd(), file.name), test: a.fullName, why: firstLine(a.failureMessages?.[0]) });
    return { passed: j.numPassedTests, failed: j.numFailedTests, skipped: j.numPendingTests + (j.numTodoTests ?? 0), failures };
  } catch {
    return null;
  }
}

/** A failure message's first line, without colour codes, cut to one screen line. */
function firstLine(message = "") {
  // vitest colours its messages with ANSI escapes (ESC [ … m).
  const colour = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
  const line =
    message
      .replace(colour, "")
      .split("\n")
      .find((l) => l.trim()) ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

const { names, filters } = parseArgs(process.argv.slice(2));
const reports = mkdtempSync(path.join(tmpdir(), "test-all-"));
const results = [];
let stopped = null;
for (const step of STEPS) {
  if (names && !names.includes(step.name)) continue;
  if (stopped) {
    results.push({ step, status: "not run" });
    continue;
  }
  console.log(`\n━━ ${step.name} ━━`);
  const report = path.join(reports, `${step.name}.json`);
  const cmd = step.vitest
    ? ["vitest", "run", "--config", step.vitest, "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...filters]
    : step.cmd;
  const t0 = Date.now();
  const { code, signal } = run(cmd);
  const ms = Date.now() - t0;
  const counts = step.vitest ? countsOf(report) : null;
  // vitest exits 1 when a filter matches no file of this suite: with filters, that is not a failure.
  const noFiles = step.vitest && filters.length && counts && counts.passed + counts.failed + counts.skipped === 0;
  const ok = code === 0 || Boolean(noFiles);
  results.push({ step, status: noFiles ? "no files" : ok ? "ok" : "FAILED", code: signal ?? code, ms, counts });
  if (signal === "SIGINT" || signal === "SIGTERM") stopped = `interrupted (${signal})`;
  else if (!ok && step.prerequisite) stopped = `${step.name} failed, and every later step needs it`;
}
rmSync(reports, { recursive: true, force: true });

const rows = [["step", "result", "exit", "time", "passed", "failed", "skipped"]];
for (const r of results) {
  const c = r.counts;
  const n = (k) => (c ? String(c[k]) : r.step.vitest && r.status !== "not run" ? "?" : "");
  rows.push([
    r.step.name,
    r.status,
    r.code === undefined ? "" : String(r.code),
    r.ms === undefined ? "" : seconds(r.ms),
    n("passed"),
    n("failed"),
    n("skipped"),
  ]);
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
console.log("\n━━ summary ━━");
for (const row of rows) console.log(row.map((cell, i) => (i >= 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join("  "));
// The failed tests by name, last: CI shows the end of the output, and this is what a person needs from it.
for (const r of results) for (const f of r.counts?.failures ?? []) console.log(`✖ ${r.step.name}: ${f.file} › ${f.test}\n    ${f.why}`);
const failedSteps = results.filter((r) => r.status === "FAILED" || r.status === "not run");
if (stopped) console.log(`stopped early: ${stopped}`);
if (failedSteps.length) console.log(`✖ ${failedSteps.length} of ${results.length} steps did not pass: ${failedSteps.map((r) => r.step.name).join(", ")}`);
const unknownCounts = results.filter((r) => r.step.vitest && r.status === "FAILED" && !r.counts);
if (unknownCounts.length) console.log(`(${unknownCounts.map((r) => r.step.name).join(", ")} ended before reporting its tests: not counted below)`);
const total = (k) => results.reduce((sum, r) => sum + (r.counts?.[k] ?? 0), 0);
console.log(`${total("passed")} passed, ${total("failed")} failed`);
process.exit(failedSteps.length ? 1 : 0);
