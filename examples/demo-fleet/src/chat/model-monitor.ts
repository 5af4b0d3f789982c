import type { ScriptedModelEvent } from "./scripted-model";

/**
 * In-memory view of what the scripted model is doing in this isolate, so a
 * driver can start a turn and return once the model reached a point of the
 * script (streaming, stalled, finished, failed) instead of guessing with sleeps.
 */
export class ModelMonitor {
  #events: ScriptedModelEvent[] = [];
  #waiters = new Set<() => void>();

  /** Records an event and wakes the waiters. */
  push(event: ScriptedModelEvent): void {
    this.#events.push(event);
    if (this.#events.length > 1000) this.#events.splice(0, this.#events.length - 1000);
    for (const w of [...this.#waiters]) w();
  }

  /** Number of events seen so far (a cursor for `waitFor`). */
  get cursor(): number {
    return this.#events.length;
  }

  /** Events recorded after cursor `from`. */
  since(from: number): ScriptedModelEvent[] {
    return this.#events.slice(from);
  }

  /** Resolves with the first event after `from` that matches, or rejects after `timeoutMs`. */
  waitFor(from: number, match: (e: ScriptedModelEvent) => boolean, timeoutMs: number): Promise<ScriptedModelEvent> {
    return new Promise((resolve, reject) => {
      let scanned = from;
      const check = () => {
        for (; scanned < this.#events.length; scanned++) {
          const e = this.#events[scanned]!;
          if (match(e)) {
            done();
            resolve(e);
            return;
          }
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`scripted model did not reach the expected point within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }
}
