/** Timing helpers for benchmarks: interleaved rounds, medians, and one-line reports. */

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Runs `a` and `b` alternately for `rounds` rounds and returns each one's per-round times (ms). */
export async function interleave(rounds: number, a: () => Promise<void>, b: () => Promise<void>): Promise<{ a: number[]; b: number[] }> {
  const out = { a: [] as number[], b: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const);
    for (const k of order) {
      const t0 = performance.now();
      await (k === "a" ? a() : b());
      out[k].push(performance.now() - t0);
    }
  }
  return out;
}

/** Median of the per-round ratios b/a: robust to drift that affects both sides of a round alike. */
export const medianRatio = (t: { a: number[]; b: number[] }) => median(t.a.map((a, i) => t.b[i]! / a));

/** The `q` quantile (0..1) of `xs`, nearest rank. */
export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]!;
};

/** The middle half of the per-round ratios b/a (25th to 75th percentile): how far one round's figure can be trusted. */
export function ratioSpread(t: { a: number[]; b: number[] }): { p25: number; p75: number } {
  const s = t.a.map((a, i) => t.b[i]! / a).sort((x, y) => x - y);
  return { p25: s[Math.floor((s.length - 1) / 4)]!, p75: s[Math.ceil(((s.length - 1) * 3) / 4)]! };
}

/**
 * Sum of b's round times over sum of a's: every round counts, so work that one side defers and does in bursts (a
 * background send every few seconds) is in it, which the quieter rounds and the median can leave out; so is
 * preemption by other processes, which makes it noisier.
 */
export const totalRatio = (t: { a: number[]; b: number[] }) => t.b.reduce((n, x) => n + x, 0) / t.a.reduce((n, x) => n + x, 0);

/** Prints one bench line in a stable format that the closing notes quote. */
export function report(line: string): void {
  console.log(`BENCH ${line}`);
}
