/**
 * Timing helpers for benchmarks: interleaved rounds, per-round ratios with their spread and the confidence interval
 * of their median, and one-line reports. Every ratio a bench prints comes from ratioStats, with an A/A ratio (the same
 * configuration on both sides, in the same rounds) beside it, so the reader sees how much of a figure is noise.
 */

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * Runs every side once per round for `rounds` rounds and returns each side's per-round times (ms). The order turns
 * round by round (a b c, b c a, c a b, then reversed), so no side always runs first or always after the same side.
 * A side that returns a number reports its own time (measured where the work runs, e.g. inside a Durable Object);
 * otherwise it is timed here. `until`, asked after every `every` rounds, may end the rounds early.
 */
export async function rounds<K extends string>(
  n: number,
  sides: Record<K, () => Promise<unknown>>,
  opts: { until?: (t: Record<K, number[]>) => boolean; every?: number } = {},
): Promise<Record<K, number[]>> {
  const keys = Object.keys(sides) as K[];
  const out = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < n; r++) {
    const turned = keys.map((_, i) => keys[(i + r) % keys.length]!);
    const order = Math.floor(r / keys.length) % 2 ? turned.reverse() : turned;
    for (const k of order) {
      const t0 = performance.now();
      const own = await sides[k]();
      out[k].push(typeof own === "number" ? own : performance.now() - t0);
    }
    if (opts.until && (r + 1) % (opts.every ?? 10) === 0 && opts.until(out)) break;
  }
  return out;
}

/** Two sides, `a` and `b`, in alternating order (rounds() with two sides). */
export const interleave = (n: number, a: () => Promise<void>, b: () => Promise<void>) => rounds(n, { a, b });

/** The `q` quantile (0..1) of `xs`, nearest rank. */
export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]!;
};

/** The per-round ratios num/den: the median, the middle half, min and max, and the 95% confidence interval of the median. */
export type RatioStats = { n: number; median: number; p25: number; p75: number; min: number; max: number; lo: number; hi: number };

/**
 * Statistics of the per-round ratios num[i]/den[i]. Each round holds both sides, so drift that slows a whole round
 * cancels in its ratio. The confidence interval of the median is distribution-free (order statistics, ranks
 * n/2 ± 1.96·√n/2): it narrows as rounds are added, where the middle half only shows how far one round can stray.
 */
export function ratioStats(num: number[], den: number[]): RatioStats {
  const s = den.map((d, i) => num[i]! / d).sort((x, y) => x - y);
  const n = s.length;
  const at = (rank: number) => s[Math.min(n - 1, Math.max(0, rank))]!;
  const half = (1.96 * Math.sqrt(n)) / 2;
  return {
    n,
    median: median(s),
    p25: at(Math.floor((n - 1) / 4)),
    p75: at(Math.ceil(((n - 1) * 3) / 4)),
    min: s[0]!,
    max: s[n - 1]!,
    lo: at(Math.floor(n / 2 - half) - 1),
    hi: at(Math.ceil(n / 2 + half)),
  };
}

/** The width of the median's 95% interval, in percent of the median. */
export const ciWidthPct = (r: RatioStats) => ((r.hi - r.lo) / r.median) * 100;

const x = (v: number) => `${v.toFixed(3)}x`;

/** "1.043x (95% CI of the median 1.020-1.061x, 4.0% wide; middle half of rounds 0.98-1.10x; min-max 0.85-1.30x)" */
export const ratioText = (r: RatioStats) =>
  `${x(r.median)} (95% CI of the median ${r.lo.toFixed(3)}-${x(r.hi)}, ${ciWidthPct(r).toFixed(1)}% wide; middle half of rounds ${r.p25.toFixed(3)}-${x(r.p75)}; min-max ${r.min.toFixed(3)}-${x(r.max)})`;

/** A ratio and its A/A beside it, for one report line: "<label> 1.043x (…); A/A (<aaLabel>) 1.002x (…)". */
export const withAA = (label: string, r: RatioStats, aaLabel: string, aa: RatioStats) => `${label} ${ratioText(r)}; A/A (${aaLabel}) ${ratioText(aa)}`;

/**
 * Sum of num's round times over sum of den's: every round counts, so work that one side defers and does in bursts (a
 * background send every few seconds) is in it, which the median can leave out; so is preemption by other
 * processes, which makes it noisier.
 */
export const totalRatio = (num: number[], den: number[]) => num.reduce((n, v) => n + v, 0) / den.reduce((n, v) => n + v, 0);

/** Prints one bench line in a stable format that the closing notes quote. */
export function report(line: string): void {
  console.log(`BENCH ${line}`);
}
