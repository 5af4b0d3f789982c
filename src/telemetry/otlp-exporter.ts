import type { Context } from "@opentelemetry/api";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";

import type { OtlpTarget } from "./config.js";

export type { OtlpTarget };

/** Counters the exporter keeps instead of throwing. */
export type ExportStats = { exported: number; failed: number; dropped: number; inFlight: number };

const MAX_BUFFER = 512;
const MAX_BATCH = 128;
const TIMEOUT_MS = 10_000;

/** POSTs spans as OTLP/HTTP JSON with a timeout. Resolves null when the endpoint accepted them, else why not; never rejects. */
export async function postSpans(target: OtlpTarget, spans: ReadableSpan[], timeoutMs = TIMEOUT_MS): Promise<Error | null> {
  try {
    const body = JsonTraceSerializer.serializeRequest(spans) ?? null;
    const res = await fetch(target.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...target.headers },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Drain the body so the connection is released.
    await res.arrayBuffer().catch(() => undefined);
    return res.ok ? null : new Error(`the OTLP endpoint answered ${res.status}`);
  } catch (e) {
    const timedOut = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    return new Error(
      timedOut
        ? `the OTLP endpoint did not answer within ${timeoutMs} ms`
        : `the OTLP endpoint could not be reached (${e instanceof Error ? e.message : String(e)})`,
    );
  }
}

/**
 * A SpanExporter (for otel-cf-workers' `exporter` option) that gives up after
 * a timeout, so a slow APM cannot hold a Worker invocation's waitUntil — and
 * with it a Queue consumer's next batch — for long.
 */
export class TimeoutOtlpExporter implements SpanExporter {
  constructor(
    private readonly target: OtlpTarget,
    private readonly timeoutMs = 5_000,
  ) {}

  export(spans: ReadableSpan[], done: (r: { code: number; error?: Error }) => void): void {
    // The error says why, so the exporter's log line is actionable.
    void postSpans(this.target, spans, this.timeoutMs).then((error) => done(error ? { code: 1, error } : { code: 0 }));
  }

  async shutdown(): Promise<void> {}
}

/**
 * A span processor that batches ended spans and POSTs them as OTLP/HTTP JSON.
 * It never blocks the caller: export runs in the background, one request at a
 * time, with a timeout; a full buffer drops the oldest spans and counts them.
 */
export class BackgroundOtlpProcessor implements SpanProcessor {
  readonly stats: ExportStats = { exported: 0, failed: 0, dropped: 0, inFlight: 0 };
  #buffer: ReadableSpan[] = [];
  #scheduled = false;
  #current: Promise<void> | null = null;

  constructor(
    private readonly target: OtlpTarget,
    private readonly keepAlive?: (p: Promise<unknown>) => void,
  ) {}

  onStart(_span: Span, _ctx: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#buffer.length >= MAX_BUFFER) {
      this.#buffer.shift();
      this.stats.dropped++;
    }
    this.#buffer.push(span);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#current) return;
    this.#scheduled = true;
    // A macrotask, so every span ended in this turn of the event loop goes in one request.
    setTimeout(() => {
      this.#scheduled = false;
      this.#current = this.#drain().finally(() => {
        this.#current = null;
        if (this.#buffer.length) this.#schedule();
      });
      this.keepAlive?.(this.#current);
    }, 0);
  }

  async #drain(): Promise<void> {
    while (this.#buffer.length) {
      const batch = this.#buffer.splice(0, MAX_BATCH);
      this.stats.inFlight++;
      try {
        if ((await postSpans(this.target, batch)) === null) this.stats.exported += batch.length;
        else this.stats.failed += batch.length;
      } finally {
        this.stats.inFlight--;
      }
    }
  }

  /** Resolves when everything buffered so far has been attempted. */
  async forceFlush(): Promise<void> {
    if (this.#current) await this.#current;
    if (this.#buffer.length) {
      this.#current = this.#drain().finally(() => (this.#current = null));
      await this.#current;
    }
  }

  shutdown(): Promise<void> {
    return this.forceFlush();
  }
}
