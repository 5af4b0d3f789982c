import type { TelemetryEvent } from "./envelope.js";
import { eventTypesWithStep } from "./incident-lifecycle.js";

/**
 * Model token usage: reading it from what agents have at hand (an AI SDK result, or OpenTelemetry `gen_ai.*`
 * span attributes), and knowing which recovery attempt, if any, a model call belongs to.
 */

/** Token counts of one model call. */
export type ModelUsage = { inputTokens: number; outputTokens: number; model?: string };

/** Where a model call ran, as the agent can say it. Every field is optional; the more it says, the better the match. */
export type UsageContext = {
  /** The chat turn (AIChatAgent / Think request id, e.g. `this.activeTurn?.requestId`). */
  requestId?: string | undefined;
  /** The fiber the call ran in (`ctx.id` of runFiber / startFiber / onFiberRecovered). */
  fiberId?: string | undefined;
  /** The session and its turn number, for agents that report session.* events. */
  sessionName?: string | undefined;
  turnSeq?: number | undefined;
  /** The incident, when the agent knows it; otherwise the telemetry finds it from the recovery it is tracking. */
  incidentId?: string | undefined;
  /** Overrides the model id read from the usage object. */
  model?: string | undefined;
};

const MAX_TOKENS = 1e12;

/** A token count: a finite, non-negative number (rounded); anything else is not a count. */
function tokens(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isFinite(v) && v >= 0 && v < MAX_TOKENS) return Math.round(v);
  // Provider-level usage (LanguageModelV2+ spec) nests the count: `{ inputTokens: { total: 12, … } }`.
  if (v && typeof v === "object" && "total" in v) return tokens((v as { total: unknown }).total);
  return undefined;
}

const modelId = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim().slice(0, 200) : undefined);

/**
 * Reads token usage from what an agent has:
 * - an AI SDK usage object: `{ inputTokens, outputTokens }` (ai ≥ 5; `result.usage`, `totalUsage`, onStepFinish's
 *   `usage`), the older `{ promptTokens, completionTokens }` (ai 4), or a provider's nested
 *   `{ inputTokens: { total }, outputTokens: { total } }`;
 * - OpenTelemetry GenAI span attributes: `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens` (or the older
 *   `gen_ai.usage.prompt_tokens` / `completion_tokens`), with the model from `gen_ai.response.model` or
 *   `gen_ai.request.model`.
 * A missing side counts 0, but at least one side must be a valid count; negative, non-finite or non-numeric
 * counts make the whole reading invalid (null), so a bad report is never half-counted.
 */
export function readUsage(input: unknown): ModelUsage | null {
  if (!input || typeof input !== "object") return null;
  const o = input as Record<string, unknown>;
  const pairs: [unknown, unknown, unknown][] = [
    [o.inputTokens, o.outputTokens, o.modelId ?? o.model],
    [o.promptTokens, o.completionTokens, o.modelId ?? o.model],
    [o["gen_ai.usage.input_tokens"], o["gen_ai.usage.output_tokens"], o["gen_ai.response.model"] ?? o["gen_ai.request.model"]],
    [o["gen_ai.usage.prompt_tokens"], o["gen_ai.usage.completion_tokens"], o["gen_ai.response.model"] ?? o["gen_ai.request.model"]],
  ];
  for (const [i, out, m] of pairs) {
    if (i === undefined && out === undefined) continue;
    const inputTokens = i === undefined || i === null ? 0 : tokens(i);
    const outputTokens = out === undefined || out === null ? 0 : tokens(out);
    if (inputTokens === undefined || outputTokens === undefined) return null;
    if (i == null && out == null) return null;
    const model = modelId(m);
    return { inputTokens, outputTokens, ...(model ? { model } : {}) };
  }
  return null;
}

/** Reads usage from OpenTelemetry span attributes (`gen_ai.usage.*`); the same as readUsage, named for intent. */
export function usageFromGenAiAttributes(attributes: Record<string, unknown> | null | undefined): ModelUsage | null {
  return readUsage(attributes ?? null);
}

/** Keys tracked at most (recoveries whose end this isolate never saw are forgotten oldest first). */
const MAX_TRACKED = 1000;

type Open = { incidentId: string; attempt?: number };

/** Events that say a recovery is under way (the incident is being recovered now): the lifecycle's detected and attempt steps. */
const OPENS = new Set<string>(eventTypesWithStep("detected", "attempt"));

/** Events after which the incident is no longer being recovered (the lifecycle's ended step). */
const CLOSES = new Set<string>(eventTypesWithStep("ended"));

