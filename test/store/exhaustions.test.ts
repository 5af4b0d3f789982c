import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { overviewCounts, topReasons } from "../../src/store/read-models";
import { ingestBatch } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";

it("counts a chat exhaustion and a turn past its recovery cap as exhausted incidents, and ranks their reasons together", async () => {
  const now = Date.now();
  const events = [
    makeEvent(
      "chat.recovery.exhausted",
      { attempt: 3, maxAttempts: 3, recoveryKind: "retry", reason: "no_progress_timeout" },
      { time: now - 60_000, corr: { incidentId: "c-1" } },
    ),
    makeEvent(
      "session.error",
      { turnSeq: 4, error: "turn 4 was interrupted 6 times", reason: "max_turn_recoveries" },
      { time: now - 50_000, corr: { incidentId: "turn:S/a/4" } },
    ),
    makeEvent(
      "session.error",
      { turnSeq: 5, error: "turn 5 was interrupted 6 times", reason: "max_turn_recoveries" },
      { time: now - 40_000, corr: { incidentId: "turn:S/a/5" } },
    ),
    // A session error that belongs to no incident is not an exhaustion.
    makeEvent("session.error", { turnSeq: 6, error: "tool crashed" }, { time: now - 30_000 }),
  ];
  await ingestBatch(
    env.DB,
    events.map((body, i) => ({ id: `x-${i}`, body })),
  );
  expect((await overviewCounts(env.DB, now)).exhaustions24h).toEqual({ n: 3, capped: false });
  expect((await topReasons(env.DB, {}, now)).reasons).toEqual([
    { reason: "max_turn_recoveries", n: 2 },
    { reason: "no_progress_timeout", n: 1 },
  ]);
});
