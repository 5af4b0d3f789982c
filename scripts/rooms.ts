// The rooms and their import rule, apart from the file reading (scripts/check-rooms.ts), so a test can run the rule over
// made-up files. Paths are repo-relative with "/" separators.
import { posix } from "node:path";

/**
 * A room: the paths it holds (folders or files; the longest matching path decides a file's room), the rooms it may
 * import, and the packages it may import. `door`: the only modules other rooms may import of it. `wires`: the
 * composition root, which may reach past doors (it hands each room's handlers to the runtime). `through`: per room it
 * may import, the only modules of it this room may import (a narrower door for this room alone).
 */
export type Room = {
  name: string;
  paths: string[];
  mayImport: string[];
  packages: RegExp;
  door?: string[];
  wires?: boolean;
  through?: Record<string, string[]>;
};

// node:async_hooks: a streamed download's later reads run in the request's context (worker/export/stream.ts).
const WORKER_PACKAGES =
  /^(hono(\/.*)?|zod|agents|drizzle-orm(\/.*)?|@microlabs\/otel-cf-workers|@opentelemetry\/.*|@agent-oncall\/telemetry(\/(contract|otlp|tail))?|node:async_hooks)$/;
const BELOW_WORKER = ["telemetry", "admin-rpc", "store", "console"];

/**
 * Rooms and the rooms each may import. Inside worker/, the write side (ingest) and the serving side (routes) never
 * import each other: a fact both need lives in src/store or src/telemetry. Background work (jobs) is reached only
 * through its door, worker/jobs.ts; the shared worker room (settings, bindings, store wiring, sign-in) imports no other
 * worker room. Every file under a FENCED folder must belong to a room.
 */
export const ROOMS: Room[] = [
  // Telemetry reads the facts it shares with the agent side from the admin package's dependency-free facts entry.
  {
    name: "telemetry",
    paths: ["src/telemetry"],
    mayImport: [],
    packages: /^(agents(\/.*)?|zod|@opentelemetry\/.*|node:async_hooks|@agent-oncall\/admin-rpc\/facts)$/,
  },
  // The agent side imports no telemetry (its publishing helper uses the runtime's diagnostics channels); the
  // Worker-side client (client.ts) does.
  {
    name: "admin-rpc",
    paths: ["src/admin-rpc"],
    mayImport: [],
    packages: /^(agents(\/.*)?|zod|node:diagnostics_channel|@agent-oncall\/telemetry(\/contract)?)$/,
  },
  { name: "store", paths: ["src/store"], mayImport: ["telemetry", "admin-rpc"], packages: /^(drizzle-orm(\/.*)?|zod|@agent-oncall\/telemetry(\/contract)?)$/ },
  { name: "console", paths: ["console"], mayImport: ["store", "admin-rpc"], packages: /^(hono(\/.*)?)$/ },
  {
    name: "worker",
    // Sign-in is here because worker/config.ts parses its settings with the rest; http/ holds the one refusal body it answers with.
    paths: [
      "worker/config.ts",
      "worker/stream-flush.ts",
      "worker/env.ts",
      "worker/store.ts",
      "worker/admin-client.ts",
      "worker/console-events.ts",
      "worker/topology.ts",
      "worker/otel.ts",
      "worker/auth",
      "worker/http",
    ],
    mayImport: BELOW_WORKER,
    packages: WORKER_PACKAGES,
  },
  // The write side: the telemetry and dead-letter queues' consumers, and the tail handlers (classic and streaming) that feed them.
  {
    name: "ingest",
    paths: ["worker/ingest", "worker/tail.ts", "worker/tail-stream.ts"],
    mayImport: [...BELOW_WORKER, "worker", "jobs"],
    packages: WORKER_PACKAGES,
  },
  // The serving side: the app, its routes and headers, and the streamed exports. They read the store through its one
  // API (console-store.ts, which also re-exports the pure helpers pages use with what it returns), plus two pure
  // modules: the filter parsers (a query is parsed where it arrives) and the error classes (the app answers them).
  {
    name: "routes",
    paths: ["worker/app.tsx", "worker/routes", "worker/export", "worker/security-headers.ts"],
    mayImport: [...BELOW_WORKER, "worker", "jobs"],
    packages: WORKER_PACKAGES,
    through: { store: ["src/store/console-store.ts", "src/store/read-models/filters.ts", "src/store/read-models/errors.ts"] },
  },
  // Background work: alerts, reconciliation, bulk actions.
  {
    name: "jobs",
    paths: ["worker/jobs.ts", "worker/alerts", "worker/reconcile", "worker/bulk"],
    door: ["worker/jobs.ts"],
    mayImport: [...BELOW_WORKER, "worker"],
    packages: WORKER_PACKAGES,
  },
  { name: "main", paths: ["worker/index.ts"], wires: true, mayImport: [...BELOW_WORKER, "worker", "ingest", "routes", "jobs"], packages: WORKER_PACKAGES },
  // The demo fleet is a user of the packages: package names only, never a path into the console's repo.
  {
    name: "demo-fleet",
    paths: ["examples/demo-fleet/src"],
    mayImport: [],
    packages: /^(agents(\/.*)?|zod|hono(\/.*)?|ai|@ai-sdk\/.*|@cloudflare\/think|@agent-oncall\/(telemetry|admin-rpc)(\/(otlp|contract))?)$/,
  },
];

