/**
 * Adoption, as the README's "Use it with your agents" has a new user do it, end to end. Observing takes one line:
 * the fixture Worker (test/fixtures/adoption) names the console in its `tail_consumers`, with no package and no
 * Queue. Acting takes the admin package alone: pack only @agent-oncall/admin-rpc, install the tarball into a
 * scratch project outside the repo (which then holds no @agent-oncall/telemetry), write a plain Agent with
 * `withAdminRpc` and no telemetry mixin, typecheck it under strict settings, and run it next to the console. The
 * console must show a real eviction and the recovery as the SDK records them, say it does not know what only the
 * telemetry package's outbox reported (stash snapshots), and run an audited force idle and trigger alarm.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fiberIncidentId } from "@agent-oncall/telemetry/ids";
import { afterAll, expect, it } from "vitest";
import { prepareDevStack, waitForHealth } from "../../scripts/dev-stack.ts";
import { repoRoot } from "../../scripts/wrangler-config.ts";
import type { AuditRow, EventRow, IncidentRow, Page, Run as StoredRun } from "../../src/store/read-models";
import { patient } from "../patience";
import { type DevServer, d1, devSession, kill, stop } from "./wrangler-dev";

const PORT = 8795;
const FIXTURE = path.join(repoRoot, "test/fixtures/adoption");
const AGENT_CLASS = "ImportAgent";
const AGENT_NAME = "nightly-import";
const REASON = "adoption test: stop the import";
const ALARM_REASON = "adoption test: run the alarm";
/** What the SDK's events leave unknown about a recovered plain fiber (fiber:recovery:handled says only that the hook ran). */
const HOOK_RAN = "its recovery hook ran; the SDK's events do not say whether it resumed or dropped the work";
const USER = "adopter@example.com";

const root = mkdtempSync(path.join(tmpdir(), "adoption-"));
let server: DevServer | undefined;

afterAll(async () => {
  if (server) await stop(server); // SIGTERM to the process group, SIGKILL if it lingers
  rmSync(root, { recursive: true, force: true });
});

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs a command to completion (async, so the test's timers keep running). */
function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += String(d)));
    p.stderr.on("data", (d) => (stderr += String(d)));
    const timer = setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
    p.on("error", reject);
    p.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** npm in a project of its own: without the npm_* variables of the `npm exec` that started this test. */
function scratchEnv(): NodeJS.ProcessEnv {
  // Not NodeJS.ProcessEnv: wrangler types declares the console's vars on it (worker/worker-configuration.d.ts).
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(package_|lifecycle_|command$|config_local_prefix$)/.test(k) || k === "INIT_CWD") continue;
    env[k] = v;
  }
  return env as NodeJS.ProcessEnv;
}

const timings: Record<string, number> = {};
async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    timings[name] = Date.now() - t0;
    console.log(`[adoption] ${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}

/** Like wrangler-dev.ts's `until`: `timeoutMs` as on a quiet machine, with test/patience.ts's allowance. */
async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + patient(timeoutMs);
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(last)})\n${server?.logs.join("").slice(-3000) ?? ""}`);
    await new Promise((r) => setTimeout(r, 400));
  }
}

const json = async <T>(url: string): Promise<{ status: number; body: T }> => {
  const r = await fetch(url, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(15_000) });
  return { status: r.status, body: (await r.json()) as T };
};
const html = async (url: string): Promise<{ status: number; text: string }> => {
  const r = await fetch(url, { headers: { Accept: "text/html" }, signal: AbortSignal.timeout(15_000) });
  return { status: r.status, text: await r.text() };
};

