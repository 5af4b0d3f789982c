import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { before, record } from "./recorded";
import { report } from "./report";
import { simInputSchema, simulate } from "./sim/simulate";

/**
 * The fleet simulator, small, inside `npm run bench` (settings in vitest.bench.config.ts: 300 agents for 20 s on
 * the demo mix, enough rows to reach retention's per-run caps): the same lines as `npm run simulate`, with targets.
 */
const input = simInputSchema.parse(JSON.parse((env as unknown as { SIM_INPUT: string }).SIM_INPUT));

it(`fleet simulator: ${input.agents} agents for ${input.seconds} s through the real Queue consumer`, async () => {
  const r = await simulate(env, input, { print: (line) => report(`sim ${line}`), pages: false, targets: true, figures: { before, record } });
  expect(r.load.stored, "every event sent is stored").toBe(r.load.events);
  expect(r.load.d1.rowsWritten).toBeGreaterThan(0);
});
