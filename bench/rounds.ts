// The tail-overhead bench's order of calls and its statistics (bench/tail-overhead.ts), apart so they can be checked.

/**
 * Interleaved rounds, each agent (index 0-3) once per round, in a cycle of 8 rounds where, across the whole
 * sequence (round boundaries and the cycle's wrap included), every agent runs right after each agent, itself
 * included, exactly twice, and first in a round twice. A call right after an observed agent's starts as the console
 * finishes its work, so each agent must meet that equally often: a Latin square balanced only within rounds did not.
 */
export const ROUND_CYCLE: readonly (readonly number[])[] = [
  [0, 1, 2, 3],
  [3, 0, 1, 2],
  [2, 0, 3, 1],
  [1, 0, 2, 3],
  [3, 1, 0, 2],
  [2, 1, 3, 0],
  [0, 3, 2, 1],
  [1, 3, 2, 0],
];

/** The q-quantile of xs, interpolated between order statistics. */
export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo]! + (s[hi]! - s[lo]!) * (i - lo);
}

/**
 * A distribution-free 95% confidence interval of the median (order statistics by the normal approximation of the
 * binomial): unlike the middle half, it narrows as rounds are added.
 */
export function medianCi(xs: number[]): [number, number] {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  const half = (1.96 * Math.sqrt(n)) / 2;
  const lo = Math.max(0, Math.floor(n / 2 - half) - 1);
  const hi = Math.min(n - 1, Math.ceil(n / 2 + half) - 1);
  return [s[lo]!, s[hi]!];
}

/** The mean of the middle of xs, `trim` of the values set aside at each end. */
export function trimmedMean(xs: number[], trim: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.floor(s.length * trim);
  const mid = s.slice(k, s.length - k);
  return mid.reduce((a, b) => a + b, 0) / mid.length;
}

/**
 * A 95% percentile-bootstrap interval of the trimmed mean: 2,000 resamples of the rounds with a fixed seed, so the
 * same rounds give the same interval.
 */
export function trimmedMeanCi(xs: number[], trim: number): [number, number] {
  let seed = 0x9e3779b9;
  // mulberry32: small, seedable, good enough to resample.
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const means = Array.from({ length: 2000 }, () =>
    trimmedMean(
      xs.map(() => xs[Math.floor(rand() * xs.length)]!),
      trim,
    ),
  );
  return [quantile(means, 0.025), quantile(means, 0.975)];
}
