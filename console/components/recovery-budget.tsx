import type { IncidentBudget } from "../../src/store/read-models/budget";
import { againstWords, budgetSourceWords, forecastWords, timerWords } from "../budget-words";

/**
 * An open incident's recovery budget: attempts, work and interrupted attempts against the SDK's bounds, the time
 * left on its stable and no-progress timers, and when it is forecast to exhaust. The figures travel in data-*
 * attributes for checks; the words come from console/budget-words.ts.
 */
export function RecoveryBudget(props: { budget: IncidentBudget }) {
  const b = props.budget;
  const n = (v: number | null) => (v === null ? undefined : String(v));
  return (
    <section id="recovery-budget" data-testid="recovery-budget" data-source={b.source}>
      <h2>Recovery budget</h2>
      <p class="muted" data-testid="budget-source">
        {budgetSourceWords(b)}
      </p>
      {b.source === "none" ? null : (
        <dl class="facts">
          <dt>attempts</dt>
          <dd data-testid="budget-attempts" data-used={n(b.attempts.used)} data-limit={n(b.attempts.limit)}>
            {againstWords(b.attempts)}
          </dd>
          <dt>work</dt>
          <dd data-testid="budget-work" data-used={n(b.work.used)} data-limit={n(b.work.limit)}>
            {againstWords(b.work, "stream segments")}
          </dd>
          <dt>interrupted attempts</dt>
          <dd data-testid="budget-interrupted" data-used={n(b.interruptedAttempts.used)} data-limit={n(b.interruptedAttempts.limit)}>
            {againstWords(b.interruptedAttempts)}
          </dd>
          <dt>transient retries</dt>
          <dd data-testid="budget-transient" data-used={n(b.transientRetries.used)} data-limit={n(b.transientRetries.limit)}>
            {againstWords(b.transientRetries)}
          </dd>
          <dt>stable timer</dt>
          <dd data-testid="budget-stable-timer" data-left-ms={b.stableTimer ? String(b.stableTimer.leftMs) : undefined}>
            {timerWords(b.stableTimer)}
          </dd>
          <dt>no-progress timer</dt>
          <dd data-testid="budget-no-progress-timer" data-left-ms={b.noProgressTimer ? String(b.noProgressTimer.leftMs) : undefined}>
            {timerWords(b.noProgressTimer)}
          </dd>
          <dt>forecast</dt>
          <dd data-testid="budget-forecast" data-basis={b.forecast.basis} data-at={b.forecast.at === null ? undefined : String(b.forecast.at)}>
            {forecastWords(b.forecast, b.now)}
          </dd>
        </dl>
      )}
    </section>
  );
}
