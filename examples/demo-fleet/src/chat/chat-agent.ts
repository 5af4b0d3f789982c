import { withAdminRpc } from "@agent-oncall/admin-rpc";
import { withTelemetry } from "@agent-oncall/telemetry";
import { otlpTracing } from "@agent-oncall/telemetry/otlp";
import {
  type ChatErrorClassification,
  type ChatRecoveryContext,
  type ChatRecoveryOptions,
  type StepContext,
  Think,
  type ThinkSession,
} from "@cloudflare/think";
import { type LanguageModel, type ToolSet, tool } from "ai";
import { z } from "zod";
import type { Env } from "../env";
import { classifyModelError } from "./classify-error";
import { withSummaryCompaction } from "./compaction";
import { ModelMonitor } from "./model-monitor";
import { chatRecoveryConfig, type RecoveryPolicy, RecoveryPolicyStore } from "./recovery-policy";
import { parseScriptInput, type ScriptInput, type ScriptLane, type ScriptStep } from "./script";
import { type ModelCallRecord, ScriptStore } from "./script-store";
import { createScriptedModel, type ScriptedModelEvent } from "./scripted-model";
import { durableStreamingBlocks, type SdkRecoveryIncident, sdkRecoveryIncidents } from "./sdk-chat-state";

/** How a turn ended, as `saveMessages` reports it, plus the assistant's reply text. */
export type TurnOutcome = { requestId: string; status: string; error?: string; reply: string };

/** Where the scripted model was when `startUserMessage` returned. */
export type TurnStart = { requestId: string | null; model: ScriptedModelEvent["type"]; durableBlocks: number };

export type TranscriptEntry = { id: string; role: string; text: string };

const START_TIMEOUT_MS = 10_000;

/**
 * A real chat agent on `@cloudflare/think` (agents 0.32) whose model is the
 * scripted stand-in. Every turn runs through Think's durable turn loop, so an
 * eviction, a stalled or failing stream, or a context overflow drives the
 * SDK's own chat recovery and compaction, and their `chat:*` events reach D1
 * through the telemetry mixin. It stays on that opt-in outbox (the Worker's tail skips what it shipped) for the
 * model usage (re-spent tokens) the SDK does not publish; DemoFiberAgent shows the tail path alone.
 */
