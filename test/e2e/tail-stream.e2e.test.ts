/**
 * The console as a streaming Tail Worker, end to end on a real `wrangler dev`: the bare fleet (no package of ours)
 * names the console in its `streaming_tail_consumers` instead of `tail_consumers`. A long runFiber runs in one
 * invocation; its start must reach the console's JSON while it still runs, and its outcome must equal the SDK's.
 * Beside it, twins of the same Worker tailed the classic way (its start arrives only when the invocation ends) and
 * both ways at once (each event stored once: the two paths give the same ids).
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readAbsolute, readWranglerConfig, repoRoot, writeGeneratedConfig } from "../../scripts/wrangler-config.ts";
import { type DevServer, d1, startDev, stop, until } from "./wrangler-dev";

const PORT = 8961;
const FIXTURE = path.join(repoRoot, "test/fixtures/bare-fleet/wrangler.jsonc");
/** How long the slow runFiber works in its one invocation. */
/** Longer than the streaming flush (STREAM_FLUSH_SECONDS, default 7.5 s) with room: the start must show while it runs. */
const SLOW_MS = 30_000;

const consoleName = readWranglerConfig(path.join(repoRoot, "wrangler.jsonc")).name;
const { tail_consumers: _classicLine, ...fixture } = readAbsolute(FIXTURE);
const line = [{ service: consoleName }];
const twin = (name: string, tails: Record<string, unknown>) => writeGeneratedConfig(`tail-stream.${name}.jsonc`, { ...fixture, ...tails, name });
const CLASSIC = `${fixture.name}-classic`;
const BOTH = `${fixture.name}-both`;
/** The app on the port: the fixture, streamed, with bindings to its twins' BareFiberAgent. */
const APP = writeGeneratedConfig(`tail-stream.${fixture.name}.jsonc`, {
  ...fixture,
  name: `${fixture.name}-streamed`,
  streaming_tail_consumers: line,
  durable_objects: {
    bindings: [
      ...(fixture.durable_objects?.bindings ?? []),
      { name: "VIA_CLASSIC", class_name: "BareFiberAgent", script_name: CLASSIC },
      { name: "VIA_BOTH", class_name: "BareFiberAgent", script_name: BOTH },
    ],
  },
});
const TWINS = [twin(CLASSIC, { tail_consumers: line }), twin(BOTH, { tail_consumers: line, streaming_tail_consumers: line })];

let server: DevServer;

type Run = { runId: string; kind: string; status: string; error: string | null; agentClass: string };
/**
 * What the console shows of the runs of agents of this name (its JSON), whatever their class key: the console binds
 * the app's BareFiberAgent, so its twins' same-named class is another Worker's, keyed apart (`BareFiberAgent@?<id>`:
 * locally the trace item names no Worker).
 */
async function consoleRuns(agentName: string): Promise<Run[]> {
  const q = new URLSearchParams({ agentName, limit: "50" });
  const r = await fetch(`${server.base}/runs?${q}`, { headers: { Accept: "application/json" }, signal: AbortSignal.timeout(30_000) });
  return ((await r.json()) as { items: Run[] }).items;
}

/**
 * Starts a slow runFiber on the Worker `via` names and watches the console meanwhile: when its run was first
 * shown (ms after the call), whether the call had returned by then, and what the SDK's run answered.
 */
async function slowRun(via: "this" | "classic" | "both", agentName: string) {
  const t0 = Date.now();
  let returnedAt: number | null = null;
  const call = fetch(`${server.appBase}/fiber/slow?name=${agentName}&ms=${SLOW_MS}&via=${via}`, { method: "POST", signal: AbortSignal.timeout(120_000) }).then(
    async (r) => {
      returnedAt = Date.now();
      expect(r.status).toBe(200);
      return (await r.json()) as { id: string; outcome: string };
    },
  );
  const seen = await until(
    `the console to show ${agentName}'s run`,
    async () => {
      const runs = await consoleRuns(agentName);
      return runs.length ? { run: runs[0]!, atMs: Date.now() - t0, callReturned: returnedAt !== null } : null;
    },
    SLOW_MS + 60_000,
  );
  return { seen, sdk: await call };
}

beforeAll(async () => {
  server = await startDev({
    port: PORT,
    app: APP,
    persistDir: mkdtempSync(path.join(tmpdir(), "tail-stream-")),
    // Its one debug line per stream: the flushes per event measured below.
    vars: { TAIL_STREAM_DEBUG: "on" },
    wranglerArgs: TWINS.flatMap((f) => ["-c", f]),
  });
}, 180_000);

afterAll(async () => {
  if (server) await stop(server, "SIGKILL");
});

