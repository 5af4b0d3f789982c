/** Small formatting helpers shared by pages. Pure functions; rendering escapes their output. */

/** "3m ago", "2h ago", "5d ago" relative to `now`. */
export function ago(t: number | null | undefined, now = Date.now()): string {
  if (!t) return "—";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** ISO timestamp without milliseconds, in UTC. */
export function iso(t: number | null | undefined): string {
  return t ? new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z") : "—";
}

/** A duration in ms as "850ms", "12s", "4m 10s", "3h 2m". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** Bytes as "812 B", "4.2 KB", "1.3 MB". */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A capped count as "≥1000" or "42". */
export function capped(c: { n: number; capped: boolean }): string {
  return c.capped ? `≥${c.n}` : String(c.n);
}

/** Builds a URL keeping only set query values (filters live in the URL). */
export function href(path: string, query: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
