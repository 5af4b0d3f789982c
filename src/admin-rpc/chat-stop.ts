import type { ForceIdleTurn, TaskRunAnswer } from "./contract.js";
import type { AgentWork } from "./inspect.js";
import { CHAT_TURN_TASK, TASK_TERMINAL_STATES } from "./sdk-layout.js";

/**
 * Force idle for chat agents (Think, AIChatAgent): stop each live chat turn the SDK's public way, and say what is
 * true afterwards by re-reading the SDK. Cancelling the Tasks run that carries a turn does not stop it: the turn's
 * model stream listens to its own abort controller, not to the Task's, and runs to its end (agents 0.32). So:
 *
 * 1. Think's submissions (`listSubmissions`, pending or running) are cancelled with `cancelSubmission`, which marks
 *    the submission `aborted` and aborts its turn;
 * 2. every other live turn (a Tasks run carrying it, or a sub-agent's turn fiber) has its request aborted with
 *    `cancelChat` (Think: also cancels a recovery waiting out its backoff) or `abortRequest` (Think, AIChatAgent);
 * 3. each aborted turn's carrier must then settle by itself (the turn's body returned, so its stream stopped) within
 *    the settle time; one that does not is cancelled through Tasks (so it is never replayed) and reported still
 *    running;
 * 4. each turn is reported with what the SDK records now: the submission (`inspectSubmission`) where there is one;
 *    the client judges it (force-idle-verdicts.ts). (The console reads the turn back again after the action, by the
 *    same submission.)
 *
 * A turn is reported by the id the console keys it by: the user's turn (a submission's id; a recovery turn's root).
 */

/** A Think submission as `listSubmissions` / `inspectSubmission` return it (@cloudflare/think 0.23). */
type Submission = { submissionId: string; requestId?: string; status: string; error?: string };
type CancelResult = { outcome: string; submission?: Submission };
type SubmissionApi = {
  listSubmissions(o: { status?: string[]; limit?: number }): Promise<Submission[]>;
  inspectSubmission(id: string): Promise<Submission | null>;
  cancelSubmission(id: string, reason?: unknown): Promise<CancelResult>;
};

/** Think's submission API, where the agent has it (detected, never assumed). */
function submissionApi(agent: object): SubmissionApi | null {
  const a = agent as Partial<Record<keyof SubmissionApi, unknown>>;
  return typeof a.listSubmissions === "function" && typeof a.inspectSubmission === "function" && typeof a.cancelSubmission === "function"
    ? (agent as SubmissionApi)
    : null;
}

/** Think's `inspectSubmission` for AgentWork (read-backs by submission id), where the agent has it. */
export function chatSubmissionsOf(agent: object): Pick<AgentWork, "inspectSubmission"> {
  const api = submissionApi(agent);
  return api ? { inspectSubmission: (id) => api.inspectSubmission(id) } : {};
}

/** The public abort of one in-flight chat turn by request id: `cancelChat` (Think), else `abortRequest` (Think, AIChatAgent). */
function abortOf(agent: object): ((requestId: string, reason: string) => void) | null {
  const a = agent as { cancelChat?: unknown; abortRequest?: unknown };
  const f = typeof a.cancelChat === "function" ? a.cancelChat : typeof a.abortRequest === "function" ? a.abortRequest : null;
  return f ? (requestId, reason) => (f as (r: string, why: string) => void).call(agent, requestId, reason) : null;
}

/** Submissions still to run or running: work for force idle even before a turn carries them. */
export async function liveSubmissions(agent: object): Promise<Submission[]> {
  const api = submissionApi(agent);
  return api ? api.listSubmissions({ status: ["pending", "running"], limit: 100 }) : [];
}

export type ChatStopInput = {
  agent: object;
  work: AgentWork;
  /** Live Tasks runs of every kind (those carrying chat turns are handled here). */
  tasks: TaskRunAnswer[];
  /** Request ids of chat turns run as fibers (sub-agents): aborted here, judged by the caller with the other rows. */
  fiberTurns: string[];
  /** The reason as the SDK records it (`force idle: …`). */
  reason: string;
  settleMs: number;
  cancelTask: (runId: string, reason: string) => Promise<boolean>;
};

export type ChatStopResult = {
  /** Tasks run ids of the carriers handled here: the caller neither cancels nor judges them again. */
  handled: ReadonlySet<string>;
  turns: ForceIdleTurn[];
  /** How many turns still ran in memory after the abort and the wait (their stream may run on). */
  stuck: number;
};

