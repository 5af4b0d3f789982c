import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { ModelStep } from "../fixtures/chat-model";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { call, getText } from "../worker/routes/harness";
import { chatStub } from "./drive";

/**
 * A forecast that fires on real work: a Think agent whose model keeps stalling, with the stall watchdog at 2 s and 4
 * attempts, so its recovery attempts come about 2 s apart and a rate is measurable (at the second) well before the
 * attempts run out. The overview's "likely to exhaust" card must list the incident before the SDK exhausts it, and
 * the closed incident's page must score that forecast against when it exhausted.
 */

const stall = (...chunks: string[]): ModelStep => ({ kind: "stall", chunks });
const STALL_MS = 2_000;
const MAX_ATTEMPTS = 4;

type Card = { items: { incidentId: string; attempts: number; maxAttempts: number; forecast: { at: number; intervalMs: number } }[] };
type Row = { incident_id: string; status: string; status_at: number; attempts: number };

const overviewCard = async () =>
  ((await (await call("/", { as: "viewer", headers: { Accept: "application/json" } })).json()) as { exhausting: Card }).exhausting;

const incidentRow = async (agentName: string) =>
  (await env.DB.prepare("SELECT incident_id, status, status_at, attempts FROM incidents WHERE agent_name = ? AND kind = 'chat'")
    .bind(agentName)
    .first<Row>()) ?? null;

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("the exhaust forecast on a real chat recovery", () => {
  it("is on the overview before the incident exhausts, and the incident page scores it against the exhaustion", async () => {
    const agentName = `forecast-think-${crypto.randomUUID().slice(0, 8)}`;
    const stub = await chatStub("ThinkChatFixture", agentName);
    await stub.setPolicy({ stallTimeoutMs: STALL_MS, maxAttempts: MAX_ATTEMPTS, noProgressTimeoutMs: 600_000, maxInterruptedAttempts: 20 });
    await stub.setScript([stall("Restarting the consumer"), ...Array.from({ length: 8 }, () => stall())]);
    void stub.submit("restart the queue consumer").catch(() => undefined);

    // Poll as the card does (faster): note when the card first lists the incident, until the SDK exhausts it.
    const end = Date.now() + patient(60_000);
    let shown: { at: number; forecastAt: number; attempts: number } | null = null;
    let row: Row | null = null;
    const seen: string[] = [];
    while (Date.now() < end) {
      await stub.settleTelemetry().catch(() => undefined);
      row = await incidentRow(agentName);
      if (row && row.status !== "open") break;
      if (row && !shown) {
        const mine = (await overviewCard()).items.find((i) => i.incidentId === row!.incident_id);
        const at = Date.now();
        seen.push(`${at} attempts=${row.attempts} listed=${!!mine}`);
        if (mine) shown = { at, forecastAt: mine.forecast.at, attempts: mine.attempts };
      }
      await scheduler.wait(200);
    }
    expect(row, seen.join("\n")).not.toBeNull();
    expect(row!.status, seen.join("\n")).toBe("exhausted");
    // The forecast was on the card before the outcome, while the incident was open.
    expect(shown, seen.join("\n")).not.toBeNull();
    expect(shown!.attempts).toBeGreaterThanOrEqual(2);
    expect(shown!.at).toBeLessThan(row!.status_at);

    // The closed incident's page scores the forecast against what happened.
    const path = `/incidents/${encodeURIComponent(row!.incident_id)}?agentClass=ThinkChatFixture&agentName=${agentName}`;
    const json = (await (await call(path, { as: "viewer", headers: { Accept: "application/json" } })).json()) as {
      forecastScore: { first: { madeAt: number; at: number }; latest: { madeAt: number; at: number }; outcome: string; outcomeAt: number; errorMs: number };
    };
    const s = json.forecastScore;
    expect(s.outcome).toBe("exhausted");
    expect(s.outcomeAt).toBe(row!.status_at);
    expect(s.first.madeAt).toBeLessThan(s.outcomeAt);
    expect(s.first.madeAt).toBeLessThanOrEqual(shown!.at);
    expect(s.errorMs).toBe(s.outcomeAt - s.latest.at);
    // Attempts a stall watchdog apart: the latest forecast lands within one stall of the real exhaustion.
    expect(Math.abs(s.errorMs)).toBeLessThan(STALL_MS * 2);
    const page = await getText(path, "viewer");
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-testid="forecast-score"');
    expect(page.text).toMatch(/exhausted at [^<]+(later|earlier) than forecast|exactly as forecast/);
    console.log(`[forecast] ${seen.join(" | ")} | exhausted at ${row!.status_at}; score ${JSON.stringify(s)}`);
  });
});
