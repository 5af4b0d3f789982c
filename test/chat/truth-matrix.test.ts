import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VerifiedForceIdleOutput } from "../../src/admin-rpc";
import { patient } from "../patience";
import { type Cell, compareViews, matrixTable, scenarioTable } from "../truth/compare";
import { settle } from "../truth/settle";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { type ChatSubject, chatStub, driveChat } from "./drive";
import { CHAT_MATRIX, chatRowName } from "./matrix";
import { chatConsoleView, chatSdkView, overviewFigures } from "./observe";

/**
 * The truth matrix's chat rows (issue 15): Think and AIChatAgent turns × faults on foreign fixture agents, then the
 * console's figures compared with what the SDK's own public APIs record, field by field, as the main matrix does
 * (test/truth). "Quiet" as there: every event delivered, then one reconciliation pass.
 */

/**
 * What force idle reported next to what the SDK records afterwards: per chat turn it ended, whether the console's
 * read-back found it stopped, the SDK's word it read (Think: the submission's status, through inspectSubmission)
 * and the action's verified result.
 */
function actionCells(s: ChatSubject, sdkWords: Record<string, string | undefined>): Cell[] {
  const r = s.action?.result as { ok: boolean; value?: VerifiedForceIdleOutput } | undefined;
  if (!r) return [];
  if (!r.ok) return [{ field: "action.ok", sdk: true, console: false, verdict: "DISAGREE" }];
  const first = s.turns[0]!.id;
  const v = r.value!;
  const ended = v.ended.find((e) => e.runId === first);
  const check = v.after.checks.find((c) => c.id === (ended?.ref ?? first));
  const cell = (field: string, want: unknown, got: unknown): Cell => ({
    field,
    sdk: want,
    console: got,
    verdict: want === undefined ? "sdk does not say" : JSON.stringify(want) === JSON.stringify(got ?? null) ? "agree" : "DISAGREE",
  });
  return [
    cell("action.ended", true, ended !== undefined && v.ended.every((e) => e.kind !== "chat_turn" || s.turns.some((t) => t.id === e.runId))),
    cell("action.stopped", true, ended?.stopped && check?.now === "stopped"),
    cell("action.sdkState", sdkWords[first], check?.sdkState),
    cell("action.result", "ok", v.result),
  ];
}

const results: { name: string; cells: Cell[] }[] = [];

beforeAll(async () => {
  await publishEnvTeamKeys();
});

describe("truth matrix, chat rows: the console shows what the SDK records of each chat turn", () => {
  afterAll(() => {
    console.log(matrixTable(results));
  });

  for (const row of CHAT_MATRIX) {
    it(chatRowName(row), { timeout: patient(90_000) }, async () => {
      const before = await overviewFigures();
      const subject = await driveChat(row);
      // A sub-agent cannot be asked (the console's binding reaches a top-level object, not the facet): no reconciliation.
      await settle(subject, { reconcile: !subject.parent });
      const sdk = await chatSdkView(subject);
      const shown = await chatConsoleView(subject, sdk, before);
      const sdkWords: Record<string, string | undefined> = {};
      if (subject.agentClass === "ThinkChatFixture") {
        for (const sub of await (await chatStub(subject.agentClass, subject.agentName)).submissions()) sdkWords[sub.submissionId] = sub.status;
      }
      const cells = [...compareViews(sdk, shown), ...actionCells(subject, sdkWords)];
      results.push({ name: chatRowName(row), cells });
      const bad = cells.filter((c) => c.verdict === "DISAGREE");
      const acted = subject.action ? `\n${subject.action.name} answered: ${JSON.stringify(subject.action.result).slice(0, 1500)}` : "";
      expect(bad, scenarioTable(chatRowName(row), cells) + acted).toEqual([]);
      if (row.fault === "force-idle") {
        // Bounds as on a quiet machine, with test/patience.ts's allowance (a stream nobody stops runs on for 120 s).
        // The turn's model stream stopped within 5 s of the action (no chunk pulled after, for 2 s) …
        expect(subject.measured.chunksAfterAction, `chunks pulled after force idle: ${JSON.stringify(subject.measured)}`).toBe(0);
        expect(subject.measured.streamStoppedWithinMs).not.toBeNull();
        expect(subject.measured.streamStoppedWithinMs!).toBeLessThanOrEqual(patient(5000));
        expect(subject.measured.actionMs!).toBeLessThan(patient(5000));
        // … and a new turn started without waiting for it.
        expect(subject.measured.nextTurnWaitedMs!, JSON.stringify(subject.measured)).toBeLessThan(patient(2000));
      }
    });
  }
});
