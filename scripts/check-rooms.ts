// `npm test` step: every room imports only what it may, and no import cycle crosses rooms. The agent-side
// packages must install into a user's Worker alone, so they may not reach into the console, the store or D1.
// The telemetry package is imported by name from everywhere outside it (tests, bench and scripts too): a relative
// path into src/telemetry is refused, so one copy loads (tsconfig paths / vitest aliases point the name at source).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "./wrangler-config.ts";

type Room = { name: string; dir: string; mayImport: string[]; packages: RegExp };

/** Rooms and the rooms each may import (by relative path). Package imports are checked against `packages`. */
const ROOMS: Room[] = [
  { name: "telemetry", dir: "src/telemetry", mayImport: [], packages: /^(agents(\/.*)?|zod|@opentelemetry\/.*|node:async_hooks)$/ },
  { name: "admin-rpc", dir: "src/admin-rpc", mayImport: [], packages: /^(agents(\/.*)?|zod|@agent-oncall\/telemetry(\/contract)?)$/ },
  { name: "store", dir: "src/store", mayImport: ["telemetry", "admin-rpc"], packages: /^(drizzle-orm(\/.*)?|zod|@agent-oncall\/telemetry(\/contract)?)$/ },
  { name: "console", dir: "console", mayImport: ["store", "admin-rpc"], packages: /^(hono(\/.*)?)$/ },
  {
    name: "worker",
    dir: "worker",
    mayImport: ["telemetry", "admin-rpc", "store", "console"],
    // node:async_hooks: a streamed download's later reads run in the request's context (worker/export/stream.ts).
    packages:
      /^(hono(\/.*)?|zod|agents|drizzle-orm(\/.*)?|@microlabs\/otel-cf-workers|@opentelemetry\/.*|@agent-oncall\/telemetry(\/(contract|otlp|tail))?|node:async_hooks)$/,
  },
  // The demo fleet is a user of the packages: package names only, never a path into the console's repo.
  {
    name: "demo-fleet",
    dir: "examples/demo-fleet/src",
    mayImport: [],
    packages: /^(agents(\/.*)?|zod|hono(\/.*)?|ai|@ai-sdk\/.*|@cloudflare\/think|@agent-oncall\/(telemetry|admin-rpc)(\/(otlp|contract))?)$/,
  },
];

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\("([^"]+)"\)/g;

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
const TELEMETRY_PACKAGE = "@agent-oncall/telemetry";
/** The telemetry package's published entry points (its exports map): what the rooms may import by name. */
const telemetryEntries = new Set(
  Object.keys((JSON.parse(readFileSync(path.join(TELEMETRY_DIR, "package.json"), "utf8")) as { exports: Record<string, unknown> }).exports).map((k) =>
    k === "." ? TELEMETRY_PACKAGE : `${TELEMETRY_PACKAGE}/${k.slice(2)}`,
  ),
);
const insideTelemetry = (abs: string) => abs === TELEMETRY_DIR || abs.startsWith(TELEMETRY_DIR + path.sep);

const roomOf = (abs: string) => ROOMS.find((r) => abs === path.join(repoRoot, r.dir) || abs.startsWith(path.join(repoRoot, r.dir) + path.sep));

const problems: string[] = [];
const edges = new Map<string, Set<string>>(ROOMS.map((r) => [r.name, new Set()]));
for (const room of ROOMS) {
  for (const file of files(path.join(repoRoot, room.dir))) {
    const rel = path.relative(repoRoot, file);
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2])!;
      if (spec.startsWith(".")) {
        const target = roomOf(path.resolve(path.dirname(file), spec));
        if (!target) problems.push(`${rel} imports ${spec}, outside every room`);
        else if (target !== room) {
          edges.get(room.name)!.add(target.name);
          if (!room.mayImport.includes(target.name)) problems.push(`${rel} (${room.name}) imports ${spec} (${target.name})`);
        }
      } else if (!room.packages.test(spec)) problems.push(`${rel} (${room.name}) imports the package ${spec}`);
      else if (spec === TELEMETRY_PACKAGE || spec.startsWith(`${TELEMETRY_PACKAGE}/`)) {
        if (!telemetryEntries.has(spec))
          problems.push(`${rel} (${room.name}) imports ${spec}, which is not one of the package's entry points (${[...telemetryEntries].join(", ")})`);
        if (room.name !== "telemetry") edges.get(room.name)!.add("telemetry");
      }
    }
  }
}

// One copy of the telemetry package: nothing outside src/telemetry reaches into it by relative path.
for (const file of files(repoRoot, /\.(tsx?|mts|mjs|js)$/)) {
  if (insideTelemetry(file)) continue;
  for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
    const spec = (m[1] ?? m[2])!;
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

// Cycles between rooms (depth-first search over the room graph).
const state = new Map<string, "open" | "done">();
const visit = (n: string, trail: string[]): void => {
  if (state.get(n) === "done") return;
  if (state.get(n) === "open") return void problems.push(`import cycle across rooms: ${[...trail.slice(trail.indexOf(n)), n].join(" → ")}`);
  state.set(n, "open");
  for (const m of edges.get(n) ?? []) visit(m, [...trail, n]);
  state.set(n, "done");
};
for (const r of ROOMS) visit(r.name, []);

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
