import type { Agent } from "agents";
import type { PauseState, RecoveryPause } from "./contract.js";
import { fiberIncidentId, RECOVERY_PAUSED_MARK } from "./facts.js";
import { publishEvent } from "./publish.js";
import { activeFiberIds } from "./sdk-layout.js";

/**
 * The agent side of a recovery pause. The pause lives in the agent's own storage, one key-value entry (one row of
 * the Durable Object's KV table): written by a pause, rewritten by each recovery it holds back, deleted by a resume.
 * It is honoured through the SDK's own hook, `onFiberRecovered`, composed with the agent's override:
 * - a plain runFiber: the hook throws an error the SDK records as a failed attempt; the SDK then keeps the run row
 *   and retries it with backoff (until `fiberRecoveryMaxAgeMs`, 24 h by default, from the run's start);
 * - a managed fiber (startFiber): the hook returns nothing, so the SDK leaves it `interrupted`; the pause keeps its
 *   id, and the resume recovers it through the agent's own hook and the SDK's `resolveFiber`.
 * - a chat turn (Think, AIChatAgent): the SDK asks `onChatRecovery` before every chat recovery (an evicted turn on
 *   wake, a stalled stream, an interrupted recovery turn). No answer of that hook holds a turn for later: `continue:
 *   false` ends it, and a throw marks the incident failed and leaves the turn stuck (Think: its submission stays
 *   `running`) with nothing to run it again. So the pause answers
 *   `{ continue: false }` (declined): the model is not called, the partial is kept, the SDK records the recovery
 *   skipped (`continue_disabled`; Think marks the submission errored). A resume does not restart it. (The SDK's
 *   other hook, `shouldKeepRecovering`, is not asked on an incident's first attempt, and its `false` seals the incident
 *   as exhausted, so the pause does not use it.)
 * An expired pause no longer holds anything back; what it held waits for the resume.
 */

/** The storage key of the pause (a prefix of our own, so it never meets the SDK's keys or the agent's). */
export const PAUSE_KEY = "agent-oncall:recovery-pause";

type Stored = Omit<RecoveryPause, "active">;
type FiberCtx = Parameters<Agent["onFiberRecovered"]>[0];
type Hook = (ctx: FiberCtx) => ReturnType<Agent["onFiberRecovered"]>;

/** The agent's Durable Object state (protected on the class; the mixin is the agent's own code). */
const stateOf = (agent: Agent): DurableObjectState => (agent as unknown as { ctx: DurableObjectState }).ctx;

/** The stored pause, active or expired (what it held still waits for a resume); null when none. */
export async function readPause(storage: DurableObjectStorage, now: number): Promise<RecoveryPause | null> {
  const p = await storage.get<Stored>(PAUSE_KEY);
  return p ? { ...p, active: p.until > now } : null;
}

export async function writePause(storage: DurableObjectStorage, p: Stored): Promise<void> {
  await storage.put(PAUSE_KEY, p);
}

export async function clearPause(storage: DurableObjectStorage): Promise<void> {
  await storage.delete(PAUSE_KEY);
}

/**
 * The pause and the recovery waiting now: run rows no callback of this instance runs (left by an eviction), and
 * the managed fibers the pause held that the SDK still has `interrupted`.
 */
export async function pauseState(agent: Agent, now: number): Promise<PauseState> {
  const pause = await readPause(stateOf(agent).storage, now);
  return { pause, pendingRecovery: (await waitingRecoveryIds(agent, pause?.held ?? [])).length };
}

/** Ids of the recovery waiting now: run rows no callback of this instance runs, and those of `held` still interrupted. */
export async function waitingRecoveryIds(agent: Agent, held: readonly string[]): Promise<string[]> {
  const active = activeFiberIds(agent);
  const rows = stateOf(agent).storage.sql.exec<{ id: string }>("SELECT id FROM cf_agents_runs").toArray();
  const ids = rows.filter((r) => !active?.has(r.id)).map((r) => r.id);
  for (const id of held) if ((await agent.inspectFiber(id))?.status === "interrupted") ids.push(id);
  return ids;
}

/**
 * Wraps the agent's `onFiberRecovered` (its own override, or the SDK's default) so a pause in force holds the
 * recovery back and anything else runs the agent's hook unchanged. Installed as an own property of the instance,
 * so it sits before the agent's override whatever the class order.
 */
