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

/** Prints one bench line in a stable format that the closing notes quote. */
export function report(line: string): void {
  console.log(`BENCH ${line}`);
}
