// The vitest side of tsconfig.json's "paths": `@agent-oncall/telemetry` (and its subpaths) resolve to the source
// in src/telemetry for every importer, the demo fleet's files included, so a test worker loads exactly one copy
// and an edit needs no rebuild. (vite's own tsconfigPaths would apply per importer: the fleet's tsconfig has no
// paths, so its imports would still reach dist/ and load a second copy.)
import path from "node:path";

const telemetrySource = path.resolve(import.meta.dirname, "..", "src/telemetry");

/** vite `resolve.alias` entries pointing the telemetry package at its source, and the admin package's facts it imports. */
export const telemetrySourceAlias = [
  { find: /^@agent-oncall\/admin-rpc\/facts$/, replacement: path.resolve(import.meta.dirname, "..", "src/admin-rpc/facts.ts") },
  { find: /^@agent-oncall\/telemetry$/, replacement: path.join(telemetrySource, "index.ts") },
  { find: /^@agent-oncall\/telemetry\/(.+)$/, replacement: `${telemetrySource}/$1` },
];
