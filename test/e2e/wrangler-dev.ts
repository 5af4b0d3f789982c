import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { buildConsoleAssets } from "../../scripts/assets.mjs";
import { DEMO_FLEET_CONFIG, prepareDevStack, waitForHealth } from "../../scripts/dev-stack.ts";
import { repoRoot as root } from "../../scripts/wrangler-config.ts";
import { patient } from "../patience.ts";

/** A real `wrangler dev` on loopback with its own persist dir: the console and the demo fleet, as `npm start` runs them. */
export type DevServer = { base: string; appBase: string; port: number; persistDir: string; proc: ChildProcess; logs: string[] };

/**
 * Starts the dev stack (gateway + console in dev-auth mode + the demo fleet's Worker, or `app`'s) the way `npm start` does,
 * migrations applied to the persist dir, and waits for /health. Nothing drives the fleet unless the test does.
 */
export async function startDev(opts: {
  port: number;
  persistDir?: string;
  vars?: Record<string, string>;
  app?: string;
  /** More Workers in the same `wrangler dev` (`-c FILE` each), beside the app. */
  wranglerArgs?: string[];
}): Promise<DevServer> {
  const persistDir = opts.persistDir ?? mkdtempSync(path.join(tmpdir(), "console-e2e-"));
  const vars = { AUTH_MODE: "dev", DEV_USER: "e2e@example.com", DEV_ROLE: "operator", POLL_SECONDS: "2", ...opts.vars };
  // The static files as the sources are now, so an edited script is what the browser gets.
  buildConsoleAssets(root);
  // Its own inspector port (e2e files run two at a time): the stack's port + 10000.
  const stack = prepareDevStack({
    app: opts.app ?? DEMO_FLEET_CONFIG,
    port: opts.port,
    persistTo: persistDir,
    consoleVars: vars,
    inspectorPort: opts.port + 10_000,
    wranglerArgs: opts.wranglerArgs,
  });
  // detached: its own process group, so the whole tree (npx → wrangler → workerd) can be signalled at once.
  const proc = spawn("npx", stack.args, { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
  const logs: string[] = [];
  proc.stdout?.on("data", (d) => logs.push(String(d)));
  proc.stderr?.on("data", (d) => logs.push(String(d)));
  if (!(await waitForHealth(stack.base, 90_000, () => proc.exitCode === null))) {
    kill({ proc } as DevServer, "SIGKILL");
    throw new Error(`wrangler dev did not start on ${stack.base}:\n${logs.join("").slice(-3000)}`);
  }
  return { base: stack.base, appBase: stack.appBase, port: opts.port, persistDir, proc, logs };
}

/** POSTs a form to the demo fleet's own routes (the app in front of its agents, not the console). */
export function appPost(server: Pick<DevServer, "appBase">, p: string, body: Record<string, string>): Promise<Response> {
  return fetch(`${server.appBase}${p}`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(body) });
}

/**
 * Wakes a demo session through the fleet's own route, so the SDK recovers an interrupted turn. A planned eviction
 * may break the call; the wake counts all the same.
 */
export async function wakeSession(server: Pick<DevServer, "appBase">, name: string): Promise<void> {
  await appPost(server, `/dev/sessions/${encodeURIComponent(name)}/wake`, {}).then(
    (r) => r.arrayBuffer(),
    () => undefined,
  );
}

/** Signals the whole process group (npx, wrangler and its workerd). */
export function kill(server: Pick<DevServer, "proc">, signal: NodeJS.Signals = "SIGTERM"): void {
  try {
    if (server.proc.pid) process.kill(-server.proc.pid, signal);
  } catch {
    /* already gone */
  }
}

/** Stops a server and waits for its process group to be gone. */
export async function stop(server: DevServer, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  kill(server, signal);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(-server.proc.pid!, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  kill(server, "SIGKILL");
}

/**
 * Reads the local D1 of a persist dir: the SQLite file miniflare keeps for the console's database, opened read-only
 * beside the running stack. (`wrangler d1 execute` reads the same file, but costs a Node start and seconds of CPU per
 * call, which polling loops paid many times over on a 2-core machine.)
 */
export function d1(persistDir: string, sql: string): Record<string, unknown>[] {
  const dir = path.join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one D1 database in ${dir}, found ${files.length}`);
  const db = new DatabaseSync(path.join(dir, files[0]!), { readOnly: true });
  try {
    // workerd writes this file meanwhile: a read that meets its lock waits for it rather than failing the test.
    db.exec("PRAGMA busy_timeout = 5000");
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** A session with a CSRF token, for state-changing requests from tests (as the browser or CLI would). */
export async function devSession(base: string): Promise<{ post: (path: string, body: Record<string, string>) => Promise<Response> }> {
  const r = await fetch(`${base}/api/csrf`, { headers: { Accept: "application/json" } });
  const { token } = (await r.json()) as { token: string };
  return {
    post: (p, body) =>
      fetch(`${base}${p}`, {
        method: "POST",
        headers: { Accept: "application/json", Origin: base, "X-CSRF-Token": token, "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(body),
      }),
  };
}

/**
 * Polls `fn` every 300 ms until it gives a truthy value, or fails saying what it waited for. `timeoutMs` is what a
 * quiet machine needs at most; the wait allows test/patience.ts's factor on top, for a loaded one.
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + patient(timeoutMs);
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
