// The console's static files, built for the browser: every script, style and image gets a content-hashed name,
// so the assets binding can serve it with a year-long immutable cache, and the page names the build it was
// rendered with. Plain Node (no TypeScript), so it runs on any Node the machine has.
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Where hashed files are served from: the one folder the `_headers` file marks immutable. */
export const ASSET_PREFIX = "/assets/";

/** Browser libraries taken from node_modules (never a CDN), under the names the manifest gives them. */
export const VENDOR_FILES = [
  // Read from the package folders directly: chart.js does not export its UMD build path.
  ["htmx.org/dist/htmx.min.js", "htmx.min.js"],
  ["chart.js/dist/chart.umd.min.js", "chart.umd.min.js"],
];

/** `console.css` + its bytes → `console.<first 10 hex of sha-256>.css`: a change of content is a change of name. */
export function hashedName(name, bytes) {
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 10);
  const ext = path.extname(name);
  return `${name.slice(0, name.length - ext.length)}.${hash}${ext}`;
}

/**
 * Builds `outDir` from `staticDir` (the console's own files; `_`-files such as `_headers` are config, copied as
 * they are) and the vendor files, and writes the manifest (logical name → served path) to `manifestFile`.
 * Current files are written before stale ones are removed, so a running dev server never misses the page's assets.
 * Returns the manifest.
 */
export function buildAssets({ root, staticDir, outDir, manifestFile, vendor = VENDOR_FILES }) {
  const sources = [];
  for (const name of readdirSync(staticDir).sort()) {
    if (name.startsWith("_")) continue;
    sources.push([name, path.join(staticDir, name)]);
  }
  for (const [from, name] of vendor) {
    const src = path.join(root, "node_modules", from);
    if (!existsSync(src)) throw new Error(`${src} is missing; run npm ci`);
    sources.push([name, src]);
  }
  const assetsDir = path.join(outDir, ASSET_PREFIX);
  mkdirSync(assetsDir, { recursive: true });
  const manifest = {};
  const keep = new Set();
  for (const [name, src] of sources) {
    const bytes = readFileSync(src);
    const file = hashedName(name, bytes);
    const out = path.join(assetsDir, file);
    if (!existsSync(out)) writeFileSync(out, bytes);
    manifest[name] = `${ASSET_PREFIX}${file}`;
    keep.add(file);
  }
  // Config files are rewritten only when changed, like the manifest: a running wrangler dev watches them.
  for (const name of readdirSync(staticDir)) {
    if (!name.startsWith("_")) continue;
    const [src, out] = [path.join(staticDir, name), path.join(outDir, name)];
    if (!existsSync(out) || !readFileSync(src).equals(readFileSync(out))) copyFileSync(src, out);
  }
  for (const file of readdirSync(assetsDir)) if (!keep.has(file)) rmSync(path.join(assetsDir, file));
  const json = `${JSON.stringify(manifest, null, 2)}\n`;
  // Unchanged manifests are not rewritten: a rewrite would make a running wrangler dev rebuild the Worker.
  if (!existsSync(manifestFile) || readFileSync(manifestFile, "utf8") !== json) writeFileSync(manifestFile, json);
  return manifest;
}

/** The console's own layout: console/static → console/public (wrangler.jsonc's assets directory), manifest in console/. */
export function buildConsoleAssets(root) {
  return buildAssets({
    root,
    staticDir: path.join(root, "console/static"),
    outDir: path.join(root, "console/public"),
    manifestFile: path.join(root, "console/asset-manifest.json"),
  });
}
