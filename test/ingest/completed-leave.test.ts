import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { getStoredRun } from "../../src/store/read-models";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";

/**
 * With the R2 history bound (`completedLeave`), a run that completes healthily leaves D1: never inserted when one
 * batch shows all of it, deleted with its end when it started in an earlier batch. What went wrong stays.
 */

const T0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
const at = (agentName: string, s: number, corr: TelemetryEvent["corr"]) => ({ agentName, time: T0 + s * 1000, corr });

function send(events: TelemetryEvent[], completedLeave = true) {
  return ingestBatch(
    env.DB,
    events.map((body, i) => ({ id: `m-${i}-${crypto.randomUUID()}`, body })),
    { now: T0 + 600_000, completedLeave },
  );
}

const owner = (agentName: string) => ({ agentClass: "ProbeAgent", agentName });
const agent = () => `leave-${crypto.randomUUID().slice(0, 8)}`;

describe("healthy completed runs leave D1", () => {
  it("never inserts a run one batch shows started and completed, and writes no runs row for it", async () => {
    const a = agent();
    const r = await send([
      makeEvent("fiber.started", { fiberName: "etl" }, at(a, 1, { fiberId: "f1" })),
      makeEvent("fiber.completed", { fiberName: "etl" }, at(a, 2, { fiberId: "f1" })),
      makeEvent("chat.turn.started", { trigger: "submit" }, at(a, 3, { requestId: "req-1" })),
      makeEvent("chat.turn.finished", { trigger: "submit", status: "completed", durationMs: 900 }, at(a, 4, { requestId: "req-1" })),
    ]);
    expect(r.stored).toBe(4);
    expect(await getStoredRun(env.DB, "f1", owner(a))).toBeNull();
    expect(await getStoredRun(env.DB, "req-1", owner(a))).toBeNull();
    expect(r.rowsWrittenByTable.runs ?? 0).toBe(0);
  });

  it("deletes a running run's row in the batch that records its healthy end", async () => {
    const a = agent();
    await send([makeEvent("fiber.started", { fiberName: "etl" }, at(a, 1, { fiberId: "f2" }))]);
    expect((await getStoredRun(env.DB, "f2", owner(a)))?.status).toBe("running");
    const r = await send([makeEvent("fiber.completed", { fiberName: "etl" }, at(a, 9, { fiberId: "f2" }))]);
    expect(await getStoredRun(env.DB, "f2", owner(a))).toBeNull();
    // The delete is the run's only write (the upserts leave a leaving row alone).
    expect(r.rowsWrittenByTable.runs).toBe(1);
  });

  it("keeps what went wrong: a failure, an interruption then a completion, a recovered turn, an end D1 never saw start", async () => {
    const a = agent();
    await send([
      makeEvent("fiber.started", { fiberName: "etl" }, at(a, 1, { fiberId: "bad" })),
      makeEvent("fiber.failed", { fiberName: "etl", error: "boom" }, at(a, 2, { fiberId: "bad" })),
      makeEvent("fiber.started", { fiberName: "etl" }, at(a, 3, { fiberId: "bumpy" })),
      makeEvent("fiber.interrupted", { fiberName: "etl" }, at(a, 4, { fiberId: "bumpy" })),
      makeEvent("fiber.completed", { fiberName: "etl" }, at(a, 5, { fiberId: "bumpy" })),
      makeEvent("chat.turn.started", { trigger: "submit" }, at(a, 6, { requestId: "req-r" })),
      makeEvent("fiber.completed", { fiberName: "tail-only" }, at(a, 7, { fiberId: "endonly" })),
    ]);
    // A recovery turn of req-r in a later batch, then its completion in another: the row went wrong, so it stays.
    await send([makeEvent("chat.turn.started", { trigger: "auto-continuation", rootRequestId: "req-r", turnAttempt: 2 }, at(a, 8, { requestId: "req-r2" }))]);
    await send([
      makeEvent(
        "chat.turn.finished",
        { trigger: "auto-continuation", status: "completed", durationMs: 500, rootRequestId: "req-r" },
        at(a, 9, { requestId: "req-r2" }),
      ),
    ]);
    expect((await getStoredRun(env.DB, "bad", owner(a)))?.status).toBe("failed");
    expect((await getStoredRun(env.DB, "bumpy", owner(a)))?.status).toBe("completed");
    expect((await getStoredRun(env.DB, "req-r", owner(a)))?.status).toBe("completed");
    expect((await getStoredRun(env.DB, "endonly", owner(a)))?.status).toBe("completed");
  });

  it("keeps every run in D1 without the history (completedLeave off)", async () => {
    const a = agent();
    await send(
      [
        makeEvent("fiber.started", { fiberName: "etl" }, at(a, 1, { fiberId: "f3" })),
        makeEvent("fiber.completed", { fiberName: "etl" }, at(a, 2, { fiberId: "f3" })),
      ],
      false,
    );
    expect((await getStoredRun(env.DB, "f3", owner(a)))?.status).toBe("completed");
  });
});
