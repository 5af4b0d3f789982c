/** A coloured status label. The class is chosen from a fixed set; the text is escaped. */
const TONES: Record<string, string> = {
  running: "info",
  open: "warn",
  recovering: "warn",
  rescheduled: "warn",
  interrupted: "warn",
  pending: "info",
  waiting: "info",
  idle: "ok",
  recovered: "ok",
  completed: "ok",
  ok: "ok",
  partial: "warn",
  noop: "muted",
  skipped: "muted",
  cancelled: "muted",
  exhausted: "bad",
  failed: "bad",
  error: "bad",
  recovery_failed: "bad",
  recovery_skipped: "muted",
  terminated: "muted",
  denied: "bad",
  invalid: "bad",
  force_idled: "muted",
  ended_unreported: "warn",
  // The console does not know how it ended (an agent it cannot ask, a status word it does not know): a possible loss.
  unknown: "warn",
};

/** A status badge. `label` replaces the text (e.g. "failed (no reason given)"); the tone follows `value`. */
export function Status(props: { value: string | null | undefined; label?: string }) {
  const v = props.value ?? "running";
  // Own keys only: a stored status like "constructor" must not pick up Object.prototype.
  return <span class={`badge ${Object.hasOwn(TONES, v) ? TONES[v] : "muted"}`}>{props.label ?? v}</span>;
}
