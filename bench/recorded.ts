import { env } from "cloudflare:workers";

/**
 * Figures of a recorded run, to print a "before" beside today's figure. Nothing here is typed in by hand: a run prints
 * `BENCH-FIGURE <key> <value>` lines (record()), and `BENCH_BEFORE=<that run's saved output> npm run bench` hands
 * them back (vitest.bench.config.ts reads the file into the BENCH_BEFORE binding). Without it no before is printed.
 */

type Recorded = { from: string; figures: Record<string, number> };

const recorded: Recorded | null = (() => {
  const raw = (env as unknown as { BENCH_BEFORE?: string }).BENCH_BEFORE;
  return raw ? (JSON.parse(raw) as Recorded) : null;
})();

/** Prints a figure of this run in the form a later run reads back. */
export function record(key: string, value: number): void {
  console.log(`BENCH-FIGURE ${key} ${value}`);
}

/** "; before: 2.690 rows/event (recorded run <file>)", or "" when no recorded run was given or it lacks `key`. */
export function before(key: string, unit: string, digits = 3): string {
  const v = recorded?.figures[key];
  return v === undefined ? "" : `; before: ${v.toFixed(digits)} ${unit} (recorded run ${recorded!.from})`;
}
