import {
  APICallError,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4GenerateResult,
  type LanguageModelV4StreamPart,
  type LanguageModelV4StreamResult,
  type LanguageModelV4Usage,
} from "@ai-sdk/provider";
import type { ScriptLane, ScriptStep } from "./script";
import type { ScriptStore } from "./script-store";

/**
 * The only stand-in in the system: an AI SDK language model (provider spec v4,
 * as `ai@7` consumes it) whose every call follows the next step of a durable
 * script instead of a network provider. It streams, stalls, fails and
 * overflows the context window on cue, through the same interface a real
 * provider implements, so everything above it (streamText, Think's turn loop,
 * chat recovery, compaction) runs for real.
 */

/** What the model reports while it works (in memory, this isolate only). */
export type ScriptedModelEvent =
  | { type: "call"; lane: ScriptLane; kind: ScriptStep["kind"] | "none"; requestId: string | null }
  | { type: "chunk"; lane: ScriptLane; index: number; text: string }
  | { type: "stalled"; lane: ScriptLane; requestId: string | null }
  | { type: "finished"; lane: ScriptLane; requestId: string | null }
  | { type: "failed"; lane: ScriptLane; requestId: string | null; message: string };

export type ScriptedModelOptions = {
  lane: ScriptLane;
  store: ScriptStore;
  modelId?: string;
  /** The chat request the call runs for, if any (read at call time). */
  requestId?: () => string | undefined;
  onEvent?: (event: ScriptedModelEvent) => void;
};

const URL = "scripted://model";

/** Creates a scripted model over `store`'s queue for `lane`. */
export function createScriptedModel(opts: ScriptedModelOptions): LanguageModelV4 {
  return new ScriptedLanguageModel(opts);
}

