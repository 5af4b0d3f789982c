import { DAY_MS, HISTORY_PREFIX, prefixDay } from "./layout";

/**
 * Retention of the R2 history: whole UTC days whose every hour is older than the cutoff are deleted, oldest
 * first, in bounded steps (a list of up to 1,000 keys, then one delete of those keys). A day is never cut in
 * part, so a reader never sees half a day. What a run could not finish, the next run continues.
 */

export type HistoryRetentionResult = {
  /** Days older than this (epoch ms) are deleted whole. */
  cutoff: number;
  /** yyyy-mm-dd of the days emptied completely in this run. */
  daysDeleted: string[];
  objectsDeleted: number;
  /** List calls (R2 Class A) and delete calls (free) made. */
  lists: number;
  deletes: number;
  /** False when the step budget ran out with expired days left. */
  complete: boolean;
};

/** Steps (list + delete pairs) one cron run takes at most: ~100 subrequests, up to 50,000 objects. */
export const HISTORY_RETENTION_STEPS = 50;

/** Deletes the history days older than `maxAgeDays` before `now`, at most `maxSteps` list-and-delete steps. */
export async function runHistoryRetention(bucket: R2Bucket, opts: { maxAgeDays: number; now?: number; maxSteps?: number }): Promise<HistoryRetentionResult> {
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.maxAgeDays * DAY_MS;
  const maxSteps = opts.maxSteps ?? HISTORY_RETENTION_STEPS;
  const out: HistoryRetentionResult = { cutoff, daysDeleted: [], objectsDeleted: 0, lists: 0, deletes: 0, complete: true };
  // The expired days: date folders sort by date, so listing stops at the first day still inside retention.
  const expired: string[] = [];
  let cursor: string | undefined;
  outer: for (;;) {
    if (out.lists >= maxSteps) return { ...out, complete: false };
    out.lists++;
    const page = await bucket.list({ prefix: HISTORY_PREFIX, delimiter: "/", ...(cursor ? { cursor } : {}) });
    for (const p of page.delimitedPrefixes) {
      const day = prefixDay(p);
      if (day === null) continue;
      if (day + DAY_MS > cutoff) break outer;
      expired.push(p);
    }
    if (!page.truncated) break;
    cursor = page.cursor;
  }
  for (const prefix of expired) {
    for (;;) {
      if (out.lists >= maxSteps) return { ...out, complete: false };
      out.lists++;
      const page = await bucket.list({ prefix, limit: 1000 });
      if (page.objects.length) {
        await bucket.delete(page.objects.map((o) => o.key));
        out.deletes++;
        out.objectsDeleted += page.objects.length;
      }
      if (!page.truncated) break;
    }
    out.daysDeleted.push(prefix.slice(HISTORY_PREFIX.length, -1));
  }
  return out;
}
