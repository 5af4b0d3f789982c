import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { type Cell, compareViews, matrixTable, scenarioTable } from "./compare";
import { drive, truthStub } from "./drive";
import { MATRIX, rowName } from "./matrix";
import { consoleView, overviewFigures, sdkView } from "./observe";
import { settle } from "./settle";

/**
 * The truth matrix (issue 15): every primitive × fault on foreign fixture agents, then the console's figures
 * compared with what the SDK's own public APIs record, each raw word read through the test's own table of what the
 * console must show (expected-states.ts), never the product's mapping. "Quiet" is what a real fleet gets after a
 * while: every event delivered that was going to be, and one reconciliation pass (the cron's, judged with no minimum
 * age).
 */

const results: { name: string; cells: Cell[] }[] = [];

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("truth matrix: the console shows what the SDK records", () => {
  afterAll(() => {
    console.log(matrixTable(results));
  });

  for (const row of MATRIX) {
    it(rowName(row), { timeout: patient(60_000) }, async () => {
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
