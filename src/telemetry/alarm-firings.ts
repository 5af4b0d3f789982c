import { ALARM_COALESCE_MS } from "./constants.js";
import type { TelemetryEvent } from "./envelope.js";

type Fired = TelemetryEvent<"schedule.executed">;

/** The most firings one event stands for (the contract's cap on `count`). */
const MAX_COUNT = 1_000_000;

/** One callback's firings since the last event shipped for it. */
type Held = { shippedAt: number; pending: number; last: Fired | null };

/**
 * Coalesces alarm firings (`schedule.executed`) per callback, in memory only (no storage write on the agent's
 * path): the first firing of a callback ships at once; the next ones are counted, and the first firing at least
 * `windowMs` after the last shipped one ships carrying `count` = every firing since then, itself included. So a
 * loop every 30 s costs 12 events an hour, not 120, and the sum of `count` over the shipped events is the number
 * of firings up to the last one shipped, at that event's time (what the console's rate needs).
 *
 * What is held dies with the isolate: an evicted agent loses at most one window of firings per callback (never a
 * first firing, which ships at once). `drain()` ships what is held (settle: tests and shutdown paths).
 */
export class AlarmFirings {
  readonly #windowMs: number;
  readonly #held = new Map<string, Held>();

  constructor(windowMs: number = ALARM_COALESCE_MS) {
    this.#windowMs = Math.max(0, windowMs);
  }

  /** The event to ship for this firing (with its `count`), or null when it is held for a later one. */
  admit(event: Fired): Fired | null {
    const key = event.payload.callback;
    const held = this.#held.get(key);
    const fired = Math.min(MAX_COUNT, event.payload.count ?? 1);
    if (!held) {
      this.#held.set(key, { shippedAt: event.time, pending: 0, last: null });
      return event;
    }
    const count = Math.min(MAX_COUNT, held.pending + fired);
    if (event.time - held.shippedAt >= this.#windowMs || count >= MAX_COUNT) {
      this.#held.set(key, { shippedAt: event.time, pending: 0, last: null });
      return count === 1 ? event : { ...event, payload: { ...event.payload, count } };
    }
    held.pending = count;
    held.last = event;
    return null;
  }

  /** Firings held now, summed over callbacks (not shipped yet). */
  pending(): number {
    let n = 0;
    for (const h of this.#held.values()) n += h.pending;
    return n;
  }

  /** The held firings as events (one per callback, at its last held firing), and forgets them. */
  drain(): Fired[] {
    const out: Fired[] = [];
    for (const [key, h] of this.#held) {
      if (!h.last || h.pending === 0) continue;
      out.push(h.pending === 1 ? h.last : { ...h.last, payload: { ...h.last.payload, count: h.pending } });
      this.#held.set(key, { shippedAt: h.last.time, pending: 0, last: null });
    }
    return out;
  }
}
