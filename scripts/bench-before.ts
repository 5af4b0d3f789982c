import { readFileSync } from "node:fs";

/**
 * The figures of a recorded bench run for `BENCH_BEFORE=<file> npm run bench`: either the run's saved output (its
 * `BENCH-FIGURE <key> <value>` lines, as bench/recorded.ts prints them) or a JSON object of key → number. Returns
 * the JSON the bench's BENCH_BEFORE binding carries, or null when no file is named.
 */
export function benchBefore(file: string | undefined): string | null {
  if (!file) return null;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`BENCH_BEFORE names ${file}, which cannot be read (${(e as Error).message})`);
  }
  const figures: Record<string, number> = {};
  try {
    for (const [k, v] of Object.entries(JSON.parse(text) as Record<string, unknown>)) if (typeof v === "number") figures[k] = v;
  } catch {
    for (const m of text.matchAll(/BENCH-FIGURE (\S+) (-?[\d.eE+-]+)/g)) figures[m[1]!] = Number(m[2]);
  }
  if (Object.keys(figures).length === 0)
    throw new Error(`BENCH_BEFORE names ${file}, which holds no BENCH-FIGURE lines (save a run's output: npm run bench | tee FILE)`);
  return JSON.stringify({ from: file, figures });
}
