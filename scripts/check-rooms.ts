// `npm test` step: every room imports only what it may, and no import cycle crosses rooms. The agent-side
// packages must install into a user's Worker alone, so they may not reach into the console, the store or D1.
// The telemetry package is imported by name from everywhere outside it (tests, bench and scripts too): a relative
// path into src/telemetry is refused, so one copy loads (tsconfig paths / vitest aliases point the name at source).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { FENCED, importsOf, ROOMS, roomProblems, TELEMETRY_PACKAGE } from "./rooms.ts";
import { repoRoot } from "./wrangler-config.ts";

// The rooms, their allowed edges and the import rule are in scripts/rooms.ts; this script reads the files.

// "public" is the generated static assets' folder: plain browser JS that cannot import the links module.
const SKIP = new Set(["dist", "node_modules", ".git", ".wrangler", "test-artifacts", "public"]);

function files(dir: string, pattern = /\.tsx?$/): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (SKIP.has(e)) continue;
    if (statSync(p).isDirectory()) out.push(...files(p, pattern));
    else if (pattern.test(e) && !e.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

const TELEMETRY_DIR = path.join(repoRoot, "src/telemetry");
/** The telemetry package's published entry points (its exports map): what the rooms may import by name. */
const telemetryEntries = new Set(
  Object.keys((JSON.parse(readFileSync(path.join(TELEMETRY_DIR, "package.json"), "utf8")) as { exports: Record<string, unknown> }).exports).map((k) =>
    k === "." ? TELEMETRY_PACKAGE : `${TELEMETRY_PACKAGE}/${k.slice(2)}`,
  ),
);
const insideTelemetry = (abs: string) => abs === TELEMETRY_DIR || abs.startsWith(TELEMETRY_DIR + path.sep);

// Every source file of every room and of the fenced folders, by repo-relative path.
const sources = new Map<string, string>();
for (const p of [...ROOMS.flatMap((r) => r.paths), ...FENCED]) {
  const abs = path.join(repoRoot, p);
  if (!existsSync(abs)) continue;
  for (const file of statSync(abs).isDirectory() ? files(abs) : [abs])
    sources.set(path.relative(repoRoot, file).split(path.sep).join("/"), readFileSync(file, "utf8"));
}
const { problems, edges } = roomProblems(sources, telemetryEntries);

// One copy of the telemetry package: nothing outside src/telemetry reaches into it by relative path.
for (const file of files(repoRoot, /\.(tsx?|mts|mjs|js)$/)) {
  if (insideTelemetry(file)) continue;
  for (const spec of importsOf(readFileSync(file, "utf8"))) {
    if (spec.startsWith(".") && insideTelemetry(path.resolve(path.dirname(file), spec).replace(/\.(js|ts)$/, "")))
      problems.push(
        `${path.relative(repoRoot, file)} imports ${spec}: import the telemetry package by name (${TELEMETRY_PACKAGE}${
          spec.includes("telemetry/")
            ? `/${spec
                .split("telemetry/")
                .pop()!
                .replace(/\.(js|ts)$/, "")}`
            : ""
        }), so one copy loads`,
      );
  }
}

// Console URLs are built in console/links.ts alone: a string or template literal that starts with one of the
// console's paths ("/agents/…", "/runs?…", "/audit") anywhere else is refused. Route definitions name their paths
// as the first argument of a router call (`.get("/runs/:id", …)`, `listRoute("/events", …)`), which this allows;
// the paths are matched whole, so "/api/…", "/partials/…" and "/public/…" are not console links.
const LINKS_MODULE = "console/links.ts";
const CONSOLE_PATH = /(["'`])\/(agents|runs|incidents|sessions|ops|bulk|audit|alerts|stuck|events|search|backups|fibers|export)(?=[/?#"'`$])/g;
const ROUTE_CALL = /(?:\.(?:get|post|put|patch|delete|all|on|use|route)|\blistRoute)\(\s*$/;
const LINK_DIRS = ["console", "worker", "src", "scripts", "examples/demo-fleet/src"];
for (const dir of LINK_DIRS) {
  for (const file of files(path.join(repoRoot, dir), /\.(tsx?|mjs)$/)) {
    const rel = path.relative(repoRoot, file);
    if (rel === LINKS_MODULE || rel === path.join("scripts", "check-rooms.ts")) continue;
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(CONSOLE_PATH)) {
      const before = text.slice(Math.max(0, m.index - 40), m.index);
      if (ROUTE_CALL.test(before)) continue;
      const line = text.slice(0, m.index).split("\n").length;
      problems.push(`${rel}:${line} builds the console URL ${text.slice(m.index, m.index + 24).split("\n")[0]}… by hand: use ${LINKS_MODULE}`);
    }
  }
}

if (problems.length) {
  console.error(`✖ rooms: ${problems.length} problem(s) (imports across room boundaries, console URLs outside ${LINKS_MODULE}):\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`✓ rooms: ${ROOMS.map((r) => `${r.name} → ${[...edges.get(r.name)!].join(", ") || "(none)"}`).join("; ")}`);
