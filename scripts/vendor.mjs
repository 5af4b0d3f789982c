// Builds the console's static files (scripts/assets.mjs): its own scripts, styles and favicon from console/static,
// and the browser libraries it serves (htmx, chart.js) from node_modules — served by the Worker itself, never
// from a CDN — each under a content-hashed name in console/public/assets, listed in console/asset-manifest.json.
// Run by `npm start`, `npm test` and the typecheck; run it before `wrangler deploy`.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsoleAssets } from "./assets.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
try {
  const manifest = buildConsoleAssets(root);
  console.log(`✓ built ${Object.keys(manifest).length} static files into console/public/assets (console/asset-manifest.json)`);
} catch (e) {
  console.error(`✖ ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
