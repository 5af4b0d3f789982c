// Runs the console next to a Worker of agents in ONE `wrangler dev` (gateway + console + your Worker), on local
// D1/Queues/R2 in one persist dir. `npm start` runs it with the demo fleet; `npm run dev:with -- --app <config>`
// with yours. Two separate `wrangler dev` processes linked by the dev registry do not work for agents (the
// console cannot wake an evicted agent through the registry's proxy), hence one process.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { DevArgsError, inspectorPortFor, parseDevArgs } from "./dev-args.ts";
import { thinkPeerProblem } from "./think-peer.ts";
import { deriveConsoleConfig, fromRoot, hostedAgentClasses, readAbsolute, readWranglerConfig, repoRoot, writeGeneratedConfig } from "./wrangler-config.ts";

export type DevStackOptions = {
  /** The agents' Worker config (wrangler.jsonc). */
  app: string;
  port: number;
  persistTo: string;
  /** Vars for the console (e.g. AUTH_MODE=dev). */
  consoleVars?: Record<string, string>;
  /** Path prefix under which the app's own routes answer (default /app). */
  appPrefix?: string;
  /** wrangler's inspector port; unset, the app config's `dev.inspector_port`, else wrangler's default (9229). */
  inspectorPort?: number;
  /** More arguments for `wrangler dev`, appended as given. */
  wranglerArgs?: string[];
};

export type DevStack = { args: string[]; base: string; appBase: string; appName: string; agentClasses: string[] };

export const DEMO_FLEET_CONFIG = "examples/demo-fleet/wrangler.jsonc";

/** Applies the console's D1 migrations to a persist dir: to every D1 the console binds (DB, and store partitions DB_P1 …). */
export function migrate(persistTo: string): void {
  const bindings = (readWranglerConfig(fromRoot("wrangler.jsonc")).d1_databases ?? []).map((d) => d.binding ?? "DB");
  for (const binding of bindings.length ? bindings : ["DB"]) {
    const r = spawnSync("npx", ["wrangler", "d1", "migrations", "apply", binding, "--local", "--persist-to", persistTo, "-c", "wrangler.jsonc"], {
      cwd: repoRoot,
      env: { ...process.env, CI: "true" },
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`applying D1 migrations to ${binding} in ${persistTo} failed:\n${r.stdout}\n${r.stderr}`);
  }
}

/** The nearest package.json at or above `dir` (the app's project), or null. */
function nearestPackageJson(dir: string): { dir: string; deps: Record<string, unknown> } | null {
  for (let d = dir; ; d = path.dirname(d)) {
    const file = path.join(d, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { dependencies?: Record<string, unknown>; devDependencies?: Record<string, unknown> };
      return { dir: d, deps: { ...pkg.devDependencies, ...pkg.dependencies } };
    }
    if (path.dirname(d) === d) return null;
  }
}

/** Whether `name` is installed where a bundler resolving from `dir` finds it (node_modules at or above it). */
function installedFrom(dir: string, name: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, "node_modules", name, "package.json"))) return true;
    if (path.dirname(d) === d) return false;
  }
}

/**
 * Writes the gateway and console configs for this app (the console binds every
 * agent class the app hosts, by script_name), applies migrations, and returns
 * the `wrangler dev` arguments.
 */
export function prepareDevStack(o: DevStackOptions): DevStack {
  const appFile = fromRoot(o.app);
  const app = readAbsolute(appFile);
  const appPkg = nearestPackageJson(path.dirname(appFile));
  const peer = appPkg && thinkPeerProblem(appPkg.deps, (name) => installedFrom(appPkg.dir, name), appPkg.dir);
  if (peer) throw new Error(peer);
  const agentClasses = hostedAgentClasses(app);
  if (agentClasses.length === 0) throw new Error(`${o.app} declares no Durable Object classes of its own: nothing for the console to observe`);
  const consoleName = readWranglerConfig(fromRoot("wrangler.jsonc")).name;
  const consoleFile = writeGeneratedConfig(
    // Named per port too: two stacks of one app on this machine (e2e files run in parallel) each keep their own vars.
    `console.${app.name}.${o.port}.jsonc`,
    deriveConsoleConfig({ agents: agentClasses.map((className) => ({ className, scriptName: app.name })), vars: o.consoleVars ?? {} }),
  );
  const prefix = o.appPrefix ?? "/app";
  const gatewayFile = writeGeneratedConfig(`gateway.${app.name}.${o.port}.jsonc`, {
    name: "dev-gateway",
    main: path.join(repoRoot, "scripts/dev-gateway/index.ts"),
    compatibility_date: "2026-11-01",
    services: [
      { binding: "CONSOLE", service: consoleName },
      { binding: "APP", service: app.name },
    ],
    vars: { APP_PREFIX: prefix },
  });
  const persistTo = fromRoot(o.persistTo);
  migrate(persistTo);
  const base = `http://127.0.0.1:${o.port}`;
  // wrangler reads dev settings from the first config only (the gateway's), so the app's own inspector port is passed here.
  const inspectorPort = o.inspectorPort ?? inspectorPortFor({}, app);
  return {
    args: [
      "wrangler",
      "dev",
      "-c",
      gatewayFile,
      "-c",
      consoleFile,
      "-c",
      appFile,
      "--ip",
      "127.0.0.1",
      "--port",
      String(o.port),
      "--persist-to",
      persistTo,
      ...(inspectorPort === undefined ? [] : ["--inspector-port", String(inspectorPort)]),
      ...(o.wranglerArgs ?? []),
    ],
    base,
    appBase: `${base}${prefix}`,
    appName: app.name,
    agentClasses,
  };
}

