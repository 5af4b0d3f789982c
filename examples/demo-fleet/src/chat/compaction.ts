import type { ThinkSession } from "@cloudflare/think";
import { createCompactFunction } from "agents/sessions";
import type { LanguageModel } from "ai";
import { generateText } from "ai";

/**
 * Tail kept verbatim by compaction, in tokens. Small, so a conversation of a
 * few turns can actually be shortened (the SDK keeps the first three messages
 * and at least the last two anyway).
 */
export const KEEP_RECENT_TOKENS = 64;

/**
 * Wires the session's compaction function: the SDK picks the middle of the
 * history and the summariser model (its own script lane) writes the summary.
 * Compaction then runs only when Think asks for it (context overflow), never
 * on a token threshold between turns.
 */
export function withSummaryCompaction(session: ThinkSession, summarizer: () => LanguageModel): ThinkSession {
  return session.onCompaction(
    createCompactFunction({
      summarize: async (prompt) => (await generateText({ model: summarizer(), prompt, maxRetries: 0 })).text,
      keepRecentTokens: KEEP_RECENT_TOKENS,
    }),
  );
}
