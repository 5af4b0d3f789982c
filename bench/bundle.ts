// Bundles a Worker as `wrangler deploy` would, without deploying: what the bundle-size and tail-overhead benches weigh.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { repoRoot } from "../scripts/wrangler-config.ts";

/** A bundle's minified bytes and gzip (level 9, a proxy for the upload's compression) bytes. */
export type BundleBytes = { raw: number; gz: number };

/**
 * Builds `config` into `outDir` (emptied first; with esbuild's metafile at `metafile` when given) and weighs its
 * JavaScript and WebAssembly. Throws with wrangler's output when the build fails.
 */
export function bundleWorker(config: string, outDir: string, metafile?: string): BundleBytes {
  rmSync(outDir, { recursive: true, force: true });
  const args = ["wrangler", "deploy", "--dry-run", "--minify", "--outdir", outDir, ...(metafile ? ["--metafile", metafile] : []), "-c", config];
  const r = spawnSync("npx", args, { cwd: repoRoot, encoding: "utf8", env: { ...process.env, CI: "true" } });
  if (r.status !== 0) throw new Error(`bundling ${config} failed:\n${r.stdout}\n${r.stderr}`);
  let raw = 0;
  let gz = 0;
  for (const f of readdirSync(outDir, { recursive: true }) as string[]) {
    const p = path.join(outDir, f);
    if (!statSync(p).isFile() || !/\.(js|mjs|wasm)$/.test(f)) continue;
    const bytes = readFileSync(p);
    raw += bytes.length;
    gz += gzipSync(bytes, { level: 9 }).length;
  }
  return { raw, gz };
}