export function composeFiberRecovery(agent: Agent, onSkip: (ctx: FiberCtx, pause: RecoveryPause, managed: boolean) => void): void {
  const self = agent as unknown as { onFiberRecovered: Hook };
  const own = self.onFiberRecovered;
  self.onFiberRecovered = async (ctx) => {
    const storage = stateOf(agent).storage;
    const pause = await readPause(storage, Date.now());
    if (!pause?.active) return own.call(agent, ctx);
    // The SDK passes a status only for a managed fiber (recovered through its ledger).
    const managed = ctx.status !== undefined;
    const { active: _a, ...stored } = pause;
    await writePause(storage, {
      ...stored,
      skipped: stored.skipped + 1,
      held: managed && !stored.held.includes(ctx.id) ? [...stored.held, ctx.id] : stored.held,
    });
    onSkip(ctx, pause, managed);
    if (managed) return undefined;
    throw new Error(`${RECOVERY_PAUSED_MARK} until ${new Date(pause.until).toISOString()}: ${pause.reason}`.slice(0, 500));
  };
}

/** What the SDK passes `onChatRecovery` (agents/chat `ChatRecoveryContext`), as far as the pause reads it. */
export type ChatRecoveryCtx = { incidentId: string; recoveryRootRequestId: string; requestId: string; attempt: number; recoveryKind: "retry" | "continue" };
type ChatHook = (ctx: ChatRecoveryCtx) => Promise<{ persist?: boolean; continue?: boolean } | undefined>;

/**
 * Wraps the agent's `onChatRecovery` (its own override, or the SDK's default) so a pause in force declines the chat
 * recovery (see the file comment) and anything else runs the agent's hook unchanged. Installed as an own property of
 * the instance, like composeFiberRecovery. Returns false for an agent without chat recovery (not a chat agent).
 */
export function composeChatRecovery(agent: Agent, onDecline: (ctx: ChatRecoveryCtx, pause: RecoveryPause) => void): boolean {
  const self = agent as unknown as { onChatRecovery?: ChatHook };
  const own = self.onChatRecovery;
  if (typeof own !== "function") return false;
  self.onChatRecovery = async (ctx) => {
    const storage = stateOf(agent).storage;
    const pause = await readPause(storage, Date.now());
    if (!pause?.active) return own.call(agent, ctx);
    const { active: _a, ...stored } = pause;
    await writePause(storage, { ...stored, skipped: stored.skipped + 1 });
    onDecline(ctx, pause);
    // persist stays the SDK's default (keep what was streamed: no model call); continue: false ends the turn.
    return { continue: false };
  };
  return true;
}

/**
 * Reports a chat recovery the pause declined (the SDK's `chat:recovery:skipped` does not say why): the turn's ids and
 * the SDK's attempt, through the publishing helper (publish.ts: the agent's diagnostics channel, or its outbox).
 */
export function recordChatDecline(agent: Agent, ctx: ChatRecoveryCtx, pause: RecoveryPause): void {
  const fiberName = (agent.constructor as { CHAT_FIBER_NAME?: unknown }).CHAT_FIBER_NAME;
  publishEvent(
    agent,
    "recovery.skipped_paused",
    {
      kind: "chat_turn",
      fiberName: `${typeof fiberName === "string" ? fiberName : "chat turn"}:${ctx.requestId}`.slice(0, 200),
      decision: "declined",
      attempt: ctx.attempt,
      recoveryKind: ctx.recoveryKind,
      reason: pause.reason.slice(0, 2000),
      until: pause.until,
    },
    // The user's turn (the console keys a chat turn by its recovery root) and the SDK's own incident id.
    { requestId: ctx.recoveryRootRequestId.slice(0, 200), incidentId: ctx.incidentId },
  );
}

/**
 * Recovers the managed fibers a pause held: each still `interrupted` goes through the agent's hook (the pause is
 * gone by now, so the agent's own recovery runs) and its answer settles the fiber through the SDK's `resolveFiber`,
 * as the SDK's own recovery would. Returns the ids the hook settled.
 */
export async function recoverHeld(agent: Agent, held: string[]): Promise<string[]> {
  const settled: string[] = [];
  for (const id of held) {
    const f = await agent.inspectFiber(id);
    if (f?.status !== "interrupted") continue;
    const ctx: FiberCtx = {
      id,
      name: f.name,
      status: "interrupted",
      snapshot: f.snapshot ?? null,
      createdAt: f.createdAt,
      recoveryReason: "interrupted",
      ...(f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {}),
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
    };
    const result = await agent.onFiberRecovered(ctx);
    if (result && (await agent.resolveFiber(id, result))) settled.push(id);
  }
  return settled;
}

/**
 * Reports a held-back recovery of a managed fiber through the publishing helper (a runFiber's is the SDK's own
 * `fiber:recovery:failed`, which the console reads as held by the pause).
 */
export function recordSkip(agent: Agent, ctx: FiberCtx, pause: RecoveryPause): void {
  publishEvent(
    agent,
    "recovery.skipped_paused",
    { kind: "managed_fiber", fiberName: ctx.name.slice(0, 200), decision: "held", reason: pause.reason.slice(0, 2000), until: pause.until },
    { fiberId: ctx.id, incidentId: fiberIncidentId(agent.constructor.name, agent.name, ctx.id) },
  );
}
