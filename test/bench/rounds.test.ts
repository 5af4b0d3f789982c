import { describe, expect, it } from "vitest";
import { medianCi, ROUND_CYCLE, trimmedMean, trimmedMeanCi } from "../../bench/rounds.ts";

/** For each agent, how often each agent ran right before it, over `cycles` repeats of `rounds` run back to back. */
function predecessors(rounds: readonly (readonly number[])[], cycles: number): number[][] {
  const seq = Array.from({ length: cycles }, () => rounds.flat()).flat();
  const counts = [0, 1, 2, 3].map(() => [0, 0, 0, 0]);
  for (let i = 1; i < seq.length; i++) counts[seq[i]!]![seq[i - 1]!]!++;
  return counts;
}
/** The share of each agent's calls (after the first) that came right after agent 0 or 1, the observed ones in the bench. */
const afterObservedShare = (rounds: readonly (readonly number[])[]) => predecessors(rounds, 50).map((c) => (c[0]! + c[1]!) / c.reduce((a, b) => a + b, 0));

describe("tail-overhead bench: the order of calls", () => {
  it("runs every agent once per round and each first in as many rounds", () => {
    for (const r of ROUND_CYCLE) expect([...r].sort()).toEqual([0, 1, 2, 3]);
    const firsts = [0, 1, 2, 3].map((a) => ROUND_CYCLE.filter((r) => r[0] === a).length);
    expect(new Set(firsts).size).toBe(1);
  });

  it("has every agent run right after each agent equally often across round boundaries, so none meets the console's work more often", () => {
    // Counted over repeated cycles, as the bench runs them; only the very first call has no predecessor.
    const counts = predecessors(ROUND_CYCLE, 10);
    const all = counts.flat();
    expect(Math.max(...all) - Math.min(...all)).toBeLessThanOrEqual(1);
    const shares = afterObservedShare(ROUND_CYCLE);
    expect(Math.max(...shares) - Math.min(...shares)).toBeLessThan(0.01);
  });

  it("tells apart the square balanced only within rounds, whose A/A pair read 1.15x", () => {
    const withinRoundsOnly = [
      [0, 1, 3, 2],
      [1, 2, 0, 3],
      [2, 3, 1, 0],
      [3, 0, 2, 1],
    ];
    const [, , untailed, aa] = afterObservedShare(withinRoundsOnly);
    expect(untailed).toBeCloseTo(0.5, 1);
    expect(aa).toBeCloseTo(0.75, 1);
  });
});

describe("tail-overhead bench: its statistics", () => {
  // Per-round ratios as a noisy machine gives them: spread around 1.1 with a few preempted rounds far above.
  const rounds = (n: number) => Array.from({ length: n }, (_, i) => (i % 10 === 9 ? 3 : 1.1 + ((i * 7) % 9) / 100 - 0.04));

  it("trimmed mean sets aside the preempted rounds a plain mean would carry", () => {
    const xs = rounds(100);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean).toBeGreaterThan(1.25);
    expect(trimmedMean(xs, 0.2)).toBeCloseTo(1.1, 1);
  });

  it("both intervals hold their estimate and narrow as rounds are added", () => {
    for (const n of [40, 400]) {
      const xs = rounds(n);
      const [mlo, mhi] = medianCi(xs);
      const [tlo, thi] = trimmedMeanCi(xs, 0.2);
      const sorted = [...xs].sort((a, b) => a - b);
      const median = sorted[Math.floor(n / 2)]!;
      expect(mlo).toBeLessThanOrEqual(median);
      expect(mhi).toBeGreaterThanOrEqual(median);
      expect(tlo).toBeLessThanOrEqual(trimmedMean(xs, 0.2));
      expect(thi).toBeGreaterThanOrEqual(trimmedMean(xs, 0.2));
    }
    const width = (xs: number[]) => {
      const [lo, hi] = trimmedMeanCi(xs, 0.2);
      return hi - lo;
    };
    expect(width(rounds(400))).toBeLessThan(width(rounds(40)) / 2);
  });

  it("gives the same interval for the same rounds (a fixed seed)", () => {
    expect(trimmedMeanCi(rounds(60), 0.2)).toEqual(trimmedMeanCi(rounds(60), 0.2));
  });
});
