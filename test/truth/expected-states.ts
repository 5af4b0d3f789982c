import type { ThinkSubmissionStatus } from "@cloudflare/think";
import type { FiberStatus } from "agents";
import type { ChatRecoveryIncident, SaveMessagesResult } from "agents/chat";
import type { TaskRunState } from "agents/tasks";

/**
 * What the console must show for each word the SDK's public APIs return, written out here and nowhere else: the
 * truth matrices (test/truth, test/chat) read the SDK's raw words and look them up in these tables, never through
 * the product's own mapping (src/telemetry/sdk-states.ts, pinned by test/telemetry/sdk-states.test.ts), so a wrong
 * entry there makes the matrix disagree instead of agreeing with itself. The tables are keyed by the SDK's own
 * types: a word a newer SDK adds fails the typecheck here, and one it returns anyway fails the matrix (expectedFor).
 */

/** The agent status a piece of work asks for; the agent shows the strongest: running, then waiting, then idle. */
export type AgentWord = "running" | "waiting" | "idle";

/** Tasks runs (`tasks.list` / `tasks.get`, `TaskRunState`): the run's status and phase, and the agent's status. */
export const TASK_EXPECTED: Record<TaskRunState, { status: string; phase: string | null; agent: AgentWord }> = {
  pending: { status: "running", phase: "pending", agent: "running" },
  running: { status: "running", phase: "running", agent: "running" },
  waiting: { status: "running", phase: "waiting", agent: "waiting" },
  completed: { status: "completed", phase: null, agent: "idle" },
  failed: { status: "failed", phase: null, agent: "idle" },
  cancelled: { status: "cancelled", phase: null, agent: "idle" },
};

/**
 * Managed fibers (`listFibers` / `inspectFiber`, `FiberStatus`): the run's status, the agent's status, and the
 * status of the incident an eviction opened once recovery ran. An `interrupted` fiber waits for `resolveFiber`:
 * its incident stays open and its agent waits. A fiber the recovery hook aborted was dropped: recovery skipped.
 */
export const MANAGED_FIBER_EXPECTED: Record<FiberStatus, { status: string; agent: AgentWord; incident: string }> = {
  pending: { status: "running", agent: "running", incident: "open" },
  running: { status: "running", agent: "running", incident: "open" },
  completed: { status: "completed", agent: "idle", incident: "recovered" },
  error: { status: "failed", agent: "idle", incident: "failed" },
  aborted: { status: "cancelled", agent: "idle", incident: "skipped" },
  interrupted: { status: "interrupted", agent: "waiting", incident: "open" },
};

/**
 * A chat turn's own word: Think's submission status (`listSubmissions`) or what AIChatAgent's `saveMessages`
 * returned. (A turn with an open recovery record reads `running` on the AIChatAgent side: the SDK keeps no other
 * record of it.) The console's run status.
 */
export const CHAT_TURN_EXPECTED: Record<ThinkSubmissionStatus | SaveMessagesResult["status"], string> = {
  pending: "running",
  running: "running",
  completed: "completed",
  error: "failed",
  aborted: "cancelled",
  skipped: "cancelled",
};

/**
 * A chat-recovery record (`cf:chat-recovery:incident:*`, `ChatRecoveryIncident.status`): the console's incident
 * status, and where the record decides how the user's turn ended, the turn's run status (else the turn's own word
 * says it, CHAT_TURN_EXPECTED).
 */
export const CHAT_RECOVERY_EXPECTED: Record<ChatRecoveryIncident["status"], { incident: string; turn?: string }> = {
  detected: { incident: "open" },
  scheduled: { incident: "open" },
  attempting: { incident: "open" },
  completed: { incident: "recovered" },
  skipped: { incident: "skipped", turn: "recovery_skipped" },
  exhausted: { incident: "exhausted", turn: "exhausted" },
  failed: { incident: "failed" },
};

/**
 * A `failed` record's reason. The SDK seals a record `exhausted` and then, when the exhausting evaluation ran inside
 * a recovery continuation, rewrites the word to `failed`, keeping the exhaustion's reason: the console shows that
 * as exhausted (incident and turn). Any reason the matrix meets on a failed record must be listed here.
 */
export const FAILED_RECORD_REASON_EXPECTED: Record<string, { incident: string; turn?: string }> = {
  max_attempts_exceeded: { incident: "exhausted", turn: "exhausted" },
  no_progress_timeout: { incident: "exhausted", turn: "exhausted" },
  work_budget_exceeded: { incident: "exhausted", turn: "exhausted" },
  recovery_aborted: { incident: "exhausted", turn: "exhausted" },
  interrupted_attempts_exceeded: { incident: "exhausted", turn: "exhausted" },
  out_of_memory: { incident: "exhausted", turn: "exhausted" },
  stable_timeout: { incident: "exhausted", turn: "exhausted" },
  recovery_error: { incident: "exhausted", turn: "exhausted" },
  max_recovery_window_exceeded: { incident: "exhausted", turn: "exhausted" },
};

/** What the console must show for a chat-recovery record: CHAT_RECOVERY_EXPECTED, or for `failed` with a reason, its reason's entry. */
export function recoveryRecordExpected(record: { status: string; reason?: string | null }): { incident: string; turn?: string } {
  if (record.status === "failed" && record.reason) return expectedFor(FAILED_RECORD_REASON_EXPECTED, record.reason, "a failed chat-recovery record's reason");
  return expectedFor(CHAT_RECOVERY_EXPECTED, record.status, "a chat-recovery record status");
}

/** The agent's status from what each piece of its work asks for. */
export function agentExpected(words: readonly AgentWord[]): AgentWord {
  return words.includes("running") ? "running" : words.includes("waiting") ? "waiting" : "idle";
}

/**
 * `table[word]`, or a failure that names the word: the matrix never guesses what the console should show for a word
 * the SDK returned and this file does not know.
 */
export function expectedFor<V>(table: Record<string, V>, word: string, what: string): V {
  if (Object.hasOwn(table, word)) return table[word]!;
  throw new Error(`the SDK returned ${what} "${word}", which test/truth/expected-states.ts does not know: write there what the console must show for it`);
}
