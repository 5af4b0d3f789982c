import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A real `wrangler dev` on loopback with its own persist dir, for end-to-end tests. */
export type DevServer = { base: string; port: number; persistDir: string; proc: ChildProcess; logs: string[] };

const root = path.resolve(import.meta.dirname, "../..");

/** Applies D1 migrations to a persist dir (what `npm start` does). */
export function migrate(persistDir: string): void {
  const r = spawnSync("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistDir], { cwd: root, env: { ...process.env, CI: "true" }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`migrations failed: ${r.stdout}\n${r.stderr}`);
}

/** Starts wrangler dev in dev-auth mode, demo fleet off unless asked, and waits for /health. */
export async function startDev(opts: { port: number; persistDir?: string; vars?: Record<string, string> }): Promise<DevServer> {
  const persistDir = opts.persistDir ?? mkdtempSync(path.join(tmpdir(), "console-e2e-"));
  const vars = { AUTH_MODE: "dev", DEV_USER: "e2e@example.com", DEV_ROLE: "operator", DEMO_FLEET: "off", POLL_SECONDS: "2", ...opts.vars };
  const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(opts.port), "--persist-to", persistDir, "--test-scheduled", ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`])];
  // detached: its own process group, so the whole tree (npx → wrangler → workerd) can be signalled at once.
  const proc = spawn("npx", args, { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } });
  const logs: string[] = [];
  proc.stdout?.on("data", (d) => logs.push(String(d)));
  proc.stderr?.on("data", (d) => logs.push(String(d)));
  const base = `http://127.0.0.1:${opts.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline || proc.exitCode !== null) {
      kill({ proc } as DevServer, "SIGKILL");
      throw new Error(`wrangler dev did not start on ${base}:\n${logs.join("").slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { base, port: opts.port, persistDir, proc, logs };
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

/** Runs SQL against the local D1 of a persist dir and returns the rows. */
export function d1(persistDir: string, sql: string): Record<string, unknown>[] {
  const r = spawnSync("npx", ["wrangler", "d1", "execute", "DB", "--local", "--persist-to", persistDir, "--json", "--command", sql], { cwd: root, encoding: "utf8", env: { ...process.env, CI: "true" } });
  if (r.status !== 0) throw new Error(`d1 execute failed: ${r.stderr}`);
  const parsed = JSON.parse(r.stdout) as { results: Record<string, unknown>[] }[];
  return parsed[0]?.results ?? [];
}

/** A session with a CSRF token, for state-changing requests from tests (as the browser or CLI would). */
export async function devSession(base: string): Promise<{ post: (path: string, body: Record<string, string>) => Promise<Response> }> {
  const r = await fetch(`${base}/api/csrf`, { headers: { Accept: "application/json" } });
  const { token } = (await r.json()) as { token: string };
  return {
    post: (p, body) =>
      fetch(`${base}${p}`, { method: "POST", headers: { Accept: "application/json", Origin: base, "X-CSRF-Token": token, "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(body) }),
  };
}
