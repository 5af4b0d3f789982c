// Types for scripts/assets.mjs (plain JavaScript so it runs on any Node).

/** Where hashed files are served from. */
export declare const ASSET_PREFIX: "/assets/";
/** [path under node_modules, logical name] of each browser library served. */
export declare const VENDOR_FILES: [string, string][];
/** A logical file name with the first 10 hex digits of the sha-256 of its bytes before the extension. */
export declare function hashedName(name: string, bytes: Uint8Array): string;
/** Builds hashed files into `outDir`/assets and writes the manifest (logical name → served path); returns it. */
export declare function buildAssets(opts: {
  root: string;
  staticDir: string;
  outDir: string;
  manifestFile: string;
  vendor?: [string, string][];
}): Record<string, string>;
/** The console's own build: console/static → console/public, manifest in console/asset-manifest.json. */
export declare function buildConsoleAssets(root: string): Record<string, string>;