/** Folders whose every source file must belong to a room. */
export const FENCED = ["worker"];

export const TELEMETRY_PACKAGE = "@agent-oncall/telemetry";

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\("([^"]+)"\)/g;

/** The specifiers a source imports (static, re-exports and dynamic). */
export const importsOf = (text: string): string[] => [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2])!);

/** A module path without its extension, as an import names it. */
const stem = (p: string) => p.replace(/\.(tsx?|mts|mjs|js)$/, "");
const within = (p: string, root: string) => p === root || p.startsWith(`${root}/`);

/** The room holding a repo-relative path: the room with the longest path that holds it. */
export function roomOf(rel: string, rooms: Room[] = ROOMS): Room | undefined {
  let best: { room: Room; length: number } | undefined;
  for (const room of rooms)
    for (const p of room.paths.map(stem)) if (within(stem(rel), p) && (!best || p.length > best.length)) best = { room, length: p.length };
  return best?.room;
}

export type RoomReport = { problems: string[]; edges: Map<string, Set<string>> };

/**
 * Every import of `sources` (repo-relative file → text) that crosses a room boundary it may not, every file of a
 * FENCED folder outside every room, and every import cycle between rooms. `telemetryEntries`: the package names the
 * telemetry package exports (its exports map).
 */
export function roomProblems(sources: Map<string, string>, telemetryEntries: Set<string>, rooms: Room[] = ROOMS): RoomReport {
  const problems: string[] = [];
  const edges = new Map<string, Set<string>>(rooms.map((r) => [r.name, new Set()]));
  for (const [file, text] of sources) {
    const room = roomOf(file, rooms);
    if (!room) {
      if (FENCED.some((f) => within(file, f))) problems.push(`${file} belongs to no room: add it to one in scripts/rooms.ts`);
      continue;
    }
    for (const spec of importsOf(text)) {
      if (spec.startsWith(".")) {
        const resolved = posix.normalize(posix.join(posix.dirname(file), spec));
        const target = roomOf(resolved, rooms);
        if (!target) problems.push(`${file} imports ${spec}, outside every room`);
        else if (target !== room) {
          edges.get(room.name)!.add(target.name);
          if (!room.mayImport.includes(target.name)) problems.push(`${file} (${room.name}) imports ${spec} (${target.name})`);
          else if (target.door && !room.wires && !target.door.some((d) => stem(d) === stem(resolved)))
            problems.push(`${file} (${room.name}) imports ${spec}: the ${target.name} room is reached only through ${target.door.join(", ")}`);
          else if (room.through?.[target.name] && !room.through[target.name]!.some((d) => stem(d) === stem(resolved)))
            problems.push(
              `${file} (${room.name}) imports ${spec}: ${room.name} reaches the ${target.name} room only through ${room.through[target.name]!.join(", ")}`,
            );
        }
      } else if (!room.packages.test(spec)) problems.push(`${file} (${room.name}) imports the package ${spec}`);
      else if (spec === TELEMETRY_PACKAGE || spec.startsWith(`${TELEMETRY_PACKAGE}/`)) {
        if (!telemetryEntries.has(spec))
          problems.push(`${file} (${room.name}) imports ${spec}, which is not one of the package's entry points (${[...telemetryEntries].join(", ")})`);
        if (room.name !== "telemetry") edges.get(room.name)!.add("telemetry");
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
  for (const r of rooms) visit(r.name, []);
  return { problems, edges };
}
