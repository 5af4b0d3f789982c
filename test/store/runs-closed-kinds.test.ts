import { env } from "cloudflare:workers";
import { RUN_KINDS } from "@agent-oncall/telemetry/contract";
import { describe, expect, it } from "vitest";
import { listRuns } from "../../src/store/read-models/runs";
import { runRetention } from "../../src/store/retention";
import { makeEvent } from "../fixtures/events";
import { count } from "../helpers";
import { ingest } from "./store-helpers";

/**
 * Every run is found through runs_kind merged over RUN_KINDS (the unfiltered list, retention): no index holds
 * first_seen alone. That holds because the kinds are a closed set ingest enforces: a run of any other kind never
 * becomes a row, so none can vanish from the list or escape retention.
 */
describe("runs are of the contract's kinds only", () => {
  const agentName = `kinds-${crypto.randomUUID().slice(0, 6)}`;
  const HOUR = 3_600_000;
  const t0 = Date.now() - 60 * HOUR;

  it("stores a run of every kind, and dead-letters a run of any other kind instead of storing it", async () => {
    const known = RUN_KINDS.map((kind, i) =>
      makeEvent("run.force_idled", { kind, runId: `run-${kind}`, reason: "test", stopped: true }, { agentName, time: t0 + i * 1000 }),
    );
    expect(await ingest(known)).toMatchObject({ stored: RUN_KINDS.length, deadLettered: 0 });
    const other = makeEvent("run.force_idled", { kind: "fiber", runId: "run-workflow", reason: "test", stopped: true }, { agentName, time: t0 + 9000 });
    const otherStarted = makeEvent("fiber.started", { fiberName: "etl" }, { agentName, time: t0 + 9500, corr: { fiberId: "run-workflow-2" } });
    const r = await ingest([
      { ...other, payload: { ...other.payload, kind: "workflow" } },
      { ...otherStarted, payload: { ...otherStarted.payload, kind: "workflow" } },
    ]);
    expect(r).toMatchObject({ stored: 0, deadLettered: 2 });
    expect(await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ?", agentName)).toBe(RUN_KINDS.length);
    expect(await count("SELECT COUNT(*) AS n FROM runs WHERE kind NOT IN (SELECT value FROM json_each(?))", JSON.stringify(RUN_KINDS))).toBe(0);
  });

  it("lists every stored run without a filter, newest first, and retention reaches every one", async () => {
    const listed = await listRuns(env.DB, { agentName });
    const all = await listRuns(env.DB, {});
    expect(all.items.filter((r) => r.agentName === agentName).map((r) => r.kind)).toEqual([...RUN_KINDS].reverse());
    expect(listed.items.map((r) => r.kind)).toEqual([...RUN_KINDS].reverse());
    // Force idle ended them 60 h ago: outside the 48 h hot window, so all are due.
    const ret = await runRetention(env.DB, { maxAgeDays: 30, hotWindowHours: 48 });
    expect(ret.deleted.runs).toBeGreaterThanOrEqual(RUN_KINDS.length);
    expect(await count("SELECT COUNT(*) AS n FROM runs WHERE agent_name = ?", agentName)).toBe(0);
  });
});
