/**
 * A Map that forgets its oldest entries past `max` (insertion order; setting a key again makes it the newest): the
 * chat-turn folds' memory of recoveries, bounded so a long-lived isolate never grows with the fleet's history.
 */
export class BoundedMap<V> extends Map<string, V> {
  constructor(readonly max: number) {
    super();
  }

  override set(k: string, v: V): this {
    this.delete(k);
    super.set(k, v);
    if (this.size > this.max) this.delete(this.keys().next().value as string);
    return this;
  }
}

/** An id-like string from an SDK payload (non-empty, at most 200 characters), else null. */
export const idString = (v: unknown): string | null => (typeof v === "string" && v.length > 0 && v.length <= 200 ? v : null);