/** One reconciliation pass through the console's API (as its cron would run it), logging what it found. */
async function reconcileNow(base: string): Promise<void> {
  try {
    const { token } = (await (await fetch(`${base}/api/csrf`, { signal: AbortSignal.timeout(10_000) })).json()) as { token: string };
    const r = await fetch(`${base}/api/reconcile`, { method: "POST", headers: { Origin: base, "X-CSRF-Token": token }, signal: AbortSignal.timeout(60_000) });
    const body = (await r.json()) as { ok: boolean; value?: { asked: number; findings: unknown[]; unanswered: unknown[] }; error?: { message: string } };
    if (!body.ok || !body.value) return console.warn(`[reconcile] ${r.status}: ${body.error?.message ?? "no answer"}`);
    if (body.value.asked)
      console.log(`[reconcile] asked ${body.value.asked} agents: ${body.value.findings.length} findings, ${body.value.unanswered.length} could not answer`);
  } catch (e) {
    console.warn(`[reconcile] failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Polls the console's /health until it answers. */
export async function waitForHealth(base: string, timeoutMs: number, alive: () => boolean = () => true): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && alive()) {
    try {
      const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      if (r.ok) return true;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** `preferred` if nothing listens there on loopback, else a port the OS says is free. */
export function freePort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | null>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(null));
      srv.listen(port, "127.0.0.1", () => {
        const got = (srv.address() as { port: number }).port;
        srv.close(() => resolve(got));
      });
    });
  return tryListen(preferred).then((p) => p ?? tryListen(0).then((q) => q ?? preferred));
}

const USAGE = `usage: npm run dev:with -- --app <path/to/wrangler.jsonc> [--port 8787] [--persist-to .wrangler/state] [--inspector-port N] [--var KEY=VALUE …] [wrangler dev options…]

Runs the console (dev auth) next to your Worker in one wrangler dev, with migrations applied to the persist dir.
The console answers at http://127.0.0.1:<port>/, your Worker under http://127.0.0.1:<port>/app/…
Options: --prefix /app (where your Worker answers), --tick <path> --tick-ms <ms> (POST <path> on your Worker
periodically, as npm start does for the demo fleet), --inspector-port N (default: your config's dev.inspector_port,
else 9229 if free, else any free port). Any other option, and everything after a bare --, goes to wrangler dev.`;

async function main(): Promise<void> {
  let values: ReturnType<typeof parseDevArgs>;
  try {
    values = parseDevArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof DevArgsError)) throw e;
    console.error(`✖ ${e.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) return void console.log(USAGE);
  const demo = values.demo;
  const app = values.app ?? (demo ? DEMO_FLEET_CONFIG : undefined);
  if (!app) {
    console.error(USAGE);
    process.exit(2);
  }
  const port = values.port ?? Number(process.env.PORT ?? 8787);
  const persistTo = values.persistTo ?? process.env.PERSIST_DIR ?? ".wrangler/state";
  const vars: Record<string, string> = {
    // Local dev auth is switched on explicitly here (and shows a banner); production uses Cloudflare Access.
    AUTH_MODE: "dev",
    DEV_USER: process.env.DEV_USER ?? "you@localhost",
    DEV_ROLE: process.env.DEV_ROLE ?? "operator",
    ...values.vars,
  };
  const demoOn = demo && (process.env.DEMO ?? "on") !== "off";
  const tickPath = values.tick ?? (demoOn ? `/demo/tick?size=${encodeURIComponent(process.env.DEMO_FLEET_SIZE ?? "4")}` : undefined);
  const tickMs = Math.max(500, values.tickMs ?? Number(process.env.DEMO_INTERVAL_MS ?? 4000));
  // A second stack on this machine must not collide on wrangler's default inspector port.
  const inspectorPort = inspectorPortFor(values, readWranglerConfig(fromRoot(app))) ?? (await freePort(9229));

  console.log(`• applying D1 migrations to ${persistTo}, writing configs for ${app}…`);
  const stack = prepareDevStack({
    app,
    port,
    persistTo,
    consoleVars: vars,
    inspectorPort,
    wranglerArgs: values.wranglerArgs,
    ...(values.prefix ? { appPrefix: values.prefix } : {}),
  });
  const dev = spawn("npx", stack.args, { stdio: "inherit", detached: true, cwd: repoRoot });
  const stop = () => {
    // wrangler's workerd child outlives its parent unless the whole group is signalled.
    try {
      process.kill(-dev.pid!, "SIGTERM");
    } catch {}
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  dev.on("exit", (code) => process.exit(code ?? 0));

  if (!(await waitForHealth(stack.base, 90_000, () => dev.exitCode === null))) {
    console.error(`✖ the console did not answer on ${stack.base}/health within 90 s.`);
    stop();
  }
  console.log(
    `\n✓ console: ${stack.base}/   ${stack.appName}: ${stack.appBase}/   agents bound: ${stack.agentClasses.join(", ")}   inspector: 127.0.0.1:${inspectorPort}`,
  );
  // wrangler dev runs no crons: ask the console for its reconciliation pass every minute instead.
  setInterval(() => void reconcileNow(stack.base), 60_000);
  if (tickPath) {
    console.log(`  POST ${stack.appBase}${tickPath} every ${tickMs} ms\n`);
    setInterval(() => {
      fetch(`${stack.appBase}${tickPath}`, { method: "POST", signal: AbortSignal.timeout(30_000) }).catch((e: Error) =>
        console.warn(`[tick] failed: ${e.message}`),
      );
    }, tickMs);
  }
}

if (import.meta.filename === process.argv[1]) {
  main().catch((e: unknown) => {
    console.error(`✖ ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