it("a Worker observed by its tail line alone, with the admin package alone for actions: the console sees its eviction and recovery as the SDK records them, and force idle and trigger alarm are audited", async () => {
  const t0 = Date.now();
  const packs = path.join(root, "packs");
  const app = path.join(root, "app");
  const persistDir = path.join(root, "state");
  mkdirSync(packs);

  // 1. Pack the admin package (the only one the README installs) as it would be published, from the dist/ the test
  //    command built before the suites.
  // Not through prepack: it empties and rebuilds dist/, which the other e2e files' running wrangler dev watch
  // (their demo fleet would reload mid-test). `npm run packages:check` runs prepack as publishing does.
  const tarballs = await phase("pack", async () => {
    const r = await run("npm", ["pack", "--ignore-scripts", "-w", "@agent-oncall/admin-rpc", "--pack-destination", packs, "--json"], {
      cwd: repoRoot,
    });
    expect(r.code, `npm pack failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
    const out = JSON.parse(r.stdout.slice(r.stdout.indexOf("["))) as { name: string; filename: string }[];
    expect(out.map((p) => p.name)).toEqual(["@agent-oncall/admin-rpc"]);
    return { adminRpc: path.join(packs, out[0]!.filename) };
  });

  // 2. A scratch project outside the repo: the fixture's sources, and a package.json on the admin tarball with the
  //    versions the repo locks (so they come from the npm cache). No override: the admin package alone needs none.
  await phase("install", async () => {
    cpSync(FIXTURE, app, { recursive: true });
    const lock = JSON.parse(readFileSync(path.join(repoRoot, "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
    const locked = (name: string) =>
      lock.packages[`node_modules/${name}`]?.version ??
      (() => {
        throw new Error(`${name} is not in package-lock.json`);
      })();
    const pkg = {
      name: "adoption-app",
      private: true,
      type: "module",
      dependencies: {
        "@agent-oncall/admin-rpc": `file:${tarballs.adminRpc}`,
        agents: "0.32.0",
        zod: locked("zod"),
      },
      devDependencies: { typescript: locked("typescript"), "@cloudflare/workers-types": locked("@cloudflare/workers-types") },
    };
    writeFileSync(path.join(app, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
    const r = await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "http"], {
      cwd: app,
      env: scratchEnv(),
      timeoutMs: 240_000,
    });
    expect(r.code, `npm install failed:\n${r.stdout}\n${r.stderr.slice(-5000)}`).toBe(0);
    // Our package comes from its tarball only: npm got nothing of ours from a registry. It does look up the admin
    // package's optional peer (@agent-oncall/telemetry) by name, finds none (a 404) and installs none.
    const asked = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.includes("http fetch") && /@agent-oncall/i.test(l));
    expect(
      asked.filter((l) => !/ 404 /.test(l)),
      "npm got our packages from a registry",
    ).toEqual([]);
    expect(
      asked.filter((l) => !/@agent-oncall%2ftelemetry /i.test(l)),
      "npm looked up more than the optional peer",
    ).toEqual([]);
    const installed = (name: string) => JSON.parse(readFileSync(path.join(app, "node_modules", name, "package.json"), "utf8")) as { version: string };
    expect(installed("@agent-oncall/admin-rpc").version).toBe("0.1.0");
    // The package count: the admin package is the only one of ours installed (its telemetry peer is optional).
    expect(readdirSync(path.join(app, "node_modules/@agent-oncall"))).toEqual(["admin-rpc"]);
    expect(existsSync(path.join(app, "node_modules/@agent-oncall/telemetry"))).toBe(false);
    expect(installed("agents").version).toBe("0.32.0");
  });

  // 3. Typecheck with the scratch project's own TypeScript under its strict tsconfig.
  await phase("typecheck", async () => {
    const tsc = path.join(app, "node_modules/typescript/bin/tsc");
    const r = await run(process.execPath, [tsc, "--noEmit", "-p", app], { cwd: app });
    expect(r.code, `tsc --noEmit failed in the scratch project:\n${r.stdout}\n${r.stderr}`).toBe(0);
    // Even without skipLibCheck (which agents 0.32's own .d.ts need), none of the errors is in our packages' .d.ts.
    const lib = await run(process.execPath, [tsc, "--noEmit", "-p", app, "--skipLibCheck", "false"], { cwd: app });
    const ours = lib.stdout.split("\n").filter((l) => l.includes("node_modules/@agent-oncall/"));
    expect(ours, `our .d.ts fail under the strict settings:\n${ours.join("\n")}`).toEqual([]);
  });

  // 4. The console next to the user's Worker, in one wrangler dev.
  const stack = await phase("dev stack: configs + migrations", async () =>
    prepareDevStack({
      app: path.join(app, "wrangler.jsonc"),
      port: PORT,
      persistTo: persistDir,
      consoleVars: { AUTH_MODE: "dev", DEV_USER: USER, DEV_ROLE: "operator", POLL_SECONDS: "2" },
    }),
  );
  expect(stack.agentClasses).toEqual([AGENT_CLASS]);
  await phase("wrangler dev: start", async () => {
    const proc = spawn("npx", stack.args, { cwd: repoRoot, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
    const logs: string[] = [];
    proc.stdout.on("data", (d) => logs.push(String(d)));
    proc.stderr.on("data", (d) => logs.push(String(d)));
    server = { base: stack.base, appBase: stack.appBase, port: PORT, persistDir, proc, logs };
    if (!(await waitForHealth(stack.base, 90_000, () => proc.exitCode === null))) {
      kill(server, "SIGKILL");
      throw new Error(`wrangler dev did not start on ${stack.base}:\n${logs.join("").slice(-3000)}`);
    }
  });
  const base = stack.base;
  const appUrl = (p: string) => `${stack.appBase}${p}?name=${encodeURIComponent(AGENT_NAME)}`;
  /** The SDK's own record of the agent's live runs, through the admin package's adminListRuns (the fixture's route). */
  const sdkRuns = async () => {
    const r = await fetch(appUrl("/sdk-runs"), { signal: AbortSignal.timeout(30_000) });
    const body = (await r.json()) as { ok: boolean; value: { runs: { id: string; name: string; kind: string; snapshotBytes: number }[] } };
    expect(body.ok, JSON.stringify(body)).toBe(true);
    return body.value;
  };

  // 5a. The import runs and stashes page 3. The SDK's own record (read through the admin package) holds the run and
  //     its snapshot. Nothing is awaited in the console yet: the classic tail sends an invocation's events when it ends.
  const fiberId = await phase("start import → the SDK records the run and its stash", async () => {
    const r = await fetch(appUrl("/start"), { method: "POST", signal: AbortSignal.timeout(30_000) });
    expect(r.status).toBe(200);
    const { fiberId } = (await r.json()) as { fiberId: string };
    const sdk = await sdkRuns();
    expect(sdk.runs).toEqual([expect.objectContaining({ id: fiberId, name: "import", kind: "fiber" })]);
    expect(sdk.runs[0]!.snapshotBytes).toBeGreaterThan(0);
    return fiberId;
  });

  // 5b. A real eviction mid-fiber, then a wake: the SDK finds the orphaned run and our onFiberRecovered resumes it.
  const recovery = await phase("evict + wake → recovery", async () => {
    const evicted = await fetch(appUrl("/evict"), { method: "POST", signal: AbortSignal.timeout(30_000) });
    expect(await evicted.json()).toMatchObject({ evicted: true });
    const woke = await until("the woken agent to report its recovery", async () => {
      const r = await fetch(appUrl("/wake"), { signal: AbortSignal.timeout(30_000) });
      const body = (await r.json()) as { recoveries?: { fiberId: string; fiberName: string; from: unknown; resumedAs: string }[] };
      return body.recoveries?.length ? body.recoveries : undefined;
    });
    // The SDK handed the hook the stash it kept across the eviction.
    expect(woke).toEqual([{ fiberId, fiberName: "import", from: { step: 3, cursor: "page-3" }, resumedAs: expect.any(String) }]);
    // The SDK's record now: the evicted run's row is gone, the resumed run holds one.
    const sdk = await sdkRuns();
    expect(sdk.runs).toEqual([expect.objectContaining({ id: woke[0]!.resumedAs, name: "import:resumed", kind: "fiber" })]);
    return woke[0]!;
  });

  // 5c. What the on-call person sees, from the tail alone: the recovery incident with the SDK's recovery events, the
  //     evicted fiber and the resumed one. What the SDK's events do not say (what the hook did) reads unknown, and
  //     what only the telemetry outbox reported (stash snapshots) reads absent, never 0.
  const incidentId = fiberIncidentId(AGENT_CLASS, AGENT_NAME, fiberId);
  await phase("console: fiber + incident drill-down", async () => {
    const incident = await until(
      "the recovery incident with the SDK's three recovery events",
      async () => {
        const r = await json<{ incident: IncidentRow; timeline: Page<EventRow> }>(`${base}/incidents/${encodeURIComponent(incidentId)}`);
        return r.status === 200 && r.body.timeline.items.some((e) => e.type === "fiber.recovery.handled") ? r.body : undefined;
      },
      6_000,
    );
    // The SDK's events say the recovery hook ran (fiber:recovery:handled), not whether it resumed or dropped the work
    // (only the agent's own record above says it resumed): the console closes the incident as not known, and says why.
    expect(incident.incident).toMatchObject({ status: "ended_unreported", closedByReason: HOOK_RAN });
    expect(incident.incident).toMatchObject({ incidentId, kind: "fiber", agentClass: AGENT_CLASS, agentName: AGENT_NAME, fiberId });
    const types = incident.timeline.items.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["fiber.recovery.detected", "fiber.recovery.attempt", "fiber.recovery.handled"]));

    const listed = await json<Page<IncidentRow>>(`${base}/incidents?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
    expect(listed.body.items.map((i) => i.incidentId)).toContain(incidentId);

    const drill = await html(`${base}/incidents/${encodeURIComponent(incidentId)}`);
    expect(drill.status).toBe(200);
    for (const t of ["fiber.recovery.detected", "fiber.recovery.attempt", "fiber.recovery.handled"]) expect(drill.text).toContain(`data-type="${t}"`);
    expect(drill.text).toContain(fiberId);

    // Both fibers, as the SDK's records have them: the evicted one ended (its row is gone) in a way only the hook
    // knows, the resumed one runs (it holds the SDK's only row).
    const fibers = await until("both fibers in /runs", async () => {
      const list = await json<Page<StoredRun & { status: string }>>(`${base}/runs?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
      return list.body.items.length === 2 ? list.body.items : undefined;
    });
    const evicted = fibers.find((f) => f.fiberId === fiberId);
    expect(evicted).toMatchObject({ name: "import", status: "unknown", outcome: "unknown", reason: HOOK_RAN });
    expect(fibers.find((f) => f.fiberId === recovery.resumedAs)).toMatchObject({ name: "import:resumed", status: "running", outcome: null });
    // The stash is the SDK's own record, never a tail event: no snapshot is shown, none is counted as 0 bytes.
    expect(evicted).toMatchObject({ snapshotAt: null, snapshotBytes: null });
    const fiberPage = await html(`${base}/runs/${encodeURIComponent(fiberId)}`);
    expect(fiberPage.status).toBe(200);
    expect(fiberPage.text).not.toContain("page-3");
    // The SDK held a stash of this run (5a): the page must say it does not know, not that the run never stashed.
    expect(fiberPage.text).toContain('data-testid="snapshot-unknown"');
    expect(fiberPage.text).not.toContain("never stashed");
    // The agent page says its events arrive from its Worker's tail, and that no telemetry outbox reports to it.
    const agentPage = await html(`${base}/agents/${AGENT_CLASS}/${encodeURIComponent(AGENT_NAME)}`);
    expect(agentPage.status).toBe(200);
    expect(agentPage.text).toContain('data-testid="capture-paths" data-paths="tail"');
    expect(agentPage.text).toMatch(/data-testid="live-telemetry" data-tone="unknown"[^>]*>not reported: the agent has no telemetry outbox/);
  });

  // 5d. The operator stops the resumed import from the console; the action is audited with what it found and left.
  await phase("force idle + audit", async () => {
    const session = await devSession(base);
    const r = await session.post("/actions/force-idle", { agentClass: AGENT_CLASS, agentName: AGENT_NAME, reason: REASON });
    const body = (await r.json()) as { ok: boolean; value?: { noop: boolean; abortedRuns: string[]; after: { runCount: number } }; error?: unknown };
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.value).toMatchObject({ noop: false, abortedRuns: [recovery.resumedAs], after: { runCount: 0 } });
    // The SDK's record agrees: no run is left.
    expect((await sdkRuns()).runs).toEqual([]);

    const audit = await json<Page<AuditRow>>(`${base}/audit?targetName=${AGENT_NAME}`);
    expect(audit.body.items).toEqual([
      expect.objectContaining({
        actor: USER,
        role: "operator",
        action: "force_idle",
        targetClass: AGENT_CLASS,
        targetName: AGENT_NAME,
        reason: REASON,
        result: "ok",
      }),
    ]);
    const rows = d1(
      persistDir,
      `SELECT actor, action, target_class, target_name, reason, result, before, after FROM audit_log WHERE target_name = '${AGENT_NAME}'`,
    ) as { before: string; after: string }[];
    expect(rows).toEqual([
      {
        actor: USER,
        action: "force_idle",
        target_class: AGENT_CLASS,
        target_name: AGENT_NAME,
        reason: REASON,
        result: "ok",
        before: expect.any(String),
        after: expect.any(String),
      },
    ]);
    // Before: the resumed run was running; after: none is. What only the telemetry outbox reported (events shipped,
    // its pipeline's counts) reads absent, never 0.
    expect(JSON.parse(rows[0]!.before)).toMatchObject({ status: "running", runCount: 1, eventsShippedThrough: null, telemetry: null });
    expect(JSON.parse(rows[0]!.after)).toMatchObject({ runCount: 0 });
  });

  // 5e. Trigger alarm, also through the admin package alone: it runs, and is audited.
  await phase("trigger alarm + audit", async () => {
    const session = await devSession(base);
    const r = await session.post("/actions/trigger-alarm", { agentClass: AGENT_CLASS, agentName: AGENT_NAME, reason: ALARM_REASON });
    const body = (await r.json()) as { ok: boolean; value?: { outcome: string }; error?: unknown };
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.value).toMatchObject({ outcome: "ran" });
    const rows = d1(persistDir, `SELECT actor, action, target_name, reason, result FROM audit_log WHERE action = 'trigger_alarm'`);
    expect(rows).toEqual([{ actor: USER, action: "trigger_alarm", target_name: AGENT_NAME, reason: ALARM_REASON, result: "ok" }]);
  });

  timings.total = Date.now() - t0;
  console.log(
    `[adoption] phases (s): ${Object.entries(timings)
      .map(([k, v]) => `${k}=${(v / 1000).toFixed(1)}`)
      .join(", ")}`,
  );
}, 420_000);
