import type { RunCheck, VerifyOutput } from "./contract.js";
import { LIVE_FIBER_STATUSES } from "./inspect.js";
import type { CheckRecord, VerifyRecords } from "./records-contract.js";
import { CHAT_TURN_TASK, chatTurnRequestIdOf, TASK_TERMINAL_STATES } from "./sdk-layout.js";

/**
 * Worker side of "actions verify what they did": one run judged from the records the agent read it back by
 * (records.ts checkRecord, contract 7). A Tasks run answers through `tasks.get`; a managed fiber through
 * `inspectFiber`, unless its callback still runs in memory (a cancelled fiber whose callback ignores its signal);
 * a runFiber through its row and the set of running callbacks; a Think submission (a chat turn) through
 * `inspectSubmission`. No record at all: stopped.
 */

/** Think's terminal submission statuses (`_isTerminalSubmissionStatus`, @cloudflare/think 0.23). */
const SUBMISSION_DONE: ReadonlySet<string> = new Set(["completed", "aborted", "skipped", "error"]);

/** One run as the SDK records it now. */
export function runCheckOf({ id, inMemory, submission, task, fiber, row }: CheckRecord): RunCheck {
  if (submission) {
    const now = SUBMISSION_DONE.has(submission.status) ? "stopped" : submission.status === "running" ? "running" : "pending";
    return { id, kind: "chat_turn", name: null, now, sdkState: submission.status, source: "inspectSubmission" };
  }
  if (task) {
    const now = TASK_TERMINAL_STATES.has(task.state) ? "stopped" : task.state === "running" ? "running" : "pending";
    return { id, kind: task.definition === CHAT_TURN_TASK ? "chat_turn" : "task", name: task.definition, now, sdkState: task.state, source: "tasks.get" };
  }
  if (fiber) {
    if (inMemory) return { id, kind: "managed_fiber", name: fiber.name, now: "running", sdkState: fiber.status, source: "in_memory" };
    const open = LIVE_FIBER_STATUSES.includes(fiber.status);
    return { id, kind: "managed_fiber", name: fiber.name, now: open ? "pending" : "stopped", sdkState: fiber.status, source: "inspectFiber" };
  }
  const kind = row && chatTurnRequestIdOf(row.name) !== null ? "chat_turn" : "fiber";
  // A row without its callback was left by an eviction: the SDK recovers it on the next wake ("interrupted").
  if (row) return { id, kind, name: row.name, now: inMemory ? "running" : "pending", sdkState: inMemory ? "running" : "interrupted", source: "cf_agents_runs" };
  if (inMemory) return { id, kind: "fiber", name: null, now: "running", sdkState: "running", source: "in_memory" };
  return { id, kind: null, name: null, now: "stopped", sdkState: "gone", source: "none" };
}

/** adminVerify's answer from adminVerifyRecords'. */
export const verifyOutputOf = (raw: VerifyRecords): VerifyOutput => ({ ...raw, checks: raw.checks.map(runCheckOf) });
