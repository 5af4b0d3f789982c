import manifest from "./asset-manifest.json";

/**
 * The console's static files by their source names (console/static, plus htmx and chart.js), as scripts/vendor.mjs
 * builds them: each one's served path carries its content hash, so it is cached for a year (console/static/_headers)
 * and a changed file reaches browsers under a new name. The manifest is generated; a name not in it fails the typecheck.
 */
export type AssetName = keyof typeof manifest;

/** The served path of a static file, e.g. `asset("console.css")` → `/assets/console.<hash>.css`. */
export function asset(name: AssetName): string {
  return manifest[name];
}
