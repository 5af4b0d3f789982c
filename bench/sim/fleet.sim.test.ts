import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { parseMix, withCapture } from "./mix";
import { comparePartitions } from "./partitions";
import { findKnee } from "./saturation";
import { simInputSchema, simulate } from "./simulate";

/**
 * `npm run simulate`: scripts/simulate.ts parses the command line and starts this file (vitest.sim.config.ts)
 * with the run's settings in the SIM_INPUT binding. Each figure is printed as one `SIM …` line.
 */
const input = simInputSchema.parse(JSON.parse((env as unknown as { SIM_INPUT: string }).SIM_INPUT));
const say = (line: string) => console.log(`SIM ${line}`);
/** Events/s offered to the partition comparison (--partitions). */
const PARTITION_OFFERED = 8_000;

it(`simulates ${input.agents} agents for ${input.seconds} s through the real Queue consumer into local D1`, async () => {
  const r = await simulate(env, input, { print: say, pages: true, targets: true, progress: true });
  expect(r.load.stored, "events stored").toBeGreaterThan(0);
  // A backlog of due rows was seeded, and the consumer's paced retention deleted some of it while the fleet ran.
  expect(r.backlogSeeded, "backlog rows seeded").toBeGreaterThan(0);
  expect(r.pacedDeleted, "due rows deleted by paced retention during the run").toBeGreaterThan(0);
  expect(r.pacedDeleted).toBeLessThanOrEqual(r.backlogSeeded);
  if (input.partitions > 1) {
    // Offered well above one local D1's knee (2,000-3,600 events/s measured), so the consumer is the bottleneck.
    const { one, many } = await comparePartitions(env, input, withCapture(parseMix(input.mix, input.mixFile), input.capture), PARTITION_OFFERED, say);
    expect(one * many).toBeGreaterThan(0);
  }
  if (!input.saturation) return;
  const mix = withCapture(parseMix(input.mix, input.mixFile), input.capture);
  const { knee, peak, steps } = await findKnee(env, input, mix, say);
  const over = steps.filter((s) => s.saturated).map((s) => s.eventsPerSecond);
  const ceiling = over.length ? Math.min(...over) : null;
  const need = (10_000 * (input.rate ?? mix.eventsPerAgentPerMinute)) / 60;
  const n = (x: number) => Math.round(x).toLocaleString("en-US");
  say(
    `saturation: one local D1 keeps up with ${n(knee)} events/s and saturates at ${ceiling === null ? "none of the steps" : `${n(ceiling)} events/s`} ` +
      `(peak stored while sending ${n(peak)} events/s; on this store, after the run above; machine shared, so noisy); ` +
      `10,000 agents at ${mix.name} need ${n(need)} events/s = ${knee ? (need / knee).toFixed(1) : "inf"}x the last rate that kept up: ` +
      `${need > knee / 2 ? "MORE than half of one D1: partition the store by agent" : "less than half of one D1"}`,
  );
  expect(knee + peak).toBeGreaterThan(0);
});
