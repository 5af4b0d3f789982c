import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { patient } from "../patience";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { type Cell, compareViews, matrixTable, scenarioTable } from "./compare";
import { drive, truthStub } from "./drive";
import { MATRIX, rowName } from "./matrix";
import { consoleView, overviewFigures, sdkView } from "./observe";
import { settle } from "./settle";
import { tailForm } from "./tail-form";

/**
 * The main truth matrix on tail-captured agents (issue 34): the same rows, driven by the same drivers on the truth
 * agents with the admin package alone (`withAdminRpc(Agent)`, the adoption the README recommends), their events
 * captured by the tail (tail-form.ts), then the same comparison with the SDK's own records. Reconciliation runs
 * through the admin RPC as on the outbox path.
 */

/** Rows not yet run on the tail path, with what disagrees there (each is work still to do, not a verdict). */
const NOT_YET: Record<string, string> = {
  "runFiber × abort": "the hook's recovery starts no new run: the console shows unknown, the agent's record says recovered",
  "runFiber × evictions": "as runFiber × abort",
  "runFiber × lost-end": "the dropped item carried the run's whole life and the agent's only events",
  "managed:undefined × lost-end": "as runFiber × lost-end",
  "task × lost-end": "as runFiber × lost-end",
  "managed:undefined × force-idle": "the cancelled fiber is shown failed",
  "managed:undefined × cancel": "the cancelled fiber is shown failed",
  "managed:interrupted × abort": "the hook's reason is not shown as the run's error",
  "managed:throws × abort": "shown recovery_failed, the SDK says error",
  "task × failure": "the error's name is shown, not its message",
  "task × retry-fail": "the error's name is shown, not its message",
};
const ROWS = MATRIX.filter((r) => !NOT_YET[rowName(r)]);

const form = tailForm();
const results: { name: string; cells: Cell[] }[] = [];

beforeAll(async () => {
  await publishEnvTeamKeys();
});
afterAll(() => {
  form.stop();
  console.log(matrixTable(results));
});

describe("truth matrix on the tail path: the console shows what the SDK records", () => {
  for (const row of ROWS) {
    const name = `tail: ${rowName(row)}`;
    it(name, { timeout: patient(60_000) }, async () => {
      const before = await overviewFigures();
      const subject = await drive(row, form);
      await settle(subject);
      const sdk = await sdkView(subject);
      const shown = await consoleView(subject, sdk, before);
      const cells = compareViews(sdk, shown);
      results.push({ name, cells });
      await (await truthStub(subject.agentClass, subject.agentName)).retire().catch(() => {});
      const bad = cells.filter((c) => c.verdict === "DISAGREE");
      const acted = subject.action ? `\n${subject.action.name} answered: ${JSON.stringify(subject.action.result).slice(0, 1500)}` : "";
      expect(bad, scenarioTable(name, cells) + acted).toEqual([]);
    });
  }
});