it("streamed: a long runFiber's start reaches the console's JSON while it still runs, and its outcome equals the SDK's", { timeout: 240_000 }, async () => {
  const { seen, sdk } = await slowRun("this", "st-slow");
  console.log(`[tail-stream] streamed: the run shown ${(seen.atMs / 1000).toFixed(1)} s after the call, the runFiber working ${SLOW_MS / 1000} s`);
  // The Worker the console binds: its agent keyed by its plain class.
  expect(seen).toMatchObject({ callReturned: false, run: { kind: "fiber", status: "running", agentClass: "BareFiberAgent" } });
  expect(seen.atMs).toBeLessThan(SLOW_MS / 2);
  expect(sdk.outcome).toBe("completed");
  expect(seen.run.runId).toBe(sdk.id);
  const end = await until("the console to show the run's end", async () => {
    const r = (await consoleRuns("st-slow")).find((x) => x.runId === sdk.id);
    return r && r.status !== "running" ? r : null;
  });
  expect(end).toMatchObject({ runId: sdk.id, status: "completed", error: null });
  // The stream's flushes: a measure for the simulator's streaming model (with TAIL_STREAM_DEBUG on, worker/tail-stream.ts logs one line per stream).
  const tallies = [...server.logs.join("").matchAll(/\[tail-stream\] (\d+) entries, (\d+) events sent in (\d+) flushes/g)].map((m) => ({
    entries: Number(m[1]),
    sent: Number(m[2]),
    flushes: Number(m[3]),
  }));
  const sent = tallies.reduce((n, t) => n + t.sent, 0);
  const flushes = tallies.reduce((n, t) => n + t.flushes, 0);
  console.log(
    `[tail-stream] ${tallies.length} streamed invocations carried messages: ${sent} events in ${flushes} flushes (${(flushes / Math.max(sent, 1)).toFixed(2)} flushes and ${(tallies.length / Math.max(sent, 1)).toFixed(2)} streams per event)`,
  );
  expect(sent).toBeGreaterThan(0);
  expect(d1(server.persistDir, "SELECT reason FROM dead_letters")).toEqual([]);
});

it("classic: the same runFiber's start reaches the console only once its invocation has ended", { timeout: 240_000 }, async () => {
  const { seen, sdk } = await slowRun("classic", "cl-slow");
  console.log(`[tail-stream] classic: the run shown ${(seen.atMs / 1000).toFixed(1)} s after the call, the runFiber working ${SLOW_MS / 1000} s`);
  expect(seen.callReturned).toBe(true);
  expect(seen.atMs).toBeGreaterThanOrEqual(SLOW_MS);
  expect(seen.run.runId).toBe(sdk.id);
  // Another Worker's BareFiberAgent (the console binds the app's): kept apart, by its object, and offered nothing.
  expect(seen.run.agentClass).toMatch(/^BareFiberAgent@\?[0-9a-f]{12}$/);
  const page = await fetch(`${server.base}/agents/${encodeURIComponent(seen.run.agentClass)}/cl-slow`, { signal: AbortSignal.timeout(30_000) });
  const html = await page.text();
  expect(page.status).toBe(200);
  expect(html).toContain('data-testid="other-worker"');
  expect(html).toContain('data-testid="read-only"');
  expect(html).not.toContain('hx-post="/actions/');
});

it("tailed both ways at once: every event is stored once, as many as the classic tail alone stores", { timeout: 240_000 }, async () => {
  const both = await slowRun("both", "bo-slow");
  expect(both.sdk.outcome).toBe("completed");
  await until("the console to show the run's end", async () => (await consoleRuns("bo-slow")).find((x) => x.runId === both.sdk.id && x.status === "completed"));
  const classicRun = (await consoleRuns("cl-slow"))[0]!;
  // A few seconds for a second copy to arrive, had the two paths given one event two ids.
  await new Promise((r) => setTimeout(r, 5_000));
  const bothRun = (await consoleRuns("bo-slow")).find((x) => x.runId === both.sdk.id)!;
  const shownBoth = await runEventsShown(bothRun.agentClass, "bo-slow", both.sdk.id);
  const shownClassic = await runEventsShown(classicRun.agentClass, "cl-slow", classicRun.runId);
  console.log(`[tail-stream] both ways: ${shownBoth.length} events shown (${shownBoth.map((e) => e.type).join(", ")}); classic alone: ${shownClassic.length}`);
  expect(shownBoth.length).toBeGreaterThan(0);
  expect(new Set(shownBoth.map((e) => e.id)).size).toBe(shownBoth.length);
  expect(shownBoth.map((e) => e.type)).toEqual(shownClassic.map((e) => e.type));
  expect(d1(server.persistDir, "SELECT reason FROM dead_letters")).toEqual([]);
});

/** The events the console shows on a run's page (its JSON), oldest first. */
async function runEventsShown(agentClass: string, agentName: string, runId: string): Promise<{ id: string; type: string }[]> {
  const q = new URLSearchParams({ agentClass, agentName });
  const r = await fetch(`${server.base}/runs/${encodeURIComponent(runId)}?${q}`, {
    headers: { Accept: "application/json" },
    signal: AbortSignal.timeout(30_000),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { events: { items: { id: string; type: string }[] } }).events.items;
}
