import type { Env } from "../../worker/env";
import { type LoadResult, percentile, runLoad } from "./driver";
import type { Mix } from "./mix";
import { queueSettings, type SimInput } from "./simulate";

/**
 * Where one local D1 saturates: the fleet's event rate is stepped up (same mix, a fixed number of agents, a
 * higher rate per agent) until the consumer stops keeping up, then bisected. A step is saturated when the
 * consumer stores less than 90% of what was sent while sending, or the lag of the step's last fifth is more
 * than twice its first fifth's plus 2 s: lag that grows with time grows without bound.
 */

const STEP_AGENTS = 1_000;
const STEP_SECONDS = 15;
const MAX_DRAIN_MS = 30_000;

export type Step = { eventsPerSecond: number; stored: number; sustained: number; lagP99: number; early: number; late: number; saturated: boolean };

const saturated = (r: LoadResult) => r.storedDuringProduction < 0.9 * r.sentDuringProduction || r.lagP99Late > 2 * r.lagP99Early + 2_000;

export async function findKnee(env: Env, input: SimInput, mix: Mix, say: (l: string) => void): Promise<{ knee: number; peak: number; steps: Step[] }> {
  const steps: Step[] = [];
  const step = async (eventsPerSecond: number): Promise<Step> => {
    const r = await runLoad({
      mix,
      agents: STEP_AGENTS,
      ratePerAgentPerMinute: (eventsPerSecond * 60) / STEP_AGENTS,
      seconds: STEP_SECONDS,
      seed: input.seed + steps.length + 1,
      namePrefix: `sat${steps.length}`,
      queue: queueSettings(input),
      env,
      maxDrainMs: MAX_DRAIN_MS,
    });
    const s: Step = {
      eventsPerSecond,
      stored: r.stored,
      sustained: r.storedDuringProduction / STEP_SECONDS,
      lagP99: percentile(r.lags, 0.99),
      early: r.lagP99Early,
      late: r.lagP99Late,
      saturated: saturated(r),
    };
    steps.push(s);
    say(
      `saturation step: offered ${Math.round(eventsPerSecond)} events/s (${STEP_AGENTS} agents x ${STEP_SECONDS} s): stored while sending ${Math.round(s.sustained)} events/s, ` +
        `lag p99 ${(s.lagP99 / 1000).toFixed(2)} s (first fifth ${(s.early / 1000).toFixed(2)} s, last fifth ${(s.late / 1000).toFixed(2)} s): ${s.saturated ? "SATURATED" : "keeps up"}`,
    );
    return s;
  };
  let good = 0;
  let bad = 0;
  for (let rate = 1_000; rate <= 64_000; rate *= 2) {
    const s = await step(rate);
    if (s.saturated) {
      bad = rate;
      break;
    }
    good = rate;
  }
  for (let i = 0; i < 2 && bad && bad - good > 500; i++) {
    const mid = Math.round((good + bad) / 2);
    if ((await step(mid)).saturated) bad = mid;
    else good = mid;
  }
  const peak = Math.max(...steps.map((s) => s.sustained));
  return { knee: good, peak, steps };
}
