// `npm start`: local D1 with migrations applied, `wrangler dev` on a persistent state dir, and the
// demo fleet driven at a gentle rate. Settings (env): PORT (8787), PERSIST_DIR (.wrangler/state),
// DEMO (on|off, default on), DEMO_INTERVAL_MS (4000), DEMO_FLEET_SIZE (4).
import { spawn, spawnSync } from "node:child_process";

const port = Number(process.env.PORT ?? 8787);
const persist = process.env.PERSIST_DIR ?? ".wrangler/state";
const demoOn = (process.env.DEMO ?? "on") !== "off";
const intervalMs = Math.max(500, Number(process.env.DEMO_INTERVAL_MS ?? 4000));
const fleetSize = process.env.DEMO_FLEET_SIZE ?? "4";
const base = `http://127.0.0.1:${port}`;

console.log(`• applying D1 migrations to the local database in ${persist}…`);
const mig = spawnSync("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist], { stdio: "inherit", env: { ...process.env, CI: "true" } });
if (mig.status !== 0) process.exit(mig.status ?? 1);

// Local dev auth is switched on explicitly here (and shows a banner); production uses Cloudflare Access.
const devUser = process.env.DEV_USER ?? "you@localhost";
const devRole = process.env.DEV_ROLE ?? "operator";
const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persist, "--test-scheduled",
  "--var", "AUTH_MODE:dev", "--var", `DEV_USER:${devUser}`, "--var", `DEV_ROLE:${devRole}`,
  "--var", `DEMO_FLEET:${demoOn ? "on" : "off"}`, "--var", `DEMO_FLEET_SIZE:${fleetSize}`];
const dev = spawn("npx", args, { stdio: "inherit", detached: true });
const stop = () => {
  // wrangler's workerd child outlives its parent unless the whole group is signalled.
  try {
    process.kill(-dev.pid, "SIGTERM");
  } catch {}
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
dev.on("exit", (code) => process.exit(code ?? 0));

async function ready() {
  for (let i = 0; i < 120; i++) {
    try {
      const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      if (r.ok) return true;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

if (!(await ready())) {
  console.error(`✖ wrangler dev did not answer on ${base}/health within 60 s.`);
  stop();
}
console.log(`\n✓ console: ${base}   (demo fleet ${demoOn ? `on, a tick every ${intervalMs} ms` : "off"})\n`);

if (demoOn) {
  setInterval(() => {
    fetch(`${base}/__scheduled?cron=demo`, { signal: AbortSignal.timeout(10_000) }).catch((e) => console.warn(`[demo] tick failed: ${e.message}`));
  }, intervalMs);
}