/** One user turn: the requests to abort (its own, a recovery turn's), its carriers, its recoveries waiting to run. */
type Turn = { root: string; requestIds: Set<string>; carriers: string[]; recoveries: string[]; submission: Submission | null; running: boolean };

const POLL_MS = 20;

/** Stops every live chat turn and reports, per user turn, what the SDK says now. See the file comment. */
export async function stopChatTurns(i: ChatStopInput): Promise<ChatStopResult> {
  const api = submissionApi(i.agent);
  const abort = abortOf(i.agent);
  const chatWork = i.tasks.filter((t) => t.kind === "chat_turn");
  const carriers = chatWork.filter((t) => t.definition === CHAT_TURN_TASK);
  const none: ChatStopResult = { handled: new Set(), turns: [], stuck: 0 };
  if (!api && !abort) return none;
  const turns = await liveTurns(
    api,
    carriers,
    chatWork.filter((t) => t.definition !== CHAT_TURN_TASK),
  );
  for (const req of i.fiberTurns) abort?.(req, i.reason);
  if (turns.size === 0) return none;
  // A recovery waiting to run (its transport Task) is cancelled: nothing continues the turn afterwards.
  for (const t of turns.values()) for (const id of t.recoveries) await i.cancelTask(id, i.reason);

  // 1–2. Cancel submissions, abort every turn's request (idempotent: a cancelled submission's turn is aborted already).
  const cancelled = new Map<string, CancelResult>();
  for (const t of turns.values()) {
    if (t.submission && api) cancelled.set(t.root, await api.cancelSubmission(t.root, i.reason));
    for (const req of t.requestIds) abort?.(req, i.reason);
  }

  // 3. A turn stopped when its carrier settled by itself: its body returned, so its stream did too.
  const live = async (t: Turn) => {
    for (const id of t.carriers) {
      const run = await i.work.getTask(id);
      if (run && !TASK_TERMINAL_STATES.has(run.state)) return true;
    }
    return false;
  };
  const deadline = Date.now() + i.settleMs;
  let stuck: Turn[] = [];
  for (;;) {
    stuck = [];
    for (const t of turns.values()) if (await live(t)) stuck.push(t);
    if (stuck.length === 0 || Date.now() >= deadline) break;
    await scheduler.wait(POLL_MS);
  }
  for (const t of stuck) for (const id of t.carriers) await i.cancelTask(id, i.reason);

  // 4. Each turn as the SDK records it now.
  const out: ForceIdleTurn[] = [];
  for (const t of turns.values()) {
    out.push({
      runId: t.root,
      ref: t.submission ? t.root : (t.carriers[0] ?? t.root),
      submission: !!t.submission,
      wasRunning: t.running,
      ended: cancelled.get(t.root)?.outcome === "already_terminal",
      stuck: stuck.includes(t),
      sdkStatus: (t.submission && api ? await api.inspectSubmission(t.root) : null)?.status ?? null,
    });
  }
  return { handled: new Set(chatWork.map((c) => c.runId)), turns: out, stuck: stuck.length };
}

/**
 * The live turns by user turn: submissions pending or running, the turns live carriers run, and recoveries waiting
 * to run. Chat work arrives named by its user turn (inspect.ts liveTaskRuns); a submission is its own user turn.
 */
async function liveTurns(api: SubmissionApi | null, carriers: TaskRunAnswer[], recoveries: TaskRunAnswer[]): Promise<Map<string, Turn>> {
  const subs = api ? await api.listSubmissions({ status: ["pending", "running"], limit: 100 }) : [];
  const turns = new Map<string, Turn>();
  const turn = (root: string) => {
    let t = turns.get(root);
    if (!t) {
      t = { root, requestIds: new Set<string>(), carriers: [], recoveries: [], submission: null, running: false };
      turns.set(root, t);
    }
    return t;
  };
  for (const s of subs) {
    const t = turn(s.submissionId);
    t.submission = s;
    t.requestIds.add(s.requestId ?? s.submissionId);
    t.running = s.status === "running";
  }
  for (const c of carriers) {
    if (!c.requestId) continue;
    const t = turn(c.requestId);
    t.requestIds.add(c.turnRequestId ?? c.requestId);
    t.carriers.push(c.runId);
    t.running ||= c.state === "running";
  }
  for (const r of recoveries) if (r.requestId) turn(r.requestId).recoveries.push(r.runId);
  return turns;
}