class ScriptedLanguageModel implements LanguageModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "scripted";
  readonly modelId: string;
  readonly supportedUrls = {};

  constructor(private readonly opts: ScriptedModelOptions) {
    this.modelId = opts.modelId ?? `scripted-${opts.lane}`;
  }

  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const { step, requestId, promptChars } = this.#begin(options);
    const signal = options.abortSignal;
    const lane = this.opts.lane;
    const emit = (e: ScriptedModelEvent) => this.opts.onEvent?.(e);
    if (step.kind === "context_overflow" || (step.kind === "fail" && !step.chunks?.length)) {
      // Rejected before any byte streams, as a provider does with an HTTP error status.
      const error = this.#rejection(step, promptChars);
      emit({ type: "failed", lane, requestId, message: error.message });
      throw error;
    }
    const streamed: Exclude<ScriptStep, { kind: "context_overflow" }> = step;

    const parts = async function* (): AsyncGenerator<LanguageModelV4StreamPart> {
      yield { type: "stream-start", warnings: [] };
      yield { type: "response-metadata", id: `scripted-${crypto.randomUUID()}`, modelId: `scripted-${lane}`, timestamp: new Date() };
      if (streamed.kind === "tool_call") {
        const id = `call_${crypto.randomUUID().slice(0, 8)}`;
        yield { type: "tool-call", toolCallId: id, toolName: streamed.toolName, input: JSON.stringify(streamed.input) };
        yield {
          type: "finish",
          finishReason: { unified: "tool-calls", raw: "tool_use" },
          usage: usage(streamed.usage?.inputTokens ?? tokens(promptChars), streamed.usage?.outputTokens ?? 8),
        };
        emit({ type: "finished", lane, requestId });
        return;
      }
      const chunks = streamed.chunks ?? [];
      let text = "";
      if (chunks.length > 0) yield { type: "text-start", id: "t0" };
      for (const [index, delta] of chunks.entries()) {
        if (index > 0 && streamed.delayMs) await sleep(streamed.delayMs, signal);
        text += delta;
        yield { type: "text-delta", id: "t0", delta };
        emit({ type: "chunk", lane, index, text: delta });
      }
      if (streamed.kind === "stall") {
        emit({ type: "stalled", lane, requestId });
        await sleep(Number.POSITIVE_INFINITY, signal); // until aborted, or the isolate dies
        return;
      }
      if (streamed.kind === "fail") {
        const error = providerError(streamed.message, streamed.statusCode ?? 500, streamed.retryable ?? false);
        emit({ type: "failed", lane, requestId, message: streamed.message });
        yield { type: "error", error };
        return;
      }
      if (chunks.length > 0) yield { type: "text-end", id: "t0" };
      const u = streamed.kind === "text" ? streamed.usage : undefined;
      yield {
        type: "finish",
        finishReason: { unified: "stop", raw: "end_turn" },
        usage: usage(u?.inputTokens ?? tokens(promptChars), u?.outputTokens ?? tokens(text.length)),
      };
      emit({ type: "finished", lane, requestId });
    };

    return { stream: toStream(parts()), request: { url: URL, body: { messages: options.prompt.length } } };
  }

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const { step, requestId, promptChars } = this.#begin(options);
    const emit = (e: ScriptedModelEvent) => this.opts.onEvent?.(e);
    const lane = this.opts.lane;
    if (step.kind === "context_overflow" || step.kind === "fail") {
      const error = this.#rejection(step, promptChars);
      emit({ type: "failed", lane, requestId, message: error.message });
      throw error;
    }
    if (step.kind === "stall") {
      emit({ type: "stalled", lane, requestId });
      await sleep(Number.POSITIVE_INFINITY, options.abortSignal);
    }
    let content: LanguageModelV4Content[];
    let finish: LanguageModelV4GenerateResult["finishReason"];
    let u: LanguageModelV4Usage;
    if (step.kind === "tool_call") {
      content = [{ type: "tool-call", toolCallId: `call_${crypto.randomUUID().slice(0, 8)}`, toolName: step.toolName, input: JSON.stringify(step.input) }];
      finish = { unified: "tool-calls", raw: "tool_use" };
      u = usage(step.usage?.inputTokens ?? tokens(promptChars), step.usage?.outputTokens ?? 8);
    } else {
      const text = (step.chunks ?? []).join("");
      content = [{ type: "text", text }];
      finish = { unified: "stop", raw: "end_turn" };
      u = usage(step.kind === "text" ? (step.usage?.inputTokens ?? tokens(promptChars)) : tokens(promptChars), tokens(text.length));
    }
    emit({ type: "finished", lane, requestId });
    return { content, finishReason: finish, usage: u, warnings: [], request: { url: URL } };
  }

  /** Takes the next step durably and logs the call. A missing step is a call that fails loudly. */
  #begin(options: LanguageModelV4CallOptions): { step: ScriptStep; requestId: string | null; promptChars: number } {
    const { lane, store } = this.opts;
    const requestId = this.opts.requestId?.() ?? null;
    const promptChars = JSON.stringify(options.prompt).length;
    const step = store.take(lane);
    store.recordCall({ lane, kind: step?.kind ?? "none", requestId, promptMessages: options.prompt.length, promptChars });
    this.opts.onEvent?.({ type: "call", lane, kind: step?.kind ?? "none", requestId });
    return {
      step: step ?? { kind: "fail", message: `scripted model: no step left on lane "${lane}"`, statusCode: 500 },
      requestId,
      promptChars,
    };
  }

  #rejection(step: Extract<ScriptStep, { kind: "fail" | "context_overflow" }>, promptChars: number): APICallError {
    if (step.kind === "fail") return providerError(step.message, step.statusCode ?? 500, step.retryable ?? false);
    const limit = step.limit ?? 200_000;
    const used = Math.max(limit + 1, tokens(promptChars));
    return providerError(`prompt is too long: ${used} tokens > ${limit} maximum`, 400, false);
  }
}

/** A provider-shaped error, as `@ai-sdk/*` providers raise for a failed HTTP call. */
function providerError(message: string, statusCode: number, isRetryable: boolean): APICallError {
  return new APICallError({
    message,
    url: URL,
    requestBodyValues: {},
    statusCode,
    responseBody: JSON.stringify({ type: "error", error: { message } }),
    isRetryable,
  });
}

function tokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

function usage(input: number, output: number): LanguageModelV4Usage {
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

/** Waits `ms` (Infinity: forever), rejecting with the abort reason when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const timer = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason ?? new Error("aborted"));
      },
      { once: true },
    );
  });
}

function toStream(parts: AsyncGenerator<LanguageModelV4StreamPart>): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream<LanguageModelV4StreamPart>({
    async pull(controller) {
      const next = await parts.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await parts.return(undefined);
    },
  });
}
