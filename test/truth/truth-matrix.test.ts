import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reconcileAgent } from "../../worker/reconcile/agent";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { type Cell, compareViews, matrixTable, scenarioTable } from "./compare";
import { drive, type Subject, truthStub } from "./drive";
import { MATRIX, rowName } from "./matrix";
import { consoleView, overviewFigures, sdkView } from "./observe";

/**
 * The truth matrix (issue 15): every primitive × fault on foreign fixture agents, then the console's figures
 * compared with what the SDK's own public APIs record. "Quiet" is what a real fleet gets after a while: every
 * event delivered that was going to be, and one reconciliation pass (the cron's, judged with no minimum age).
 */

/** Waits until the agent's stored events stop changing (the Queue delivers asynchronously). */
async function quiet(agentName: string): Promise<void> {
  let last = -1;
  let stable = 0;
  for (let i = 0; i < 200 && stable < 4; i++) {
    const row = await env.DB.prepare("SELECT COUNT(*) AS n, MAX(received_at) AS at FROM events WHERE agent_name = ?").bind(agentName).first<{ n: number; at: number | null }>();
    const n = (row?.n ?? 0) * 1e13 + (row?.at ?? 0);
    stable = n === last ? stable + 1 : 0;
    last = n;
    await scheduler.wait(60);
  }
}

async function settle(s: Subject): Promise<void> {
  await quiet(s.agentName);
  await reconcileAgent(env, { agentClass: s.agentClass, agentName: s.agentName }, { now: Date.now() + 1, minAgeMs: 0 });
  await quiet(s.agentName);
}

const results: { name: string; cells: Cell[] }[] = [];

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("truth matrix: the console shows what the SDK records", () => {
  afterAll(() => {
    console.log(matrixTable(results));
  });

  for (const row of MATRIX) {
    it(rowName(row), { timeout: 60_000 }, async () => {
      const before = await overviewFigures();
      const subject = await drive(row);
      await settle(subject);
      const sdk = await sdkView(subject);
      const shown = await consoleView(subject, sdk, before);
      const cells = compareViews(sdk, shown);
      results.push({ name: rowName(row), cells });
      await (await truthStub(subject.agentClass, subject.agentName)).retire().catch(() => {});
      const bad = cells.filter((c) => c.verdict === "DISAGREE");
      const acted = subject.action ? `\n${subject.action.name} answered: ${JSON.stringify(subject.action.result).slice(0, 1500)}` : "";
      expect(bad, scenarioTable(rowName(row), cells) + acted).toEqual([]);
    });
  }
});
