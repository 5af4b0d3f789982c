import { describe, expect, it } from "vitest";
import { roomOf, roomProblems, TELEMETRY_PACKAGE } from "../../scripts/rooms.ts";

// The rule `npm run rooms:check` applies (scripts/check-rooms.ts reads the repo's files into it), run over made-up files.
const problemsOf = (files: Record<string, string>) => roomProblems(new Map(Object.entries(files)), new Set([TELEMETRY_PACKAGE])).problems;

describe("rooms inside worker/", () => {
  it("refuses a route that imports ingest, and ingest that imports a route", () => {
    expect(
      problemsOf({
        "worker/routes/pages.tsx": 'import { statusFromEvents } from "../ingest/incidents";',
        "worker/ingest/incidents.ts": 'import { listQuery } from "../routes/columns";',
        "worker/routes/columns.ts": "",
      }),
    ).toEqual([
      "worker/routes/pages.tsx (routes) imports ../ingest/incidents (ingest)",
      "worker/ingest/incidents.ts (ingest) imports ../routes/columns (routes)",
      "import cycle across rooms: ingest → routes → ingest",
    ]);
  });

  it("lets both sides read a fact from the store, and start a job only through the jobs room's door", () => {
    const fact = 'import { statusFromEvents } from "../../src/store/incident-facts";';
    expect(problemsOf({ "worker/ingest/rows.ts": fact })).toEqual([]);
    expect(problemsOf({ "worker/routes/api.ts": 'import { reconcileStale } from "../jobs";' })).toEqual([]);
    expect(problemsOf({ "worker/routes/api.ts": 'import { reconcileStale } from "../reconcile/pass";' })).toEqual([
      "worker/routes/api.ts (routes) imports ../reconcile/pass: the jobs room is reached only through worker/jobs.ts",
    ]);
  });

  it("lets routes read the store only through its one API, its filter parsers and its error classes", () => {
    expect(
      problemsOf({
        "worker/routes/pages.tsx":
          'import { type ConsoleStore, ownerFrom } from "../../src/store/console-store";\nimport { BadRequest } from "../../src/store/read-models/errors";',
        "worker/routes/agents.tsx": 'import { parseFilters } from "../../src/store/read-models/filters";',
        "worker/app.tsx": 'import { isBadRequest } from "../src/store/read-models/errors";',
      }),
    ).toEqual([]);
    const through = "routes reaches the store room only through src/store/console-store.ts, src/store/read-models/filters.ts, src/store/read-models/errors.ts";
    expect(
      problemsOf({
        "worker/routes/pages.tsx": 'import { partitionFor } from "../../src/store/partitions";',
        "worker/routes/search.tsx": 'import { historySearch } from "../../src/store/history/read";',
        "worker/export/lists.ts": 'import { listIncidentsIn } from "../../src/store/read-models/merged";',
      }),
    ).toEqual([
      `worker/routes/pages.tsx (routes) imports ../../src/store/partitions: ${through}`,
      `worker/routes/search.tsx (routes) imports ../../src/store/history/read: ${through}`,
      `worker/export/lists.ts (routes) imports ../../src/store/read-models/merged: ${through}`,
    ]);
    // Other rooms still read the store's modules directly (jobs, ingest).
    expect(problemsOf({ "worker/alerts/stuck.ts": 'import { listStuckIn } from "../../src/store/read-models/merged-overview";' })).toEqual([]);
  });

  it("refuses jobs reaching into ingest or routes, and the shared room reaching into any worker room", () => {
    expect(
      problemsOf({
        "worker/alerts/detect.ts": 'import { toRows } from "../ingest/rows";',
        "worker/bulk/start.ts": 'export { page } from "../routes/render";',
        "worker/config.ts": 'const m = await import("./jobs");',
      }),
    ).toEqual([
      "worker/alerts/detect.ts (jobs) imports ../ingest/rows (ingest)",
      "worker/bulk/start.ts (jobs) imports ../routes/render (routes)",
      "worker/config.ts (worker) imports ./jobs (jobs)",
    ]);
  });

  it("lets the entry wire every room, and refuses a worker file that belongs to no room", () => {
    expect(
      problemsOf({ "worker/index.ts": 'import { handleTelemetryBatch } from "./ingest/consumer";\nimport { alertStuck } from "./alerts/stuck";' }),
    ).toEqual([]);
    expect(problemsOf({ "worker/cron.ts": "" })).toEqual(["worker/cron.ts belongs to no room: add it to one in scripts/rooms.ts"]);
  });

  it("files a path by its most specific room", () => {
    expect(roomOf("worker/jobs.ts")?.name).toBe("jobs");
    expect(roomOf("worker/tail.ts")?.name).toBe("ingest");
    expect(roomOf("worker/auth/config.ts")?.name).toBe("worker");
    expect(roomOf("worker/export/stream.ts")?.name).toBe("routes");
    expect(roomOf("worker/storefront.ts")).toBeUndefined();
  });
});