export class ChatAgent extends withAdminRpc(withTelemetry(Think<Env>, { tracing: otlpTracing })) {
  readonly #script: ScriptStore;
  readonly #policies: RecoveryPolicyStore;
  readonly #monitor = new ModelMonitor();
  #policy!: RecoveryPolicy;
  #chatModel: LanguageModel | undefined;
  #summaryModel: LanguageModel | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#script = new ScriptStore(ctx.storage.sql);
    this.#policies = new RecoveryPolicyStore(ctx.storage.sql);
    // Recovery budgets must be in place before the SDK's wake-time recovery runs (before onStart).
    this.#apply(this.#policies.read());
  }

  // ── Think configuration ────────────────────────────────────────────────

  override getModel(): LanguageModel {
    this.#chatModel ??= createScriptedModel({
      lane: "chat",
      store: this.#script,
      requestId: () => this.activeTurn?.requestId,
      onEvent: (e) => this.#monitor.push(e),
    });
    return this.#chatModel;
  }

  override getSystemPrompt(): string {
    return "You are the on-call console's demo assistant. Answer briefly.";
  }

  override getTools(): ToolSet {
    return {
      lookup_notes: tool({
        description: "Look up the team's notes on a topic.",
        inputSchema: z.object({ topic: z.string() }),
        execute: async ({ topic }) => ({ topic, notes: `No open incidents about ${topic}.` }),
      }),
    };
  }

  override configureSession(session: ThinkSession): ThinkSession {
    return withSummaryCompaction(session, () => {
      this.#summaryModel ??= createScriptedModel({ lane: "summary", store: this.#script, onEvent: (e) => this.#monitor.push(e) });
      return this.#summaryModel;
    });
  }

  override classifyChatError(error: unknown): ChatErrorClassification | undefined {
    return classifyModelError(error);
  }

  /**
   * Every model step reports its token usage. The telemetry stamps a step that runs inside a recovery
   * attempt (a continuation of an evicted or stalled turn) with its incident, so the console shows what
   * recovery re-spent.
   */
  override onStepFinish(ctx: StepContext): void {
    this.telemetry.usage(ctx.usage, { requestId: this.activeTurn?.requestId, model: ctx.model?.modelId });
  }

  override async onChatRecovery(_ctx: ChatRecoveryContext): Promise<ChatRecoveryOptions> {
    return this.#policy.autoContinue ? {} : { continue: false };
  }

  // ── admin hooks ────────────────────────────────────────────────────────

  /**
   * Force idle: abort every in-flight chat turn (Think's own cancel path, so the partial reply is kept and
   * the turn reports "aborted"). The admin mixin then cancels the turns' Tasks runs and clears the
   * chat-recovery records, so no recovery picks the turn up again.
   */
  onAdminForceIdle(_reason: string): string[] {
    const active = this.activeTurn?.requestId;
    this.cancelAllChats();
    return active ? [`chat-turn:${active}`] : [];
  }

  // ── RPC for tests and the demo driver ──────────────────────────────────

  /** Queues the scripted model's next steps (see `ScriptInput`); returns how many are pending on that lane. */
  setScript(input: ScriptInput): { lane: string; pending: number } {
    const s = parseScriptInput(input);
    return { lane: s.lane, pending: this.#script.set(s.lane, s.steps, { append: s.append, fallback: s.fallback }) };
  }

  /** The steps still queued on a lane. */
  pendingScript(lane: ScriptLane = "chat"): ScriptStep[] {
    return this.#script.pending(lane);
  }

  /** Merges `patch` into this agent's recovery policy; applies now and after every eviction. */
  setRecoveryPolicy(patch: Partial<RecoveryPolicy>): RecoveryPolicy {
    const next = this.#policies.update(patch);
    this.#apply(next);
    return next;
  }

  /** Sends a user message and waits for the whole turn (`saveMessages`). */
  async sendUserMessage(text: string): Promise<TurnOutcome> {
    const result = await this.saveMessages([userMessage(text)]);
    return { requestId: result.requestId, status: result.status, ...(result.error ? { error: result.error } : {}), reply: this.#lastAssistantText() };
  }

  /**
   * Starts a turn in the background and returns once the scripted model
   * stalled, finished or failed on its first call, and whatever it streamed
   * has reached durable storage — the point where an eviction leaves a
   * recoverable partial behind.
   */
  async startUserMessage(text: string): Promise<TurnStart> {
    const from = this.#monitor.cursor;
    const turn = this.saveMessages([userMessage(text)]);
    turn.catch(() => {}); // the outcome of a turn that gets evicted is decided by recovery, not here
    const reached = await this.#monitor.waitFor(
      from,
      (e) => e.lane === "chat" && (e.type === "stalled" || e.type === "finished" || e.type === "failed"),
      START_TIMEOUT_MS,
    );
    const streamed = this.#monitor.since(from).some((e) => e.lane === "chat" && e.type === "chunk");
    let blocks = durableStreamingBlocks(this.ctx.storage.sql);
    for (let i = 0; streamed && blocks === 0 && reached.type === "stalled" && i < 100; i++) {
      await scheduler.wait(10);
      blocks = durableStreamingBlocks(this.ctx.storage.sql);
    }
    return { requestId: "requestId" in reached ? reached.requestId : null, model: reached.type, durableBlocks: blocks };
  }

  /** Cancels a turn, or its scheduled recovery (Think's `cancelChat`). */
  cancelTurn(requestId: string): void {
    this.cancelChat(requestId, "cancelled by the on-call driver");
  }

  /** Simulates an eviction: the isolate's memory is gone, storage survives. */
  evict(reason = "test eviction"): void {
    this.ctx.abort(reason);
  }

  /** The conversation as the model sees it (compaction summaries included). */
  transcript(): TranscriptEntry[] {
    return this.messages.map((m) => ({ id: m.id, role: m.role, text: textOf(m.parts) }));
  }

  /** The scripted model's call log (durable across evictions). */
  modelCalls(): ModelCallRecord[] {
    return this.#script.calls();
  }

  /** The SDK's own recovery incident records for this agent. */
  recoveryIncidents(): Promise<SdkRecoveryIncident[]> {
    return sdkRecoveryIncidents(this.ctx.storage);
  }

  /** Waits until telemetry queued so far has been handed to the Queue. */
  async settleTelemetry(): Promise<void> {
    await this.telemetry.settle();
  }

  // ── internals ──────────────────────────────────────────────────────────

  #apply(policy: RecoveryPolicy): void {
    this.#policy = policy;
    this.chatRecovery = chatRecoveryConfig(policy, () => this.#script.callCount("chat"));
    this.chatStreamStallTimeoutMs = policy.stallTimeoutMs;
    this.contextOverflow = { reactive: true, maxRetries: 1, proactive: { maxInputTokens: policy.maxInputTokens } };
  }

  #lastAssistantText(): string {
    const last = [...this.messages].reverse().find((m) => m.role === "assistant");
    return last ? textOf(last.parts) : "";
  }
}

function userMessage(text: string) {
  return { id: `user-${crypto.randomUUID()}`, role: "user" as const, parts: [{ type: "text" as const, text }] };
}

function textOf(parts: readonly { type: string; text?: unknown }[]): string {
  return parts
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text as string)
    .join("");
}
