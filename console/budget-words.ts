import type { Against, Forecast, ForecastScore, IncidentBudget, NotForecast, Respent, TimerLeft } from "../src/store/read-models/budget";
import { count, duration, iso } from "./format";

/** Recovery budgets in words: the store returns the figures (src/store/read-models/budget.ts), these say them. */

/** "3 of 10", "3 (no maximum)", "—" when unknown. */
export function againstWords(a: Against, unit = ""): string {
  if (a.used === null) return "—";
  const u = unit ? ` ${unit}` : "";
  return a.limit === null ? `${a.used}${u} (no maximum)` : `${a.used} of ${a.limit}${u}`;
}

/** "4m 10s left (until …)" or "passed 12s ago"; "—" when unknown. */
export function timerWords(t: TimerLeft): string {
  if (!t) return "—";
  return t.leftMs >= 0 ? `${duration(t.leftMs)} left (until ${iso(t.deadline)})` : `passed ${duration(-t.leftMs)} ago`;
}

const BOUND_WORDS = {
  max_attempts: "the attempt cap",
  no_progress: "the no-progress window",
  max_interrupted_attempts: "the interrupted-attempts cap",
} as const;

/** When it exhausts, from its own attempt rate; "unknown" below 2 attempts. */
export function forecastWords(f: Forecast, now: number): string {
  if (f.basis === "unknown") return "unknown (fewer than 2 attempts to measure a rate)";
  const when = f.at <= now ? "due now" : `in ${duration(f.at - now)}`;
  const unless = f.bound === "max_interrupted_attempts" ? "if its isolates keep dying at this rate" : "if it makes no progress";
  return `${when} (${iso(f.at)}), at one attempt every ${duration(f.intervalMs)}, by ${BOUND_WORDS[f.bound]}, ${unless}`;
}

const incidents = (n: number, what: string) => `${count(n)} open ${what} incident${n === 1 ? "" : "s"}`;

/**
 * Why the open incidents off the "likely to exhaust" list are not on it, one line per reason with any: a kind with no
 * budget is named, so an empty list never reads as "nothing can exhaust". Testids name the reason for checks.
 */
export function notForecastLines(n: NotForecast, minutes: number): { testId: string; n: number; text: string }[] {
  const lines = [
    {
      testId: "not-forecast-turn",
      n: n.noBudget.turn,
      text: `${incidents(n.noBudget.turn, "session turn")}: session turn incidents have no recovery budget: not forecast`,
    },
    {
      testId: "not-forecast-fiber",
      n: n.noBudget.fiber,
      text: `${incidents(n.noBudget.fiber, "fiber")}: fiber recovery has no maximum: not forecast`,
    },
    {
      testId: "not-forecast-no-rate",
      n: n.noRate,
      text: `${incidents(n.noRate, "chat")}: fewer than 2 attempts (or no known maximum): no rate to forecast from yet`,
    },
    {
      testId: "not-forecast-outside",
      n: n.outside,
      text: `${incidents(n.outside, "chat")}: forecast to exhaust later than ${minutes} min (or attempts stopped)`,
    },
  ];
  return lines.filter((l) => l.n > 0);
}

/** "forecast at T: exhaust by X — exhausted at Y, 12s later than forecast". */
export function forecastScoreWords(s: ForecastScore): { first: string; latest: string; outcome: string } {
  const said = (f: ForecastScore["first"]) =>
    `forecast at ${iso(f.madeAt)}: exhaust by ${iso(f.at)} (${duration(f.at - f.madeAt)} ahead), by ${BOUND_WORDS[f.bound]}`;
  const off =
    s.errorMs === null
      ? ""
      : s.errorMs === 0
        ? ", exactly as forecast"
        : `, ${duration(Math.abs(s.errorMs))} ${s.errorMs > 0 ? "later" : "earlier"} than forecast`;
  const outcome =
    s.outcome === "exhausted"
      ? `exhausted at ${iso(s.outcomeAt)}${off}`
      : `${s.outcome.replace(/_/g, " ")} at ${iso(s.outcomeAt)}: the forecast exhaustion did not happen`;
  return { first: said(s.first), latest: said(s.latest), outcome };
}

const SOURCE_WORDS: Record<IncidentBudget["source"], string> = {
  agent: "from the agent's own recovery record",
  events: "from the incident's events (the agent's record could not be read)",
  none: "the SDK sets no recovery budget for this kind of incident",
};

/** Where the budget's figures come from, with the agent's error code when it could not be asked. */
export function budgetSourceWords(b: IncidentBudget): string {
  if (b.source === "events" && b.agentError === "no_record") return "from the incident's events (the agent keeps no record of it now)";
  return `${SOURCE_WORDS[b.source]}${b.agentError && b.agentError !== "no_record" ? ` (${b.agentError})` : ""}`;
}

/** A spend alert's one line. */
export function respentSummary(r: Respent, threshold: number): string {
  const who = r.agentName === null ? `class ${r.agentClass}` : `${r.agentClass} / ${r.agentName}`;
  return `${who} re-spent ${count(r.tokens)} tokens on recovery in the last hour (threshold ${count(threshold)})`;
}
