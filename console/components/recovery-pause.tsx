import type { RecoveryPause } from "../../src/admin-rpc/contract";
import type { IncidentAttempts } from "../../src/store/read-models/incidents";
import type { RecoveryPauseView } from "../../src/store/read-models/recovery-pauses";
import { ago, duration, iso } from "../format";

/** The console's record of an agent's recovery pause, in words (facts from the store's recovery_pauses). */
export function pauseSentence(p: RecoveryPauseView, now: number): string {
  const by = p.actor ? ` by ${p.actor}` : "";
  const why = p.reason ? `: ${p.reason}` : "";
  const held = p.skipped ? ` ${p.skipped} recovery attempt(s) held back so far${p.lastSkippedAt ? `, the last ${ago(p.lastSkippedAt, now)}` : ""}.` : "";
  switch (p.state) {
    case "paused":
      return `Recovery is paused${by} until ${iso(p.until!)} (${duration(p.until! - now)} from now)${why}.${held} Interrupted fibers stay recoverable: resume recovers them. Chat turns interrupted meanwhile are stopped, not held.`;
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

/**
 * What recovery pauses did to one incident's recoveries (its own recovery.skipped_paused events): a chat turn's
 * recovery declined (the turn ended; the SDK's word stays), a fiber's held back (recoverable on resume).
 */
export function pauseSkipsSentence(s: IncidentAttempts["pauseSkips"], sdkStatus: string, now: number): string {
  const last = s.lastAt !== null ? `, the last ${ago(s.lastAt, now)}` : "";
  if (s.declined > 0)
    return `Stopped by a recovery pause: the agent declined ${s.declined} recovery attempt(s)${last}, so the model was not called again. The SDK records the recovery ${sdkStatus}; resuming does not restart this turn (the user can send it again).`;
  return `A recovery pause held back ${s.held} recovery attempt(s)${last}; the work stays recoverable and resume recovers it.`;
}

/** The incident's pause skips, when a pause stopped any of its recoveries; nothing otherwise. */
export function IncidentPauseSkips(props: { skips: IncidentAttempts["pauseSkips"]; sdkStatus: string; now: number }) {
  const s = props.skips;
  if (s.declined + s.held === 0) return null;
  return (
    <>
      <dt>stopped by pause</dt>
      <dd
        class={s.declined > 0 ? "warn" : "muted"}
        data-testid="incident-pause-skips"
        data-decision={s.declined > 0 ? "declined" : "held"}
        data-declined={String(s.declined)}
        data-held={String(s.held)}
      >
        {pauseSkipsSentence(s, props.sdkStatus, props.now)}
      </dd>
    </>
  );
}
