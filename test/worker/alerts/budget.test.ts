import { env } from "cloudflare:workers";
import type { TelemetryEvent } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { alertBudget } from "../../../worker/alerts/budget";
import { makeEvent } from "../../fixtures/events";
import { pollRows } from "../../helpers";

/**
 * Budget alerts end to end in workerd: events through the real telemetry Queue and ingest, the check as the cron
 * runs it, deliveries through the real alerts Queue to the real receiver (test/alert-receiver.ts).
 */

type Delivery = { kind: string; subject_id: string; channel: string; status: string };
type Received = { channel: string; body: { kind: string; subject: string; details: Record<string, unknown>; summary: string; path: string } };
const DELIVERIES = "SELECT kind, subject_id, channel, status FROM alert_deliveries WHERE agent_name = ? ORDER BY kind, channel";
const received = async (match: string): Promise<Received[]> =>
  (await (await fetch(`${env.ALERT_CONTROL}/__requests?${new URLSearchParams({ match })}`)).json()) as Received[];
const send = (events: TelemetryEvent[]) => env.TELEMETRY_QUEUE.sendBatch(events.map((body) => ({ body, contentType: "json" as const })));
const uid = () => crypto.randomUUID().slice(0, 8);
const MIN = 60_000;

/** The console's env with a spend threshold set (worker/config.ts parses it once per env object). */
const withSpend = (perAgent: string) => Object.assign({}, env, { SPEND_ALERT_AGENT_TOKENS_PER_HOUR: perAgent });

describe("budget alerts", () => {
  it("an open incident forecast to exhaust within 15 minutes alerts once; an agent re-spending over the threshold alerts once per hour", async () => {
    const agentName = `alert-budget-${uid()}`;
    const incidentId = `inc-${agentName}`;
    const now = Date.now();
    const corr = { incidentId, requestId: `req-${agentName}` };
    const base = { maxAttempts: 4, recoveryKind: "continue" as const };
    const events = [
      makeEvent("chat.recovery.detected", { ...base, attempt: 1 }, { agentName, corr, time: now - 2 * MIN }),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 1 }, { agentName, corr, time: now - 2 * MIN }),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 2 }, { agentName, corr, time: now - MIN }),
      makeEvent("chat.recovery.attempt", { ...base, attempt: 3 }, { agentName, corr, time: now }),
      // Each attempt re-spent 600 tokens: 1800 in the hour.
      ...[2, 1, 0].map((m) => makeEvent("model.usage", { inputTokens: 500, outputTokens: 100 }, { agentName, corr, time: now - m * MIN })),
    ];
    await send(events);
    await pollRows(
      "SELECT attempts FROM incidents WHERE incident_id = ? AND agent_name = ?",
      [incidentId, agentName],
      (r: { attempts: number }[]) => r[0]?.attempts === 3,
    );
    await pollRows(
      "SELECT respent_input_tokens AS t FROM incidents WHERE incident_id = ? AND agent_name = ?",
      [incidentId, agentName],
      (r: { t: number }[]) => r[0]?.t === 1500,
    );

    const e = withSpend("1000");
    await alertBudget(e, now + 1000);
    const rows = await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 4 && r.every((d) => d.status === "sent"));
    expect(rows.map((d) => [d.kind, d.subject_id, d.channel])).toEqual([
      ["exhaust_soon", incidentId, "slack"],
      ["exhaust_soon", incidentId, "webhook"],
      ["respent", "agent", "slack"],
      ["respent", "agent", "webhook"],
    ]);
    const hooks = (await received(agentName)).filter((r) => r.channel === "webhook").map((r) => r.body);
    const soon = hooks.find((b) => b.kind === "exhaust_soon")!;
    // One attempt a minute, at 3 of 4: attempt 5 exceeds the cap two minutes after the last.
    expect(soon.details).toMatchObject({ incidentId, attempts: 3, maxAttempts: 4, intervalMs: MIN, forecastAt: new Date(now + 2 * MIN).toISOString() });
    expect(soon.path).toContain(`/incidents/${incidentId}`);
    const spend = hooks.find((b) => b.kind === "respent")!;
    expect(spend.details).toMatchObject({ scope: "agent", tokens: 1800, threshold: 1000 });

    // Checked again (the next cron run): the same incident and the same hour raise nothing new.
    await alertBudget(e, now + 2000);
    await scheduler.wait(500);
    expect(await pollRows<Delivery>(DELIVERIES, [agentName], (r) => r.length === 4)).toHaveLength(4);
    // A threshold above what was spent raises no spend alert for another agent with the same spend.
    const quiet = `alert-budget-quiet-${uid()}`;
    await send([makeEvent("model.usage", { inputTokens: 500, outputTokens: 100 }, { agentName: quiet, corr: { incidentId: `inc-${quiet}` }, time: now })]);
    await pollRows("SELECT 1 FROM incidents WHERE agent_name = ?", [quiet], (r) => r.length === 1);
    await alertBudget(withSpend("1000"), now + 3000);
    await scheduler.wait(500);
    expect((await env.DB.prepare(DELIVERIES).bind(quiet).all<Delivery>()).results).toEqual([]);
  });
});
