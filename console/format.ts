/**
 * Small formatting helpers shared by pages. Pure functions that never throw:
 * D1 can hold any number (a clock-skewed agent, an old schema, a hand-edited
 * row), and one odd value must not take a page down. Rendering escapes their output.
 */

/** The largest |epoch ms| a JavaScript Date can represent (±100,000,000 days). */
const MAX_DATE_MS = 8.64e15;

/** True when `t` is epoch milliseconds a Date can represent. */
export function isValidTime(t: unknown): t is number {
  return typeof t === "number" && Number.isFinite(t) && Math.abs(t) <= MAX_DATE_MS;
}

/** The marker shown instead of a time that cannot be one, with the stored value so it can be traced. */
export function invalidTime(t: unknown): string {
  return `invalid time (${String(t)})`;
}

/** "3m ago", "2h ago", "5d ago" relative to `now`; "in 4m" for a time ahead of `now` by more than a minute. */
export function ago(t: number | null | undefined, now = Date.now()): string {
  if (t === null || t === undefined || t === 0) return "—";
  if (!isValidTime(t) || !isValidTime(now)) return invalidTime(t);
  const diff = Math.round((now - t) / 1000);
  // Small skew between an agent's clock and ours reads as "just now", not as the future.
  if (diff < -60) return `in ${span(-diff)}`;
  return `${span(Math.max(0, diff))} ago`;
}

function span(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** ISO timestamp without milliseconds, in UTC; a readable marker for a value no Date can hold. */
export function iso(t: number | null | undefined): string {
  if (t === null || t === undefined || t === 0) return "—";
  if (!isValidTime(t)) return invalidTime(t);
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** ISO timestamp with milliseconds, in UTC (timelines: events of one run are often milliseconds apart). */
export function isoMs(t: number | null | undefined): string {
  if (t === null || t === undefined || t === 0) return "—";
  if (!isValidTime(t)) return invalidTime(t);
  return new Date(t).toISOString();
}

/** A gap between two events: "+0ms", "+850ms", "+1.204s", "+4m 10s"; milliseconds stay visible below a minute. */
export function gap(ms: number): string {
  if (!Number.isFinite(ms)) return `invalid duration (${String(ms)})`;
  if (ms < 0) return `-${gap(-ms).slice(1)}`;
  if (ms < 1000) return `+${Math.round(ms)}ms`;
  if (ms < 60_000) return `+${(ms / 1000).toFixed(3)}s`;
  return `+${duration(ms)}`;
}

/** A duration in ms as "850ms", "12s", "4m 10s", "3h 2m" ("-12s" when negative, e.g. an overdue alarm); a marker for a non-finite one. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (typeof ms !== "number" || !Number.isFinite(ms)) return `invalid duration (${String(ms)})`;
  if (ms < 0) return `-${duration(-ms)}`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** The time from `start` to `end` as a duration; "—" when either is not a time (shown as such elsewhere). */
export function elapsed(start: number | null | undefined, end: number | null | undefined): string {
  if (!isValidTime(start) || !isValidTime(end)) return "—";
  return duration(Math.max(0, end - start));
}

/** Bytes as "812 B", "4.2 KB", "1.3 MB"; a marker for a negative or non-finite size. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return `invalid size (${String(n)})`;
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * A count as people read it, with thousands separators: "3,070,630", "-12", "0". The one formatter every page uses
 * for a count (figures, tokens, rows, attempts), in en-US grouping whatever the reader's locale (pages are rendered on
 * the server, and the same page must read the same to everyone on the call). A dash for no value; a marker for a value
 * that is not a finite number (a hand-edited row), as the other helpers here do.
 */
export function count(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (typeof n !== "number" || !Number.isFinite(n)) return `invalid count (${String(n)})`;
  return n.toLocaleString("en-US", { maximumFractionDigits: 0 });
}

/** A capped count as "≥1,000" or "42". */
export function capped(c: { n: number; capped: boolean }): string {
  return c.capped ? `≥${count(c.n)}` : count(c.n);
}
