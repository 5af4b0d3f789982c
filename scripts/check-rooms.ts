// `npm test` step: every room imports only what it may, and no import cycle crosses rooms. The agent-side
// packages must install into a user's Worker alone, so they may not reach into the console, the store or D1.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "./wrangler-config.ts";

type Room = { name: string; dir: string; mayImport: string[]; packages: RegExp };

/** Rooms and the rooms each may import (by relative path). Package imports are checked against `packages`. */
const ROOMS: Room[] = [
  { name: "telemetry", dir: "src/telemetry", mayImport: [], packages: /^(agents(\/.*)?|zod|@opentelemetry\/.*|node:async_hooks)$/ },
  { name: "admin-rpc", dir: "src/admin-rpc", mayImport: [], packages: /^(agents(\/.*)?|zod|@agent-oncall\/telemetry)$/ },
  { name: "store", dir: "src/store", mayImport: ["telemetry", "admin-rpc"], packages: /^(drizzle-orm(\/.*)?|zod)$/ },
  { name: "console", dir: "console", mayImport: ["store", "admin-rpc"], packages: /^(hono(\/.*)?)$/ },
  { name: "worker", dir: "worker", mayImport: ["telemetry", "admin-rpc", "store", "console"], packages: /^(hono(\/.*)?|zod|agents|drizzle-orm(\/.*)?|@microlabs\/otel-cf-workers|@opentelemetry\/.*|@agent-oncall\/telemetry)$/ },
  // The demo fleet is a user of the packages: package names only, never a path into the console's repo.
  { name: "demo-fleet", dir: "examples/demo-fleet/src", mayImport: [], packages: /^(agents(\/.*)?|zod|hono(\/.*)?|ai|@ai-sdk\/.*|@cloudflare\/think|@agent-oncall\/(telemetry|admin-rpc)(\/(otlp|contract))?)$/ },
];

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\("([^"]+)"\)/g;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (e === "dist" || e === "node_modules") continue;
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (/\.tsx?$/.test(e) && !e.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

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
    }
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

if (problems.length) {
  console.error(`✖ rooms: ${problems.length} import(s) break the room boundaries:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`✓ rooms: ${ROOMS.map((r) => `${r.name} → ${[...edges.get(r.name)!].join(", ") || "(none)"}`).join("; ")}`);
