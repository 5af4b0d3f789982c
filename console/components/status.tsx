/** A coloured status label. The class is chosen from a fixed set; the text is escaped. */
const TONES: Record<string, string> = {
  running: "info", open: "warn", recovering: "warn", rescheduled: "warn", interrupted: "warn",
  idle: "ok", recovered: "ok", completed: "ok", ok: "ok", noop: "muted", skipped: "muted",
  exhausted: "bad", failed: "bad", error: "bad", recovery_failed: "bad", terminated: "muted", denied: "bad", invalid: "bad",
};

export function Status(props: { value: string | null | undefined }) {
  const v = props.value ?? "running";
  // Own keys only: a stored status like "constructor" must not pick up Object.prototype.
  return <span class={`badge ${Object.hasOwn(TONES, v) ? TONES[v] : "muted"}`}>{v}</span>;
}
