import { APICallError } from "@ai-sdk/provider";
import { type ChatErrorClassification, defaultContextOverflowClassifier } from "@cloudflare/think";

/**
 * What a failed model call means, the way an app that knows its provider
 * would say it (Think leaves this mapping to the app):
 * - a prompt over the context window → `context_overflow` (compact and retry);
 * - HTTP 429 → `rate_limit`, HTTP 5xx / 529 "overloaded" → `transient`
 *   (bounded chat recovery with backoff);
 * - anything else (401, 400, …) → left unclassified, so the turn fails terminally.
 */
export function classifyModelError(error: unknown): ChatErrorClassification | undefined {
  const overflow = defaultContextOverflowClassifier(error);
  if (overflow) return overflow;
  const status = statusOf(error);
  if (status === 429) return "rate_limit";
  if (status !== undefined && status >= 500) return "transient";
  return undefined;
}

/** The HTTP status of a provider error, looking through wrappers (`cause`). Strings carry none. */
function statusOf(error: unknown): number | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current != null; depth++) {
    if (APICallError.isInstance(current)) return current.statusCode;
    if (typeof current !== "object") return undefined;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
