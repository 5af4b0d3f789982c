/**
 * Adoption: what a new user does, end to end. Pack both agent-side packages, install the tarballs into a
 * scratch project outside the repo, write a plain Agent with the two mixins (test/fixtures/adoption),
 * typecheck it under strict settings, run it next to the console, and watch the console see a real
 * eviction, the recovery, and an audited force-idle.
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

it("a new user packs, installs and typechecks the packages, and the console sees their agent's eviction, recovery and an audited force-idle", async () => {
  const t0 = Date.now();
  const packs = path.join(root, "packs");
  const app = path.join(root, "app");
  const persistDir = path.join(root, "state");
  mkdirSync(packs);

  // 1. Pack both packages as they would be published, from the dist/ the test command built before the suites.
  // Not through prepack: it empties and rebuilds dist/, which the other e2e files' running wrangler dev watch
  // (their demo fleet would reload mid-test). `npm run packages:check` runs prepack as publishing does.
  const tarballs = await phase("pack", async () => {
    const r = await run(
      "npm",
      ["pack", "--ignore-scripts", "-w", "@agent-oncall/telemetry", "-w", "@agent-oncall/admin-rpc", "--pack-destination", packs, "--json"],
      {
        cwd: repoRoot,
      },
    );
    expect(r.code, `npm pack failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
    const out = JSON.parse(r.stdout.slice(r.stdout.indexOf("["))) as { name: string; filename: string }[];
    const file = (name: string) => path.join(packs, out.find((p) => p.name === name)!.filename);
    return { telemetry: file("@agent-oncall/telemetry"), adminRpc: file("@agent-oncall/admin-rpc") };
  });

  // 2. A scratch project outside the repo: the fixture's sources, and a package.json on the tarballs with the
  //    versions the repo locks (so they come from the npm cache).
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
        "@agent-oncall/telemetry": `file:${tarballs.telemetry}`,
        "@agent-oncall/admin-rpc": `file:${tarballs.adminRpc}`,
        agents: "0.32.0",
        zod: locked("zod"),
      },
      devDependencies: { typescript: locked("typescript"), "@cloudflare/workers-types": locked("@cloudflare/workers-types") },
      // telemetry depends on @agent-oncall/admin-rpc@0.1.0 (its facts entry), which is on no registry: without this npm
      // asks the registry for it (a 404) even though the tarball above satisfies it.
      overrides: { "@agent-oncall/admin-rpc": "$@agent-oncall/admin-rpc" },
    };
    writeFileSync(path.join(app, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
    const r = await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "http"], {
      cwd: app,
      env: scratchEnv(),
      timeoutMs: 240_000,
    });
    expect(r.code, `npm install failed:\n${r.stdout}\n${r.stderr.slice(-5000)}`).toBe(0);
    // Our packages come from the tarballs only: npm never asked a registry for them.
    const asked = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.includes("http fetch") && /@agent-oncall/i.test(l));
    expect(asked, "npm asked a registry for our packages").toEqual([]);
    const installed = (name: string) => JSON.parse(readFileSync(path.join(app, "node_modules", name, "package.json"), "utf8")) as { version: string };
    expect(installed("@agent-oncall/telemetry").version).toBe("0.1.0");
    expect(installed("@agent-oncall/admin-rpc").version).toBe("0.1.0");
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

  // 5a. The import runs, stashes page 3, and the console shows that checkpoint.
  const fiberId = await phase("start import → stash visible in the console", async () => {
    const r = await fetch(appUrl("/start"), { method: "POST", signal: AbortSignal.timeout(30_000) });
    expect(r.status).toBe(200);
    const { fiberId } = (await r.json()) as { fiberId: string };
    await until("the running fiber in /runs", async () => {
      const list = await json<Page<StoredRun>>(`${base}/runs?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
      return list.body.items.find((f) => f.fiberId === fiberId && f.outcome === null && f.snapshotAt !== null);
    });
    await until("the page-3 checkpoint on the fiber page", async () => {
      const page = await html(`${base}/runs/${encodeURIComponent(fiberId)}`);
      return page.status === 200 && page.text.includes("page-3");
    });
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
    expect(woke).toEqual([{ fiberId, fiberName: "import", from: { step: 3, cursor: "page-3" }, resumedAs: expect.any(String) }]);
    return woke[0]!;
  });

  // 5c. What the on-call person sees: the fiber with its last checkpoint, and the recovery incident's drill-down.
  const incidentId = fiberIncidentId(AGENT_CLASS, AGENT_NAME, fiberId);
  await phase("console: fiber + incident drill-down", async () => {
    const incident = await until("the recovered incident", async () => {
      const r = await json<{ incident: IncidentRow; timeline: Page<EventRow> }>(`${base}/incidents/${encodeURIComponent(incidentId)}`);
      return r.status === 200 && r.body.incident.status === "recovered" ? r.body : undefined;
    });
    expect(incident.incident).toMatchObject({ incidentId, kind: "fiber", agentClass: AGENT_CLASS, agentName: AGENT_NAME, fiberId });
    const types = incident.timeline.items.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["fiber.recovery.detected", "fiber.recovery.attempt", "fiber.recovery.handled"]));

    const listed = await json<Page<IncidentRow>>(`${base}/incidents?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
    expect(listed.body.items.map((i) => i.incidentId)).toContain(incidentId);

    const drill = await html(`${base}/incidents/${encodeURIComponent(incidentId)}`);
    expect(drill.status).toBe(200);
    for (const t of ["fiber.recovery.detected", "fiber.recovery.attempt", "fiber.recovery.handled"]) expect(drill.text).toContain(`data-type="${t}"`);
    expect(drill.text).toContain(fiberId);

    const fibers = await json<Page<StoredRun>>(`${base}/runs?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
    expect(fibers.body.items.find((f) => f.fiberId === fiberId)).toMatchObject({ name: "import", outcome: "recovered" });
    const fiberPage = await html(`${base}/runs/${encodeURIComponent(fiberId)}`);
    expect(fiberPage.status).toBe(200);
    expect(fiberPage.text).toContain("Last-known snapshot");
    expect(fiberPage.text).toContain("page-3");
    // The resumed fiber reached the console too, with its own checkpoint.
    await until("the resumed fiber in /runs", async () => {
      const list = await json<Page<StoredRun>>(`${base}/runs?agentClass=${AGENT_CLASS}&agentName=${AGENT_NAME}`);
      return list.body.items.find((f) => f.fiberId === recovery.resumedAs && f.name === "import:resumed");
    });
    // The agent page says the user's agent's events reach the console, from its own telemetry's counts (contract 8).
    const agentPage = await html(`${base}/agents/${AGENT_CLASS}/${encodeURIComponent(AGENT_NAME)}`);
    expect(agentPage.status).toBe(200);
    expect(agentPage.text).toMatch(/data-testid="live-telemetry" data-tone="ok"[^>]*>shipping: \d+ events? sent since this instance started/);
  });

  // 5d. The operator stops the resumed import from the console; the action is audited.
  await phase("force idle + audit", async () => {
    const session = await devSession(base);
    const r = await session.post("/actions/force-idle", { agentClass: AGENT_CLASS, agentName: AGENT_NAME, reason: REASON });
    const body = (await r.json()) as { ok: boolean; value?: { noop: boolean; abortedRuns: string[]; after: { runCount: number } }; error?: unknown };
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.value).toMatchObject({ noop: false, abortedRuns: [recovery.resumedAs], after: { runCount: 0 } });

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
    const rows = d1(persistDir, `SELECT actor, action, target_class, target_name, reason, result FROM audit_log WHERE target_name = '${AGENT_NAME}'`);
    expect(rows).toEqual([{ actor: USER, action: "force_idle", target_class: AGENT_CLASS, target_name: AGENT_NAME, reason: REASON, result: "ok" }]);
  });

  timings.total = Date.now() - t0;
  console.log(
    `[adoption] phases (s): ${Object.entries(timings)
      .map(([k, v]) => `${k}=${(v / 1000).toFixed(1)}`)
      .join(", ")}`,
  );
}, 420_000);
