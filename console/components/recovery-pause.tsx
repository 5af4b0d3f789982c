import type { RecoveryPause } from "../../src/admin-rpc/contract";
import type { RecoveryPauseView } from "../../src/store/read-models/recovery-pauses";
import { ago, duration, iso } from "../format";

/** The console's record of an agent's recovery pause, in words (facts from the store's recovery_pauses). */
export function pauseSentence(p: RecoveryPauseView, now: number): string {
  const by = p.actor ? ` by ${p.actor}` : "";
  const why = p.reason ? `: ${p.reason}` : "";
  const held = p.skipped ? ` ${p.skipped} recovery attempt(s) held back so far${p.lastSkippedAt ? `, the last ${ago(p.lastSkippedAt, now)}` : ""}.` : "";
  switch (p.state) {
    case "paused":
      return `Recovery is paused${by} until ${iso(p.until!)} (${duration(p.until! - now)} from now)${why}.${held} Interrupted runs stay recoverable: resume recovers them.`;
    case "expired":
      return `A recovery pause${by} expired ${ago(p.until!, now)}${why}. Recovery runs again; what the pause held waits for resume.${held}`;
    case "resumed":
      return `Recovery was resumed${by} ${ago(p.changedAt, now)}${why}.`;
  }
}

/** The recovery pause as the console recorded it (agent page, incident page); nothing when no one ever paused the agent. */
export function RecoveryPauseState(props: { pause: RecoveryPauseView | null; now: number }) {
  const p = props.pause;
  if (!p) return <p class="muted" data-testid="recovery-pause" data-state="none" hidden />;
  return (
    <p class={p.state === "paused" ? "warn" : "muted"} data-testid="recovery-pause" data-state={p.state} data-skipped={String(p.skipped)}>
      {pauseSentence(p, props.now)}
    </p>
  );
}

/** The pause as the agent itself holds it (its live status): what it does now, read from the agent. */
export function LivePause(props: { pause: RecoveryPause | null; now: number }) {
  const p = props.pause;
  if (!p)
    return (
      <dd data-testid="live-recovery-pause" data-active="none">
        not paused
      </dd>
    );
  const held = p.held.length ? `; ${p.held.length} managed fiber(s) held for resume` : "";
  return (
    <dd data-testid="live-recovery-pause" data-active={String(p.active)}>
      {p.active ? `paused until ${iso(p.until)} (${duration(p.until - props.now)} from now)` : `pause expired ${ago(p.until, props.now)}`}: {p.reason} ·{" "}
      {p.skipped} held back{held}
    </dd>
  );
}
