import type { ModelRequest, ModelResponse, SessionModel } from "./model";

/**
 * The one stand-in allowed: a scripted model behind the real interface (there
 * is no network here). Each turn follows a script that says what to stream,
 * whether to call a tool, and whether to stall or fail.
 */
export type TurnScript = {
  /** Chunks streamed by the first request of the turn. */
  chunks: string[];
  /** A tool the first request asks for; the second request then streams `final`. */
  tool?: { name: string; args: Record<string, unknown> };
  final?: string[];
  /** Pause between chunks (ms). */
  chunkDelayMs?: number;
  /** Never finish the first request (until aborted or evicted). */
  stall?: boolean;
  /** Fail the first request with this message. */
  fail?: string;
};

/** Default behaviour when no script is set: a short, friendly answer. */
export const DEFAULT_SCRIPT: TurnScript = { chunks: ["Sure. ", "Working on it. ", "Done."] };

export class ScriptedModel implements SessionModel {
  constructor(private readonly scriptFor: (turnSeq: number) => TurnScript) {}

  async respond(req: ModelRequest, signal: AbortSignal, onChunk: (text: string) => void | Promise<void>): Promise<ModelResponse> {
    const script = this.scriptFor(req.turnSeq);
    const first = req.step === 1;
    if (first && script.fail) throw new Error(script.fail);
    const chunks = first ? script.chunks : (script.final ?? ["(tool result noted)"]);
    // A resumed request continues after what was already streamed.
    let already = req.partial ?? "";
    let text = "";
    for (const chunk of chunks) {
      if (signal.aborted) throw signal.reason ?? new Error("aborted");
      if (already.startsWith(chunk)) {
        already = already.slice(chunk.length);
        text += chunk;
        continue;
      }
      already = "";
      if (script.chunkDelayMs) await sleep(script.chunkDelayMs, signal);
      text += chunk;
      await onChunk(chunk);
    }
    if (first && script.stall) await sleep(Number.POSITIVE_INFINITY, signal);
    // Plausible counts, as a provider bills them: the whole prompt (history, partial, tool result) in, the text out.
    const prompt = JSON.stringify(req.history).length + (req.partial?.length ?? 0) + JSON.stringify(req.toolResult ?? null).length;
    const usage = { inputTokens: tokens(prompt), outputTokens: tokens(text.length) + (first && script.tool ? 8 : 0) };
    return first && script.tool ? { text, toolCall: script.tool, usage } : { text, usage };
  }
}

/** About four characters per token. */
function tokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason ?? new Error("aborted"));
    const t = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error("aborted"));
    });
  });
}
