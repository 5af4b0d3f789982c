import type { BulkTarget, StuckConfig, StuckEntry } from "../src/store/read-models";
import { bulkMatchWords, runKindWords } from "./words";

/**
 * Stuck findings in words for operators: the page's "why" column, the /stuck JSON's `detail`, the bulk preview
 * and the stuck alert all phrase a finding here, from the facts the store returns (src/store/read-models/stuck.ts).
 */

const MIN = 60_000;

/** A time as the sentences show it: ISO 8601 to the second, UTC. */
const at = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");

/** "45s", "23m", "2h 5m", "3d 4h": how long a condition has held. */
export function stuckFor(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  if (m < 24 * 60) return `${Math.floor(m / 60)}h${m % 60 ? ` ${m % 60}m` : ""}`;
  return `${Math.floor(m / 1440)}d${Math.floor((m % 1440) / 60) ? ` ${Math.floor((m % 1440) / 60)}h` : ""}`;
}

const threshold = (min: number) => stuckFor(min * MIN);

/**
 * One sentence: which rule fired and why, with how long it has held at `now` (epoch ms) against the rule's
 * threshold in `config`.
 */
export function stuckDetail(e: StuckEntry, now: number, config: StuckConfig): string {
  switch (e.rule) {
    case "no_progress": {
      const what = `${runKindWords(e.runKind)}${e.runName ? ` "${e.runName}"` : ""}`;
      const tail =
        e.wakeAt !== null
          ? `it was waiting to wake at ${at(e.wakeAt)} and has not`
          : e.confirmedAt !== null
            ? `it is still running in the agent (confirmed ${at(e.confirmedAt)}), so it is running and making no progress`
            : "no reconciliation has confirmed it is still alive";
      return `No progress: this ${what} has had no progress event since ${at(e.lastSeen)} (${stuckFor(now - e.lastSeen)}, threshold ${threshold(config.no_progress)}); ${tail}.`;
    }
    case "incident_no_attempt": {
      const attempts = e.attempts > 0 ? `after ${e.attempts} attempt${e.attempts === 1 ? "" : "s"}` : "with no attempt reported";
      const confirmed = e.confirmedAt !== null ? `; the agent still reported it as recovering at ${at(e.confirmedAt)}` : "";
      return `Recovery not attempted: this ${e.incidentKind} incident is open ${attempts} and nothing has happened since ${at(e.lastSeen)} (${stuckFor(now - e.lastSeen)}, threshold ${threshold(config.incident_no_attempt)})${confirmed}.`;
    }
    case "alarm_overdue":
      return `Alarm overdue: when the console asked at ${at(e.askedAt)}, the agent's alarm had been due since ${at(e.nextAlarmAt)} (${stuckFor(e.askedAt - e.nextAlarmAt)} late, grace ${threshold(config.alarm_overdue)}) and had not run; opening the agent page asks again.`;
    case "skipped_no_reason":
      return e.skipped === "recovery"
        ? `Skipped without a reason: the agent skipped recovering this ${e.incidentKind} incident at ${at(e.since)} and gave no reason (looking back ${threshold(config.skipped_no_reason)}).`
        : `Skipped without a reason: the SDK finished this chat turn as "skipped" at ${at(e.since)} and no reason came with it (looking back ${threshold(config.skipped_no_reason)}).`;
  }
}

/** A bulk target's "why it matched": the criteria it met in words, then its stuck finding (if any) as a sentence. */
export function bulkTargetWhy(t: BulkTarget, now: number, config: StuckConfig): string {
  const why = bulkMatchWords(t);
  return t.stuck ? `${why}: ${stuckDetail(t.stuck, now, config)}` : why;
}