/**
 * Which recovery attempt a model call belongs to, decided in the agent.
 *
 * Why here and not at ingest: the agent's telemetry already ships every recovery event it sees (the SDK's
 * `chat:recovery:*` / `fiber:recovery:*`, the runtime's `session.status_rescheduled`), in order, in the isolate
 * that runs the attempt. Tracking "this request / fiber / session turn is being recovered as incident X, attempt
 * N" from those events and stamping usage recorded meanwhile with corr.incidentId is a lookup in memory. At
 * ingest, the same attribution would be a join over time windows of events that arrive out of order and in
 * different batches, which the projections' order-free merge rules cannot express. The cost is honest and
 * small: a call is attributed only while its isolate saw the attempt start and not yet its end; an attempt's
 * model calls run in the isolate that announced it (the SDK emits the attempt event before it runs the
 * recovery hook or the continuation turn).
 *
 * Keys: a chat turn by request id; a fiber by id; a session turn by session name and turn number. A chat
 * recovery continues in a NEW turn (its own request id): a recovery turn whose start names the user turn it
 * continues (`rootRequestId`, stamped by chat-turns.ts) is keyed to that turn's incident; failing that, a
 * continuation turn (`continuation: true`) that starts while exactly one chat incident is being recovered is
 * keyed to it: the SDK runs one chat turn at a time per agent.
 */
export class RecoveryScope {
  #byKey = new Map<string, Open>();
  /** Chat incidents being recovered now (in the order their attempts began). */
  #chat = new Map<string, Open>();

  /** Updates the tracked recoveries from one event this agent ships. Never throws on odd events. */
  observe(e: TelemetryEvent): void {
    const c = e.corr;
    const p = e.payload as { attempt?: unknown; recoveryCount?: unknown; turnSeq?: unknown; continuation?: unknown; rootRequestId?: unknown };
    const root = typeof p.rootRequestId === "string" ? p.rootRequestId : undefined;
    const keys = keysOf(c.requestId, c.fiberId, c.sessionName, typeof p.turnSeq === "number" ? p.turnSeq : undefined);
    // A recovery turn the agent joined to its user turn (chat-turns.ts): it runs for that turn's recovery.
    const rootOpen = e.type === "chat.turn.started" && root && c.requestId ? this.#byKey.get(`req:${root}`) : undefined;
    if (rootOpen) {
      this.#byKey.set(`req:${c.requestId}`, rootOpen);
      return;
    }
    if (e.type === "chat.turn.started" && p.continuation === true && c.requestId && this.#chat.size === 1) {
      const [open] = this.#chat.values();
      this.#byKey.set(`req:${c.requestId}`, open!);
      return;
    }
    if (!c.incidentId) return;
    if (OPENS.has(e.type)) {
      const n = typeof p.attempt === "number" ? p.attempt : typeof p.recoveryCount === "number" ? p.recoveryCount : undefined;
      const attempt = n ?? this.#find(c.incidentId)?.attempt;
      const open: Open = { incidentId: c.incidentId, ...(attempt !== undefined ? { attempt } : {}) };
      this.#replace(c.incidentId, open);
      for (const k of keys) this.#byKey.set(k, open);
      if (root && e.type.startsWith("chat.")) this.#byKey.set(`req:${root}`, open);
      if (e.type.startsWith("chat.")) this.#chat.set(c.incidentId, open);
      // An incident whose end this isolate never sees must not pin memory: forget the oldest keys past the cap.
      for (const k of this.#byKey.keys()) {
        if (this.#byKey.size <= MAX_TRACKED) break;
        this.#byKey.delete(k);
      }
    } else if (CLOSES.has(e.type)) {
      this.#close(c.incidentId);
    }
  }

  /** The recovery a call in `ctx` belongs to now, if any. */
  lookup(ctx: UsageContext): Open | undefined {
    for (const k of keysOf(ctx.requestId, ctx.fiberId, ctx.sessionName, ctx.turnSeq)) {
      const open = this.#byKey.get(k);
      if (open) return open;
    }
    return undefined;
  }

  #find(incidentId: string): Open | undefined {
    for (const o of this.#byKey.values()) if (o.incidentId === incidentId) return o;
    return undefined;
  }

  /** Points every key of `incidentId` at its newest attempt. */
  #replace(incidentId: string, open: Open): void {
    for (const [k, o] of this.#byKey) if (o.incidentId === incidentId) this.#byKey.set(k, open);
    if (this.#chat.has(incidentId)) this.#chat.set(incidentId, open);
  }

  #close(incidentId: string): void {
    for (const [k, o] of this.#byKey) if (o.incidentId === incidentId) this.#byKey.delete(k);
    this.#chat.delete(incidentId);
  }
}

function keysOf(requestId?: string, fiberId?: string, sessionName?: string, turnSeq?: number): string[] {
  const keys: string[] = [];
  if (requestId) keys.push(`req:${requestId}`);
  if (fiberId) keys.push(`fiber:${fiberId}`);
  if (sessionName && typeof turnSeq === "number") keys.push(`turn:${sessionName}\u0000${turnSeq}`);
  return keys;
}
