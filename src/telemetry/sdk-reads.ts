/**
 * Facts the agents SDK (0.32) records but leaves out of its events, read by the agent side through the SDK's
 * public APIs right after the event that needs them, and shipped as optional fields of that event:
 *
 * - a managed fiber's status after it ended or after its recovery hook ran (`inspectFiber`): `fiber:run:*`
 *   and `fiber:recovery:handled` do not say whether `onFiberRecovered` left it interrupted (it returned
 *   undefined), completed, failed or aborted it, nor that a cancelled fiber is `aborted`;
 * - a Tasks run's `step.status()` message (`tasks.get().statusMessage`): the SDK emits no event for it;
 * - a failed Tasks run's error message (`tasks.get().error.message`): `task:failed` carries only its name;
 * - the step a Tasks run is at: its step events are not shipped (too many), but the agent side sees them.
 *
 * Each read is one primary-key row read in the agent's SQLite. A read that fails or finds nothing leaves the
 * event as the SDK sent it; none ever throws into the agent.
 */

import { CHAT_TURN_NAME } from "./sdk-names.js";
import { str } from "./sdk-payloads.js";

/** What the agent side read of the SDK's records for one event; every field optional. */
export type SdkRecord = {
  fiberStatus?: string;
  fiberError?: string;
  statusMessage?: string;
  errorMessage?: string;
  step?: string;
};

/** The SDK's public reads this module uses (agents 0.32 `inspectFiber`, `tasks.get`), bound to the agent. */
export type SdkReaders = {
  inspectFiber(fiberId: string): Promise<{ status: string; error?: string } | null>;
  getTask(runId: string): Promise<{ state: string; statusMessage?: string; error?: { name?: string; message?: string } } | null>;
};

type Raw = { type: string; payload?: Record<string, unknown> };

/** Managed-fiber events after which the fiber's status is what the SDK decided (end, recovery outcome). */
const FIBER_SETTLING = new Set(["fiber:run:completed", "fiber:run:failed", "fiber:recovery:handled", "fiber:recovery:failed"]);
/** Tasks events after which the run's record says more than the event (status message, error message). */
const TASK_READS = new Set(["task:attempt:started", "task:attempt:interrupted", "task:waiting", "task:failed"]);

/** The read an SDK event needs, or null: most events need none. */
export function readNeeded(raw: Raw): { fiberId: string } | { runId: string } | null {
  const p = raw.payload ?? {};
  if (FIBER_SETTLING.has(raw.type) && p.managed === true) {
    const fiberId = str(p.fiberId);
    return fiberId ? { fiberId } : null;
  }
  // A Task that only carries a chat turn is the turn's business; its record holds nothing of this kind.
  if (TASK_READS.has(raw.type) && str(p.definition) !== CHAT_TURN_NAME) {
    const runId = str(p.runId);
    return runId ? { runId } : null;
  }
  return null;
}

/** Reads what the SDK records now for `need`. Never rejects: a failed read gives no facts. */
export async function readRecord(need: { fiberId: string } | { runId: string }, readers: SdkReaders): Promise<SdkRecord> {
  try {
    if ("fiberId" in need) {
      const f = await readers.inspectFiber(need.fiberId);
      return f ? { fiberStatus: f.status, ...(str(f.error) ? { fiberError: f.error } : {}) } : {};
    }
    const t = await readers.getTask(need.runId);
    if (!t) return {};
    return {
      ...(str(t.statusMessage) ? { statusMessage: t.statusMessage } : {}),
      ...(t.state === "failed" && str(t.error?.message) ? { errorMessage: t.error!.message } : {}),
    };
  } catch {
    return {};
  }
}

/** Runs whose step is tracked at once, at most: an agent with more live runs loses the oldest's step, not memory. */
const MAX_TRACKED = 500;

/**
 * The step each Tasks run of this isolate is at, from the SDK's step events (which are not shipped): set when a
 * step starts or is retried, cleared when it completes, set from `task:attempt:interrupted` after an eviction
 * (the step a replay resumes in). A durable sleep emits no step event, so a run sleeping shows no step here.
 */
export class TaskSteps {
  readonly #at = new Map<string, string>();

  /** Follows one SDK event. */
  observe(raw: Raw): void {
    const p = raw.payload ?? {};
    const runId = str(p.runId);
    if (!runId || !raw.type.startsWith("task:")) return;
    switch (raw.type) {
      case "task:step:started":
      case "task:step:retry":
      case "task:attempt:interrupted": {
        const step = str(p.step);
        if (!step) return;
        this.#at.delete(runId);
        this.#at.set(runId, step);
        if (this.#at.size > MAX_TRACKED) this.#at.delete(this.#at.keys().next().value!);
        return;
      }
      case "task:step:completed":
        this.#at.delete(runId);
        return;
    }
  }

  /** The step `raw`'s run is at (for the facts shipped with it); forgets a run that ended. */
  stepFor(raw: Raw): string | undefined {
    const runId = str(raw.payload?.runId);
    if (!runId) return undefined;
    const step = this.#at.get(runId);
    if (raw.type === "task:completed" || raw.type === "task:failed" || raw.type === "task:cancelled" || raw.type === "task:deleted") this.#at.delete(runId);
    return step;
  }
}
