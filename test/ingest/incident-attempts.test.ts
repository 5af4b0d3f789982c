import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getIncident, incidentAttempts } from "../../src/store/read-models";
import { makeEvent } from "../fixtures/events";
import { ingest } from "../store/store-helpers";

// An incident's attempts counted from its events, and what each attempt re-spent, are kept at ingest (the incident
// row's attempt_events, incident_usage) so its page never reads the timeline for them: each event counts once,
// whatever the batching, order and redelivery.

const uid = () => crypto.randomUUID().slice(0, 8);

function lifeOf(agentName: string, incidentId: string) {
  const corr = { incidentId, requestId: `req-${incidentId}` };
  const base = { maxAttempts: 3, recoveryKind: "continue" as const };
  let t = Date.now() - 60_000;
  const o = (c: typeof corr | { incidentId: string } = corr) => ({ agentName, time: t++, corr: c });
  return [
    makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, o()),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o()),
    makeEvent("model.usage", { inputTokens: 100, outputTokens: 10, attempt: 1 }, o({ incidentId })),
    makeEvent("model.usage", { inputTokens: 200, outputTokens: 20, attempt: 1 }, o({ incidentId })),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, o()),
    makeEvent("model.usage", { inputTokens: 300, outputTokens: 30, attempt: 2 }, o({ incidentId })),
    // Usage whose attempt the agent could not tell.
    makeEvent("model.usage", { inputTokens: 7, outputTokens: 1 }, o({ incidentId })),
    makeEvent("chat.recovery.attempt", { ...base, attempt: 3 }, o()),
    makeEvent("chat.recovery.exhausted", { ...base, attempt: 3, reason: "max_attempts_exceeded" }, o()),
  ];
}

const EXPECTED = {
  counted: 3,
  reported: 3,
  disagree: false,
  usageCapped: false,
  respentByAttempt: [
    { attempt: null, calls: 1, inputTokens: 7, outputTokens: 1 },
    { attempt: 1, calls: 2, inputTokens: 300, outputTokens: 30 },
    { attempt: 2, calls: 1, inputTokens: 300, outputTokens: 30 },
  ],
};

describe("incident attempts and per-attempt re-spend, kept at ingest", () => {
  it("count each event once: one batch, reversed single events, and every event delivered again", async () => {
    const agentName = `attempts-${uid()}`;
    const [a, b, c] = [`inc-a-${uid()}`, `inc-b-${uid()}`, `inc-c-${uid()}`];
    await ingest(lifeOf(agentName, a));
    for (const e of lifeOf(agentName, b).reverse()) await ingest([e]);
    const life = lifeOf(agentName, c);
    await ingest(life.slice(0, 5));
    await ingest(life);
    await ingest([...life, ...life]);
    const owner = { agentClass: "ProbeAgent", agentName };
    for (const id of [a, b, c]) {
      const incident = (await getIncident(env.DB, id, owner))!;
      expect(incident.attemptEvents, id).toBe(3);
      const attempts = await incidentAttempts(env.DB, incident);
      expect(attempts, id).toMatchObject(EXPECTED);
      // A handful of rows read by the key: never the timeline.
      expect(attempts.rowsRead, id).toBeLessThanOrEqual(4);
    }
  });

  it("name the user turn they recover as the incident's request, whichever run each attempt's event names", async () => {
    // A chat recovery's events name the run they recover: the user turn's own run first, then each recovery run.
    // The chat-turn folds stamp the user turn (`rootRequestId`); the incident links to that turn's run, in any order.
    const agentName = `root-${uid()}`;
    const incidentId = `turn-1:user-${uid()}`;
    const base = { maxAttempts: 3, recoveryKind: "continue" as const, rootRequestId: "chat_turn-1" };
    let t = Date.now() - 60_000;
    const o = (requestId: string) => ({ agentName, time: t++, corr: { incidentId, requestId } });
    const life = [
      makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, o("turn-1")),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o("turn-1")),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, o("zz-recovery-run")),
      makeEvent("chat.recovery.exhausted", { ...base, attempt: 1, reason: "max_attempts_exceeded" }, o("zz-recovery-run")),
    ];
    for (const e of life.reverse()) await ingest([e]);
    const incident = (await getIncident(env.DB, incidentId, { agentClass: "ProbeAgent", agentName }))!;
    expect(incident.requestId).toBe("chat_turn-1");
  });
});
