// `npm run simulate -- --agents 10000 --minutes 1 [--mix bench/mixes/demo.json] [--capture tail|streaming|outbox] [--rate 146] [--saturation]`
// The fleet simulator. It runs inside workerd (vitest.sim.config.ts) so that the Worker's real queue handler
// writes into real local D1 (and R2 when bound); this script only parses the command line and starts it.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { parseSimArgs } from "./simulate-input.ts";
import { repoRoot } from "./wrangler-config.ts";

let args: ReturnType<typeof parseSimArgs>;
try {
  args = parseSimArgs(process.argv.slice(2));
} catch (e) {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(2);
}
console.log(
  `simulate: ${args.agents} agents, ${args.seconds} s, mix ${args.mixFile}${args.capture ? `, capture ${args.capture}` : ""}${args.rate ? `, ${args.rate} events/agent/min` : ""}${args.saturation ? ", then the saturation search" : ""}`,
);
const vitest = path.join(repoRoot, "node_modules", "vitest", "vitest.mjs");
const r = spawnSync(process.execPath, [vitest, "run", "--config", "vitest.sim.config.ts"], {
  cwd: repoRoot,
  stdio: "inherit",
  env: { ...process.env, SIM_INPUT: JSON.stringify(args) },
});
process.exit(r.status ?? 1);
