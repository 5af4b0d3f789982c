/** How long one POST may take before it counts as failed (and is retried). */
export const DELIVERY_TIMEOUT_MS = 10_000;

/**
 * `ok`: the receiver took it (2xx). `retry`: worth trying again later (network error, timeout, 5xx,
 * 408, 429). `permanent`: another attempt would get the same answer (other 4xx: a wrong or revoked URL).
 */
export type DeliveryOutcome = { result: "ok" | "retry" | "permanent"; httpStatus: number | null; error: string | null };

/** POSTs one payload as JSON, with a timeout. Never throws. */
export async function deliver(url: string, body: string, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<DeliveryOutcome> {
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const timedOut = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    return {
      result: "retry",
      httpStatus: null,
      error: timedOut ? `no answer within ${timeoutMs} ms` : `request failed: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
  // The receiver's answer is only useful as a hint in the log: keep a short prefix, and drain the body.
  const text = (await res.text().catch(() => "")).slice(0, 200);
  if (res.ok) return { result: "ok", httpStatus: res.status, error: null };
  const error = `HTTP ${res.status}${text ? `: ${text}` : ""}`;
  const transient = res.status >= 500 || res.status === 408 || res.status === 429;
  return { result: transient ? "retry" : "permanent", httpStatus: res.status, error };
}
