import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { z } from "zod";
import { before, record } from "./recorded";
import { report } from "./report";
import { parseMix } from "./sim/mix";
import { simInputSchema, simulate } from "./sim/simulate";

/**
 * The fleet simulator, small, inside `npm run bench`, once per fleet shape (settings in vitest.bench.config.ts: the
 * demo, quiet and busy mixes): the same lines as `npm run simulate`, with targets. The demo run's figures are the
 * ones recorded for a later "before".
 */
const inputs = z.array(simInputSchema).parse(JSON.parse((env as unknown as { SIM_INPUTS: string }).SIM_INPUTS));

for (const [k, input] of inputs.entries()) {
  const name = parseMix(input.mix, input.mixFile).name;
  it(`fleet simulator, ${name} mix: ${input.agents} agents for ${input.seconds} s through the real Queue consumer`, async () => {
    const print = (line: string) => report(`sim ${name}: ${line}`);
    const r = await simulate(env, input, { print, pages: false, targets: true, ...(k === 0 ? { figures: { before, record } } : {}) });
    expect(r.load.stored, "every event sent is stored").toBe(r.load.events);
    expect(r.load.d1.rowsWritten).toBeGreaterThan(0);
  });
}
